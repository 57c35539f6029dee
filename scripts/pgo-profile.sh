#!/usr/bin/env bash
# make pgo: writes cmd/analyzer/default.pgo, the CPU profile `go build`
# optimizes the analyzer with (profile-guided optimization, go.dev/doc/pgo:
# -pgo=auto, the default, takes default.pgo of the main package's
# directory). The profile is the work the speed targets are measured on,
# `explain` and `replay` of the team's two generators (SHARED_TOOLS,
# ../shared/tools): serving-journal.py (vLLM in podman serving traffic) and
# night-journal.py (a boot ladder every night), 300k and 200k lines, read
# as JSON and as the journal file systemd-journal-remote writes. Each
# command's samples count by the time it takes, so neither journal is
# weighted by hand. The binary profiled is built without a profile
# (-pgo=off): default.pgo never learns from itself.
#
# Run it again when the hot path changes (the tracker, judge, rules or
# ingest); a stale profile still builds, it only optimizes less (Go
# matches the profile's functions by name and line offset).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED_TOOLS:-../shared/tools}
for f in serving-journal.py night-journal.py; do
  [ -f "$shared/$f" ] || { echo "pgo: needs $shared/$f (set SHARED_TOOLS)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/analyzer-pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -pgo=off -tags "${TAGS:-nomsgpack}" -o "$work/analyzer" ./cmd/analyzer
python3 "$shared/serving-journal.py" "$work/serving.json" 300000 > /dev/null
python3 "$shared/night-journal.py" examples/dankserver-night-ladder.journal.json 230 "$work/night.json" > /dev/null
profiles=()
for kind in serving night; do
  in=$work/$kind.json
  "$work/analyzer" explain --cpuprofile "$work/$kind-explain.prof" --format json "$in" > /dev/null
  "$work/analyzer" replay --cpuprofile "$work/$kind-replay.prof" --db "$work/$kind.db" "$in" > /dev/null
  profiles+=("$work/$kind-explain.prof" "$work/$kind-replay.prof")
  # The same entries as the journal file systemd-journal-remote writes,
  # which make bench reads too.
  if [ -x /lib/systemd/systemd-journal-remote ]; then
    python3 scripts/json2export.py "$in" > "$work/$kind.export"
    /lib/systemd/systemd-journal-remote -o "$work/$kind.journal" "$work/$kind.export" 2> /dev/null
    rm -f "$work/$kind.export" "$work/$kind.db"*
    "$work/analyzer" explain --cpuprofile "$work/$kind-jexplain.prof" --format json "$work/$kind"*.journal > /dev/null
    "$work/analyzer" replay --cpuprofile "$work/$kind-jreplay.prof" --db "$work/$kind.db" "$work/$kind"*.journal > /dev/null
    profiles+=("$work/$kind-jexplain.prof" "$work/$kind-jreplay.prof")
  fi
done
go tool pprof -proto "${profiles[@]}" > "$work/default.pgo" 2> /dev/null
mv "$work/default.pgo" cmd/analyzer/default.pgo
echo "wrote cmd/analyzer/default.pgo ($(stat -c %s cmd/analyzer/default.pgo) bytes) from ${#profiles[@]} profiles"
