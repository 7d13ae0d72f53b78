#!/usr/bin/env bash
# Maintenance on a big namespace, appended to a Markdown file (Docs/PERFORMANCE.md).
#   scripts/bench-cache.sh BINARY OUTPUT.md ENTRIES
# `imgcache cache-info` against `du -sb` and `imgcache list` against `find -printf`
# on the same namespace (hyperfine, warm),
# and `imgcache clean` removing half of the entries (those unused for 30 days)
# against `find -mtime +7 -delete` removing the same files, each on a fresh copy.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=$2
count=$3
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "$root/.build/bench-cache.XXXXXX")
trap 'rm -rf "$work"' EXIT

make_namespace() { /usr/bin/python3 "$root/scripts/make-namespace.py" "$1/default" "$count" 0.5; sync; }

make_namespace "$work/info"
hyperfine -N --warmup 2 --runs 10 --export-markdown "$work/info.md" \
    -n "imgcache cache-info" "$bin --cache-dir $work/info cache-info" \
    -n "du -sb" "du -sb $work/info/default" >/dev/null
hyperfine -N --warmup 2 --runs 10 --export-markdown "$work/list.md" \
    -n "imgcache list" "$bin --cache-dir $work/info -q list" \
    -n "find -printf" "find $work/info/default -type f -name *.jpg -printf '%T@ %s %p\\n'" >/dev/null
rm -rf "$work/info"

# Alternate the two, each on a namespace made just before it.
: > "$work/clean.runs"; : > "$work/find.runs"
for round in 1 2; do
    make_namespace "$work/c$round"
    /usr/bin/time -f "%e" -a -o "$work/clean.runs" "$bin" -q --cache-dir "$work/c$round" clean --max-age 7d
    make_namespace "$work/f$round"
    /usr/bin/time -f "%e" -a -o "$work/find.runs" find "$work/f$round/default" -type f -mtime +7 -delete
    left_clean=$(find "$work/c$round/default" -name '*.jpg' | wc -l)
    left_find=$(find "$work/f$round/default" -name '*.jpg' | wc -l)
    [ "$left_clean" = "$left_find" ] || { echo "clean left $left_clean entries, find $left_find" >&2; exit 1; }
    rm -rf "$work/c$round" "$work/f$round"
done
mean() { awk '{ s += $1 } END { printf "%.2f", s / NR }' "$1"; }

{
    echo
    echo "## Maintenance on a namespace of $count entries"
    echo
    echo "A namespace written in imgcache's format by \`scripts/make-namespace.py\` (2 KB"
    echo "entries with their metadata attribute; half last used 30 days ago)."
    echo
    echo "\`imgcache cache-info\` (counts entries and sums their sizes and blocks, finds the"
    echo "oldest and newest use, reads the limits and failed URLs) against \`du -sb\` on the"
    echo "same folder, page cache warm. Target: faster than du. hyperfine, 10 runs:"
    echo
    cat "$work/info.md"
    echo
    echo "\`imgcache list\` (a line per entry: last use, size, format, pixels and URL, read"
    echo "from each entry's attribute, a shard at a time) against \`find -printf\` printing"
    echo "each file's time, size and path, page cache warm. hyperfine, 10 runs:"
    echo
    cat "$work/list.md"
    echo
    echo "\`imgcache clean --max-age 7d\` (scan, plan, then per shard: lock, re-check each"
    echo "victim, unlink) against \`find -type f -mtime +7 -delete\` removing the same"
    echo "$((count / 2)) files, each on a freshly written namespace; mean of 2 alternating runs"
    echo "(GNU time). Target: within 1.2x of find:"
    echo
    echo "| Command | Wall [s] |"
    echo "|:---|---:|"
    echo "| imgcache clean | $(mean "$work/clean.runs") |"
    echo "| find -delete | $(mean "$work/find.runs") |"
    echo
    echo "Both spend nearly all their time in the kernel unlinking; on the ext4 volume"
    echo "these were taken on (mounted with \`discard\`), freeing each file's data and"
    echo "attribute blocks dominates."
} >> "$output"
tail -n 24 "$output"
