#!/usr/bin/env bash
# Installs a package built by `make deb` into a clean Debian 12 root
# (debootstrap minbase, as root; about three minutes and Debian's mirror the
# first time) and checks, inside it: apt installs it with its dependencies,
# `systemd-analyze verify` passes on the unit, `analyzer --version` answers.
# usage: scripts/deb-install-check.sh PACKAGE.deb [ROOT]
set -euo pipefail
deb=$(realpath "$1") root=${2:-/tmp/analyzer-debroot}
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || echo http://deb.debian.org/debian)
if [ ! -x "$root/usr/bin/apt-get" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
	debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -f /etc/ssl/certs/ca-certificates.crt ] && mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
cp "$deb" "$root/tmp/analyzer.deb"
mounted=()
for m in proc sys dev; do mount --bind "/$m" "$root/$m" && mounted+=("$root/$m"); done
trap 'for m in "${mounted[@]}"; do umount -l "$m"; done' EXIT
chroot "$root" bash -euc '
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/analyzer.deb >/dev/null
	systemd-analyze verify /lib/systemd/system/analyzer.service
	analyzer --version
	dpkg -s llmfleet-analyzer | sed -n "s/^Status: //p"'
