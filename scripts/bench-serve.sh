#!/usr/bin/env bash
# `imgcache serve` against nginx sending the same variant files from disk (the floor), with wrk
# on loopback, and its first requests (download + resize + encode) for 2,000 distinct images.
#   scripts/bench-serve.sh BINARY OUTPUT.md [IMAGES]
# IMAGES (default 2000) JPEG photos of 640x427 are made with Pillow and served by nginx as the
# origin. First requests: every image's 256-px fill as JPEG (download, decode, resize, encode),
# then as WebP (made from the originals now cached), asked once each by 16 clients at a time
# (xargs + curl). Appends a Markdown section to OUTPUT. Cached answers: wrk with 1, 16 and 256 connections for 3 s,
# each URL of the set in turn (a Lua script), against imgcache serve (its memory tier holding
# them) and against nginx serving the very bytes imgcache answered, run in turn 5 times:
# medians of requests/s and of p99 latency. Memory: the server's peak RSS (VmHWM) at the end.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=$2
count=${3:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/sample-server.sh"
work=$(mktemp -d /tmp/imgcache-bench-serve.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p "$work/origin" "$work/static/jpeg" "$work/static/webp" "$work/nginx-origin" "$work/nginx-static"
python3 - "$work/origin" "$count" <<'PY'
import random, sys
from PIL import Image, ImageDraw
folder, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
for index in range(count):
    image = Image.new("RGB", (640, 427), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        box = sorted(rng.randrange(640) for _ in range(2)), sorted(rng.randrange(427) for _ in range(2))
        draw.ellipse((box[0][0], box[1][0], box[0][1], box[1][1]), fill=tuple(rng.randrange(256) for _ in range(3)))
    image.save(f"{folder}/{index}.jpg", quality=85)
PY
origin_port=$("$root/scripts/free-port.sh")
"$root/scripts/nginx-serve.sh" "$work/origin" "$work/nginx-origin" "$origin_port" >/dev/null 2>&1 &
pids+=($!)
wait_for_port "$origin_port"

serve_port=$("$root/scripts/free-port.sh")
IMGCACHE_DIR="$work/cache" "$bin" serve --allow-unsigned --allow-private-sources --listen "127.0.0.1:$serve_port" \
    --memory-cache 256M --access-log off 2>"$work/serve.log" &
serve_pid=$!
pids+=($serve_pid)
wait_for_port "$serve_port"

for format in jpeg webp; do
    for index in $(seq 0 $((count - 1))); do
        echo "/_/rs:fill:256:256/plain/http://127.0.0.1:$origin_port/$index.jpg@$format"
    done > "$work/paths-$format"
done

# First requests, 16 at a time; each answer kept, for nginx to send the same bytes.
first() {
    local format=$1 started ended
    started=$(date +%s.%N)
    awk -v base="http://127.0.0.1:$serve_port" -v out="$work/static/$format" \
        '{ n = split($0, p, "/"); name = p[n]; sub(/@.*/, "", name); print base $0 " -o " out "/" name }' "$work/paths-$format" |
        xargs -P 16 -L 1 curl -sf
    ended=$(date +%s.%N)
    python3 -c "import sys; print(f'{int(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2])):.0f}')" "$count" "$started" "$ended"
}
first_jpeg=$(first jpeg)
first_webp=$(first webp)
made=$(find "$work/static" -type f | wc -l)

static_port=$("$root/scripts/free-port.sh")
"$root/scripts/nginx-serve.sh" "$work/static" "$work/nginx-static" "$static_port" >/dev/null 2>&1 &
pids+=($!)
wait_for_port "$static_port"
awk '{ n = split($0, p, "/"); name = p[n]; sub(/@.*/, "", name); print "/jpeg/" name }' "$work/paths-jpeg" > "$work/static-paths"

cat > "$work/rotate.lua" <<'LUA'
local paths, index = {}, 0
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
request = function()
    index = index % #paths + 1
    return wrk.format("GET", paths[index], {["Accept"] = "image/jpeg"})
end
done = function(summary, latency, requests)
    io.write(string.format("RESULT %.1f %.3f\n", summary.requests / (summary.duration / 1e6), latency:percentile(99) / 1000))
end
LUA

measure() {
    local connections=$1 port=$2 paths=$3
    local threads=$(( connections < 2 ? 1 : 2 ))
    PATHS=$paths wrk -t "$threads" -c "$connections" -d 3s -s "$work/rotate.lua" "http://127.0.0.1:$port" 2>/dev/null | awk '/^RESULT/ { print $2, $3 }'
}
table="| Connections | imgcache serve [req/s] | nginx static [req/s] | Ratio | imgcache p99 [ms] | nginx p99 [ms] |\n|---:|---:|---:|---:|---:|---:|\n"
# Warm the memory tier and the page cache once.
measure 16 "$serve_port" "$work/paths-jpeg" >/dev/null
measure 16 "$static_port" "$work/static-paths" >/dev/null
for connections in 1 16 256; do
    : > "$work/serve-$connections"; : > "$work/static-$connections"
    for round in 1 2 3 4 5; do
        measure "$connections" "$serve_port" "$work/paths-jpeg" >> "$work/serve-$connections"
        measure "$connections" "$static_port" "$work/static-paths" >> "$work/static-$connections"
    done
    row=$(python3 - "$work/serve-$connections" "$work/static-$connections" "$connections" <<'PY'
import statistics, sys
serve = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
static = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
s_rps, n_rps = statistics.median(r[0] for r in serve), statistics.median(r[0] for r in static)
s_p99, n_p99 = statistics.median(r[1] for r in serve), statistics.median(r[1] for r in static)
print(f"| {sys.argv[3]} | {s_rps:.0f} | {n_rps:.0f} | {s_rps / n_rps:.2f} | {s_p99:.2f} | {n_p99:.2f} |")
PY
)
    table+="$row\n"
done
peak=$(awk '/VmHWM/ { print $2 }' "/proc/$serve_pid/status" 2>/dev/null || echo 0)
serve_rss=$(( peak / 1024 ))

{
    echo "## imgcache serve"
    echo
    echo "$count JPEG photos of 640x427 on nginx as the origin; \`imgcache serve --memory-cache 256M\` on loopback, 2 cores shared with the clients (\`scripts/bench-serve.sh\`)."
    echo
    echo "First requests (download, decode in a worker, resize, encode, store), 16 clients at a time, each image once:"
    echo
    echo "| Variant | Requests/s |"
    echo "|:---|---:|"
    echo "| 256-px fill, JPEG: download, decode, resize, encode | $first_jpeg |"
    echo "| 256-px fill, WebP: from the original now cached | $first_webp |"
    echo
    echo "Cached variants (the $count JPEG ones, each URL in turn), against nginx sending the same $made files from disk; wrk for 3 s, medians of 5 runs in turn:"
    echo
    printf '%b' "$table"
    echo
    echo "Peak memory of the server at the end: $serve_rss MB (memory tier budget 256 MB)."
} > "$work/section.md"
cat "$work/section.md" >> "$output"
cat "$work/section.md"
