#!/usr/bin/env bash
# A site build: imgcache fetch --html --output-dir, cold and warm.
#   scripts/bench-sites.sh BINARY OUTPUT.md [COUNT]
# Serves COUNT (default 200) generated images from nginx on loopback and, on
# tmpfs (/dev/shm), in seven alternating rounds:
#   cold:  a new cache and a new site folder: every image downloaded, its
#          320x and 640x variants made in AVIF, WebP and JPEG, copied, the page written
#   warm:  the same build again (every answer a hit, every copy untouched)
#   against, on the same warm cache: fetch -i of the list with the same
#          variants (paths only), and a plain fetch -i (no variants).
# Every run's output is checked. Appends a Markdown section with the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
bench_arguments "$1" "$2" "${3:-200}"
bench_serve_corpus 18950
shm=$(mktemp -d /dev/shm/imgcache-sites.XXXXXX)
trap 'rm -rf "$shm"; stop_sample_server' EXIT
variants=(--thumbnail 320x,640x --format avif,webp,jpeg)
site=(--html --output-dir "$shm/site/img" --site-root "$shm/site" --sizes '(min-width: 700px) 640px, 100vw' --placeholder color)

run=0
run_cold() {
    run=$((run + 1))
    timed sh -c 'out="$0"; exec "$@" > "$out"' "$work/cold-$run.html" "$bin" --cache-dir "$shm/cold-$run" -q fetch -i "$work/urls.txt" \
        "${variants[@]}" --html --output-dir "$shm/cold-site-$run/img" --site-root "$shm/cold-site-$run" --placeholder color
    [ "$(grep -c '^<picture>' "$work/cold-$run.html")" -eq "$count" ] || { echo "cold: not every image has its picture" >&2; exit 1; }
    rm -rf "$shm/cold-$run" "$shm/cold-site-$run"
}
# The warm cache and site every warm run reads.
"$bin" --cache-dir "$shm/warm" -q fetch -i "$work/urls.txt" "${variants[@]}" "${site[@]}" > "$work/page.html"
stamp() { find "$shm/site/img" -type f -printf '%i %T@ %p\n' | sort; }
stamp > "$work/stamps"
run_warm() {
    timed sh -c 'out="$0"; exec "$@" > "$out"' "$work/warm.html" "$bin" --cache-dir "$shm/warm" -q fetch -i "$work/urls.txt" "${variants[@]}" "${site[@]}"
    cmp -s "$work/warm.html" "$work/page.html" || { echo "warm: another page" >&2; exit 1; }
}
run_paths() {
    timed sh -c 'exec "$@" > /dev/null' sh "$bin" --cache-dir "$shm/warm" -q fetch -i "$work/urls.txt" "${variants[@]}"
}
run_plain() {
    timed sh -c 'exec "$@" > /dev/null' sh "$bin" --cache-dir "$shm/warm" -q fetch -i "$work/urls.txt"
}
for round in 1 2 3 4 5 6 7; do
    run_cold >> "$work/cold.runs"
    run_warm >> "$work/warm.runs"
    run_paths >> "$work/paths.runs"
    run_plain >> "$work/plain.runs"
done
stamp | cmp -s - "$work/stamps" || { echo "warm: a copy was rewritten" >&2; exit 1; }

median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cold=$(median "$work/cold.runs" 1); warm=$(median "$work/warm.runs" 1)
paths=$(median "$work/paths.runs" 1); plain=$(median "$work/plain.runs" 1)
copies=$(find "$shm/site/img" -type f | wc -l)
{
    echo
    echo "## A site build: fetch --html --output-dir ($count images)"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"), from nginx on loopback; caches and sites on"
    echo "tmpfs. Each image in 320x and 640x, AVIF, WebP and JPEG, with its dominant colour"
    echo "(\`--placeholder color\`): $copies copies and a \`<picture>\` per image. Medians of 7"
    echo "alternating rounds (wall seconds; CPU seconds; peak RSS)."
    echo
    echo "| Build | Time | CPU | Peak RSS |"
    echo "|:---|---:|---:|---:|"
    echo "| cold: download, decode once, 6 variants and a placeholder each, copies, page | $cold s | $(median "$work/cold.runs" 2) s | $(( $(median "$work/cold.runs" 3) / 1024 )) MB |"
    echo "| warm: the same build, all hits, every copy untouched, the same page | $warm s | $(median "$work/warm.runs" 2) s | $(( $(median "$work/warm.runs" 3) / 1024 )) MB |"
    echo "| \`fetch -i\` with the same variants (paths only), warm | $paths s | $(median "$work/paths.runs" 2) s | $(( $(median "$work/paths.runs" 3) / 1024 )) MB |"
    echo "| plain \`fetch -i\` (no variants), warm | $plain s | $(median "$work/plain.runs" 2) s | $(( $(median "$work/plain.runs" 3) / 1024 )) MB |"
    echo
    echo "The warm build takes $(ratio "$warm" "$paths")x the warm \`fetch -i\` of the same variants (target:"
    echo "within 2x) and $(ratio "$warm" "$plain")x a plain warm \`fetch -i\`, which looks up one file per image"
    echo "where the build looks up seven. On top of the lookups the build hashes every copy's"
    echo "bytes (SHA-256, for the name that changes when they do: $(du -sm "$shm/site/img" | cut -f1) MB here), checks that"
    echo "each copy of that name and size is there, and writes the markup."
} >> "$output"
tail -n 16 "$output"
