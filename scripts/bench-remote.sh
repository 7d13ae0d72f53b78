#!/usr/bin/env bash
# Warming a second machine from a remote store, against warming it from the origin.
#   scripts/bench-remote.sh BINARY OUTPUT.md [COUNT]
# Serves COUNT (default 2000) generated images from nginx on loopback (the
# origin), with nginx's WebDAV store beside it, a redis-server and moto's S3
# server. A first machine (a cache root) fills each store once; then five
# alternating rounds each warm a new, empty machine:
#   from the origin only                      (prefetch -j 6 LIST)
#   from the WebDAV store, Redis, and S3      (prefetch -j 6 --remote STORE LIST)
# every image must come from where it is asked (the summary is checked), and
# each run writes into a folder never used before. Appends a Markdown section.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
bench_arguments "$@"
bench_serve_corpus 18700

redis_port=$("$root/scripts/free-port.sh" 18750)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/redis.log" --daemonize yes --pidfile "$work/redis.pid"
s3_port=$("$root/scripts/free-port.sh" 18760)
python3 -m moto.server -H 127.0.0.1 -p "$s3_port" > "$work/moto.log" 2>&1 &
moto_pid=$!
stop_stores() {
    [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
    kill "$moto_pid" 2>/dev/null || true
    stop_sample_server
}
trap stop_stores EXIT
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break
    sleep 0.05
done
# moto checks no signatures unless asked to: the bucket is made with a plain PUT.
curl -fsS -X PUT "http://127.0.0.1:$s3_port/imgcache-bench" > /dev/null
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench

declare -A stores=(
    [webdav]="$server_base/store"
    [redis]="redis://127.0.0.1:$redis_port"
    [s3]="s3://imgcache-bench/images?endpoint=http://127.0.0.1:$s3_port&region=us-east-1"
)
run=0
# One warm-up of a new machine: prints "wall user+sys peakKB" after checking
# that all COUNT images came from `expect` (downloaded or remote).
warm_machine() {
    local expect=$1; shift
    run=$((run + 1))
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin" --cache-dir "$work/machine-$run" --json prefetch -j 6 "$@" \
        "$work/urls.txt" | tail -n 1 > "$work/summary"
    grep -q "\"$expect\":$count," "$work/summary" || { echo "run $run: not all $expect: $(cat "$work/summary")" >&2; exit 1; }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}
for name in webdav redis s3; do
    warm_machine downloaded --remote "${stores[$name]}" > /dev/null   # the first machine fills the store
done
for round in 1 2 3 4 5; do
    warm_machine downloaded >> "$work/origin.runs"
    for name in webdav redis s3; do
        warm_machine remote --remote "${stores[$name]}" >> "$work/$name.runs"
    done
done

median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f-%.2f", v[1], v[NR] }'; }
origin=$(median "$work/origin.runs" 1)
row() {
    local name=$1 runs=$2 wall
    wall=$(median "$runs" 1)
    awk -v n="$name" -v w="$wall" -v s="$(spread "$runs" 1)" -v c="$(median "$runs" 2)" -v r="$(median "$runs" 3)" \
        -v o="$origin" -v k="$count" \
        'BEGIN { printf "| %s | %.2f | %s | %.2f | %.0f | %.1f | %.2fx |\n", n, w, s, c, k / w, r / 1024, w / o }'
}
{
    echo
    echo "## Warming a second machine from a remote store: $count images"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"). A first machine (cache root) filled each"
    echo "store; each run then warms a new, empty machine with \`imgcache prefetch -j 6\`,"
    echo "from the origin (nginx on loopback) or with \`--remote\` from a store, every"
    echo "image checked (length, SHA-256, signature, header) and stored as a download is."
    echo "Stores: nginx's WebDAV module (the origin's nginx), Debian's redis-server 7,"
    echo "and moto's S3 server (Python; a stand-in: its speed is not a real S3's)."
    echo "Medians of 5 alternating rounds, each into a folder never used before."
    echo
    echo "| Warmed from | Wall [s] | Spread [s] | CPU user+sys [s] | Images/s | Peak RSS [MB] | Wall / origin |"
    echo "|:---|---:|---:|---:|---:|---:|---:|"
    row "the origin (nginx)" "$work/origin.runs"
    row "WebDAV store (nginx)" "$work/webdav.runs"
    row "Redis (one connection, pipelined)" "$work/redis.runs"
    row "S3 (moto_server)" "$work/s3.runs"
    echo
    echo "On loopback the origin is as near as a store, so these ratios are the"
    echo "tier's own cost: an object's header and SHA-256 on top of what a download"
    echo "costs. Across a network the origin is usually the far end: a store in the"
    echo "same rack saves its round trips and its bandwidth."
} >> "$output"
tail -n 14 "$output"
