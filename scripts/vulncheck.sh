#!/bin/sh
# govulncheck ./... against the Go vulnerability database (vuln.go.dev);
# when that is unreachable, against a database built from the OSV files of
# the golang.org/x/vulndb module (served by the module proxy) with the
# module's own cmd/indexdb. Exit status: govulncheck's (3 = a reachable
# vulnerability; the Go toolchain's own are the machine's to update).
set -eu
GO=${GO:-go}
VULN=${VULN:-v1.9.0}
VULNDB=${VULNDB:-latest}
work=${TMPDIR:-/tmp}/analyzer-vulncheck
mkdir -p "$work/mod"
GOBIN="$work/bin" GOFLAGS= $GO install golang.org/x/vuln/cmd/govulncheck@"$VULN"
status=0
"$work/bin/govulncheck" ./... >"$work/out" 2>&1 || status=$?
if ! grep -q "fetching vulnerabilities" "$work/out"; then
	cat "$work/out"
	exit $status
fi
{
	[ -f "$work/mod/go.mod" ] || (cd "$work/mod" && $GO mod init vulncheck >/dev/null 2>&1)
	dir=$(cd "$work/mod" && GOFLAGS=-mod=mod $GO mod download -json golang.org/x/vulndb@"$VULNDB" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	rm -rf "$work/vulndb-src" "$work/db"
	cp -r "$dir" "$work/vulndb-src" && chmod -R u+w "$work/vulndb-src"
	(cd "$work/vulndb-src" && GOFLAGS=-mod=mod $GO build -o "$work/bin/indexdb" ./cmd/indexdb)
	"$work/bin/indexdb" -vulns "$work/vulndb-src/data/osv" -out "$work/db"
	echo "vulncheck: vuln.go.dev unreachable; using golang.org/x/vulndb@$VULNDB ($dir)" >&2
}
exec "$work/bin/govulncheck" -db "file://$work/db" ./...
