#!/usr/bin/env bash
# What a misbehaving remote store costs a prefetch, against the origin alone.
#   scripts/bench-remote-faults.sh BINARY OUTPUT.md [COUNT]
# Serves COUNT (default 500) generated images from nginx on loopback (the
# origin) and runs, in five alternating rounds, `prefetch -j 6` of all of them
# into a new, empty cache root (so no store is remembered as down):
#   from the origin only
#   with --remote to a store that accepts connections and never answers,
#   one that answers every object with a web page, one that takes 0.5 s for
#   every answer (scripts/misbehaving-store.py), and a closed port;
# all with the default timeouts. Every image must be downloaded (checked in the
# summary). Appends a Markdown section with the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
[ $# -ge 3 ] || set -- "$1" "$2" 500
bench_arguments "$@"
bench_serve_corpus 18800

declare -A stores
pids=()
for mode in hang garbage slow; do
    port=$("$root/scripts/free-port.sh" 18850)
    python3 "$root/scripts/misbehaving-store.py" "$mode" "$port" &
    pids+=($!)
    for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
    stores[$mode]="http://127.0.0.1:$port/store"
done
closed=$("$root/scripts/free-port.sh" 18890)
stores[refused]="http://127.0.0.1:$closed/store"
stop_stores() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    stop_sample_server
}
trap stop_stores EXIT

run=0
# One prefetch into a new cache root: prints "wall stderr-lines remote-errors".
prefetch() {
    run=$((run + 1))
    /usr/bin/time -f "%e" -o "$work/time" "$bin" --cache-dir "$work/machine-$run" --json prefetch -j 6 "$@" \
        "$work/urls.txt" 2> "$work/stderr" | tail -n 1 > "$work/summary"
    grep -q "\"downloaded\":$count," "$work/summary" || { echo "run $run: not all downloaded: $(cat "$work/summary")" >&2; exit 1; }
    local errors
    errors=$(sed -n 's/.*"remote_errors":\([0-9]*\).*/\1/p' "$work/summary")
    echo "$(cat "$work/time") $(grep -c . "$work/stderr" || true) ${errors:-0}"
}
for round in 1 2 3 4 5; do
    prefetch >> "$work/origin.runs"
    for mode in hang garbage slow refused; do
        prefetch --remote "${stores[$mode]}" >> "$work/$mode.runs"
    done
done

median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
origin=$(median "$work/origin.runs" 1)
row() {
    local name=$1 runs=$2
    awk -v n="$name" -v w="$(median "$runs" 1)" -v l="$(median "$runs" 2)" -v e="$(median "$runs" 3)" -v o="$origin" \
        'BEGIN { printf "| %s | %.2f | %+.2f | %d | %d |\n", n, w, w - o, l, e }'
}
{
    echo
    echo "## A misbehaving remote store: $count images"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"). \`imgcache prefetch -j 6\` of every image"
    echo "from nginx on loopback, into a new, empty cache root each run, with the"
    echo "default timeouts (5 s); the stores are scripts/misbehaving-store.py."
    echo "Medians of 5 alternating rounds."
    echo
    echo "| Remote store | Wall [s] | Cost over the origin alone [s] | Lines on stderr | remote_errors |"
    echo "|:---|---:|---:|---:|---:|"
    row "none (the origin alone)" "$work/origin.runs"
    row "accepts, never answers" "$work/hang.runs"
    row "answers every object with a web page" "$work/garbage.runs"
    row "answers everything after 0.5 s" "$work/slow.runs"
    row "a closed port" "$work/refused.runs"
    echo
    echo "A store given up costs about one timeout (5 s) once; its queued requests"
    echo "are dropped and nothing more is sent to it. Garbage is given up after 3 bad"
    echo "objects in a row, a slow store once 8 lookups show it slower than the origin."
} >> "$output"
tail -n 16 "$output"
