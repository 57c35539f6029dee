#!/usr/bin/env bash
# make bench: throughput of `analyzer replay` on a large journal built from the
# night fixture, next to two baselines measured in the same run on the same file
# (jq selecting the lines the rules look for, grep -E for the same literals), then
# the latency from appending a fatal engine line to the journal until the
# analyzer's root-cause note is readable in it (needs root, journald and
# systemd-journal-remote; skipped otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${BENCH_COPIES:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
big=$work/bench.json
python3 scripts/bench-journal.py examples/dankserver-night-ladder.journal.json "$copies" "$big"
lines=$(wc -l < "$big")
mb=$(( $(stat -c %s "$big") / 1048576 ))
# The literals the OOM, death and readiness rules prefilter on.
literals='out of memory|OutOfMemoryError|EngineCore failed to start|Constraints violated|NCCL error|Application startup complete|Deactivated successfully'

# Every command runs on one core (the target is per core; Go would otherwise
# collect garbage on the second one), when taskset is there.
one=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then one=(taskset -c 0); fi

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
secs() { # run a command 3 times, print the best wall time in seconds
  local best=999999
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    "$@" > "$work/out"  # not /dev/null: GNU grep stops at the first match there
    e=$(date +%s.%N)
    best=$(awk -v a="$s" -v b="$e" -v m="$best" 'BEGIN { d = b - a; printf "%.6f", (d < m ? d : m) }')
  done
  echo "$best"
}
replay() { rm -f "$work/b.db"*; "${one[@]}" bin/analyzer replay --db "$work/b.db" "$big"; }
explain() { "${one[@]}" bin/analyzer explain --format json "$big"; }
jqsel() { "${one[@]}" jq -c --arg re "$literals" 'select((.MESSAGE // "" | if type == "array" then implode else . end) | test($re))' "$big"; }
grepsel() { "${one[@]}" grep -E -c "$literals" "$big" || true; }

cores="all cores"; [ ${#one[@]} -gt 0 ] && cores="one core (taskset -c 0)"
echo "journal: $lines lines, ${mb} MiB ($copies copies of the night ladder); best of 3 runs each, on $cores"
t_replay=$(secs replay); t_explain=$(secs explain); t_jq=$(secs jqsel); t_grep=$(secs grepsel)
row() { printf "  %-34s %8.3f s %10.0f lines/s\n" "$1" "$2" "$(calc "$lines / $2")"; }
row "analyzer replay (into SQLite)" "$t_replay"
row "analyzer explain (no database)" "$t_explain"
row "jq select on the rule literals" "$t_jq"
row "grep -E -c on the rule literals" "$t_grep"
printf "  replay speed vs jq: %.2fx   vs grep: %.3fx (above 1 = replay is faster)\n" "$(calc "$t_jq / $t_replay")" "$(calc "$t_grep / $t_replay")"

if [ "$(id -u)" = 0 ] && [ -x /lib/systemd/systemd-journal-remote ] && [ -x /lib/systemd/systemd-journald ]; then
  go build -o "$work/analyzer-bench" ./cmd/analyzer-bench
  "$work/analyzer-bench" -analyzer bin/analyzer -runs "${BENCH_NOTE_RUNS:-100}"
else
  echo "note latency: skipped (needs root, systemd-journald and systemd-journal-remote)"
fi
