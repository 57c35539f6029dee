#!/usr/bin/env bash
# Builds a Debian package of the analyzer: the binary in /usr/bin, the
# systemd unit (its ExecStart pointed there), /etc/default/analyzer as a
# conffile, the journald message catalog (journalctl --update-catalog runs
# on install), and the Alloy, Prometheus and Grafana examples under
# /usr/share/doc/llmfleet-analyzer/examples.
# usage: scripts/deb.sh BINARY VERSION OUT.deb
set -euo pipefail
bin=$1 version=$2 out=$3
cd "$(dirname "$0")/.."
# Debian versions start with a digit: a bare commit becomes 0~git<commit>.
case "$version" in [0-9]*) debver=$version ;; *) debver="0~git${version//[^A-Za-z0-9.+~]/.}" ;; esac
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
doc=$stage/usr/share/doc/llmfleet-analyzer
install -D -m 0755 "$bin" "$stage/usr/bin/analyzer"
install -d "$stage/lib/systemd/system" "$stage/usr/lib/systemd/catalog" "$stage/etc/default" "$stage/DEBIAN" "$doc/examples"
sed -e 's|^# /etc/systemd/system/analyzer.service|# /lib/systemd/system/analyzer.service|' \
	-e 's|/usr/local/bin/analyzer|/usr/bin/analyzer|g' deploy/systemd/analyzer.service >"$stage/lib/systemd/system/analyzer.service"
install -m 0644 deploy/systemd/analyzer.catalog "$stage/usr/lib/systemd/catalog/analyzer.catalog"
install -m 0644 deploy/systemd/analyzer.env "$stage/etc/default/analyzer"
cp -r deploy/alloy deploy/prometheus deploy/grafana "$doc/examples/"
install -m 0644 README.md "$doc/README.md"
install -m 0644 LICENSE "$doc/copyright"
find "$doc" -type d -exec chmod 0755 {} + && find "$doc" -type f -exec chmod 0644 {} +
cat >"$stage/DEBIAN/control" <<CONTROL
Package: llmfleet-analyzer
Version: $debver
Architecture: $arch
Maintainer: LLM fleet analyzer maintainers <analyzer@example.invalid>
Depends: libc6, systemd, procps
Section: admin
Priority: optional
Description: incident analyzer for LLM serving fleets
 Reads the journal of hosts that run inference engines as systemd units,
 cuts it into boot attempts, names each attempt's verdict, and serves a web
 UI, a JSON API and Prometheus metrics.
CONTROL
echo /etc/default/analyzer >"$stage/DEBIAN/conffiles"
cat >"$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
	journalctl --update-catalog || true
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
fi
POSTINST
cat >"$stage/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = purge ]; then
	journalctl --update-catalog || true
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
fi
POSTRM
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
dpkg-deb --root-owner-group --build "$stage" "$out" >/dev/null
echo "$out"
