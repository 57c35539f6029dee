#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing:
#   build: libsystemd-dev (sd-journal headers for ingest/journald, cgo)
#   test:  systemd-journal-remote (real journal files), systemd (journald),
#          chromium (the browser test of the web UI), prometheus (promtool),
#          xz-utils (the real xz writes what the xz reader is tested on)
#   bench: the test packages, jq and time (the baselines and peak memory)
# usage: scripts/install-deps.sh build|test|bench
set -euo pipefail
want=(libsystemd-dev)
if [ "${1:-build}" = test ] || [ "${1:-build}" = bench ]; then
  want+=(systemd-journal-remote systemd chromium prometheus xz-utils)
fi
if [ "${1:-build}" = bench ]; then
  want+=(jq time)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install as root: apt-get install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
