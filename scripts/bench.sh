#!/usr/bin/env bash
# Benchmarks on loopback, written to a Markdown file (Docs/PERFORMANCE.md).
#   scripts/bench.sh BINARY OUTPUT.md
# Section "cache hit": a warm `imgcache fetch URL` (prints the path) against
# `wget -q -O /dev/null URL` downloading the same image from nginx, with hyperfine.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=$2
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/sample-server.sh"
SAMPLE_SERVER_PORT=18500 start_sample_server "$root/Samples"
work=$server_work

url="$server_base/waves.jpg"
export IMGCACHE_DIR="$work/cache"
"$bin" fetch "$url" >/dev/null
hyperfine -N --warmup 50 --runs 1000 --export-markdown "$work/hit.md" --export-json "$work/hit.json" \
    -n "imgcache fetch (hit)" "$bin fetch $url" \
    -n "wget -q -O /dev/null (download)" "wget -q -O /dev/null $url" \
    -n "imgcache help (start-up alone)" "$bin help" >/dev/null
ratio=$(python3 -c "import json; r = json.load(open('$work/hit.json'))['results']; print('%.2f' % (r[0]['median'] / r[1]['median']))")
# System calls of one hit, and of start-up alone (perf stat).
count_calls() {
    perf stat -x, -e 'syscalls:sys_enter_*' -o "$work/perf" "$@" > /dev/null 2>&1 || true
    awk -F, '/sys_enter/ { s += $1 } END { print s }' "$work/perf"
}
hit_calls=$(count_calls "$bin" fetch "$url")
startup_calls=$(count_calls "$bin" help)

{
    echo "# imgcache performance"
    echo
    echo "Produced by \`make bench\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -srm))."
    echo "Servers run on 127.0.0.1; no internet is involved."
    echo
    echo "## Cache hit vs downloading with wget"
    echo
    echo "A warm \`imgcache fetch URL\` (looks the entry up, checks it, marks it used, prints"
    echo "its path) against \`wget\` fetching the same 18 KB JPEG from nginx on loopback,"
    echo "and imgcache's start-up alone (\`help\`). Target: the hit takes at most 0.6x"
    echo "wget's time. hyperfine, 50 warm-up runs, 1000 runs each:"
    echo
    cat "$work/hit.md"
    echo
    echo "Hit / wget (medians): ${ratio}x. System calls: $hit_calls for the whole hit, $startup_calls of them"
    echo "for start-up and exit (\`help\`)."
    echo
    echo "Start-up is most of a hit: the dynamic loader (libc, libm, libstdc++ that the"
    echo "statically linked Swift runtime needs) and about 250 page faults of a 16 MB"
    echo "binary. Linking the executable without position independence saves 0.5 ms but"
    echo "gives up address-space randomisation for it, so it is not done."
} > "$output"
cat "$output"
