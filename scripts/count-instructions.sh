#!/usr/bin/env bash
# Work counted in instructions (valgrind's callgrind: the same count run after
# run, where wall time on a shared machine is not):
#   scripts/count-instructions.sh BINARY [OUTPUT.md] [--check]
# Serves 200 generated images from nginx on loopback and counts the user-space
# instructions, children included, of:
#   a cold `prefetch -j 6` of the 200 URLs, and of one URL
#   the same prefetch again (every URL a hit), and of one URL
#   `curl --parallel --parallel-max 6` of the 200 URLs, and of one
#   one `fetch` hit, `help`, and a Swift hello world (static standard library)
# A prefetch's cost per URL is what 200 URLs cost beyond one, over 199: the
# start-up every run pays is left out, for curl as for imgcache.
# Prints the table; with OUTPUT.md appends it there as a section; with
# --check exits 1 when a count passes its limit (the targets, with a margin for
# the counts that move with timing), naming it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=""
check=no
for argument in "${@:2}"; do
    case $argument in
        --check) check=yes ;;
        *) output=$argument ;;
    esac
done
count=200
# The limits --check holds: the targets, with room for what moves with timing
# (curl's event loop, how a cold run's downloads interleave).
cold_limit=2.9     # cold prefetch per URL, against curl --parallel's
warm_limit=40000   # warm prefetch, instructions per URL
hit_limit=1.6      # one fetch hit, against the hello world
help_limit=1.45    # help, against the hello world
source "$root/scripts/bench-corpus.sh"
corpus=$(bench_corpus "$root" "$count")
bench_serve_corpus 18700
# User-space instructions do not depend on the file system: a temporary folder will do.
shm=$(mktemp -d "${TMPDIR:-/tmp}/imgcache-count.XXXXXX")
trap 'rm -rf "$shm"; stop_sample_server' EXIT
head -n 1 "$work/urls.txt" > "$work/one.txt"

# valgrind 3.19 cannot read the DWARF 5 a release build carries: a copy
# without it keeps the symbol table, so profiles still name functions.
objcopy --strip-debug "$bin" "$work/imgcache"
echo 'print("hello, world")' > "$work/hello.swift"
swiftc -O -static-stdlib "$work/hello.swift" -o "$work/hello"

# instructions COMMAND...: the instructions of COMMAND and every process it starts.
instructions() {
    rm -f "$work"/callgrind.*
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/callgrind.%p" "$@" \
        > /dev/null 2> "$work/valgrind.log" || { cat "$work/valgrind.log" >&2; exit 1; }
    grep -h '^summary:' "$work"/callgrind.* | awk '{ total += $2 } END { print total }'
}
curl_config() {
    while read -r url; do printf 'url = "%s"\noutput = "%s/%s"\n' "$url" "$2" "${url##*/}"; done < "$1"
}
run=0
prefetch() {
    run=$((run + 1))
    instructions "$work/imgcache" --cache-dir "$shm/cache-$1" -q prefetch -j 6 "$2"
}
curl_parallel() {
    run=$((run + 1))
    mkdir -p "$shm/curl-$run"
    curl_config "$1" "$shm/curl-$run" > "$work/curl-$run.cfg"
    instructions curl --parallel --parallel-max 6 -sf -K "$work/curl-$run.cfg"
}

cold_all=$(prefetch all "$work/urls.txt")
cold_one=$(prefetch one "$work/one.txt")
warm_all=$(prefetch all "$work/urls.txt")
warm_one=$(prefetch one "$work/one.txt")
curl_all=$(curl_parallel "$work/urls.txt")
curl_one=$(curl_parallel "$work/one.txt")
hit=$(instructions "$work/imgcache" --cache-dir "$shm/cache-one" -q fetch "$(cat "$work/one.txt")")
help=$(instructions "$work/imgcache" help)
hello=$(instructions "$work/hello")

table=$(python3 - "$cold_all" "$cold_one" "$warm_all" "$warm_one" "$curl_all" "$curl_one" "$hit" "$help" "$hello" "$count" <<'PY'
import sys
cold_all, cold_one, warm_all, warm_one, curl_all, curl_one, hit, help, hello, count = map(int, sys.argv[1:])
per = lambda a, b: (a - b) / (count - 1)
cold, warm, curl = per(cold_all, cold_one), per(warm_all, warm_one), per(curl_all, curl_one)
print("| Run | Instructions | Per URL | Against |")
print("|:---|---:|---:|---:|")
print(f"| cold prefetch, {count} URLs | {cold_all:,} | {cold:,.0f} | {cold / curl:.2f}x curl |")
print(f"| `curl --parallel`, {count} URLs | {curl_all:,} | {curl:,.0f} | 1.00x |")
print(f"| warm prefetch, {count} URLs | {warm_all:,} | {warm:,.0f} | |")
print(f"| one `fetch` hit | {hit:,} | | {hit / hello:.2f}x hello world |")
print(f"| `help` | {help:,} | | {help / hello:.2f}x hello world |")
print(f"| Swift hello world | {hello:,} | | 1.00x |")
print(f"@ {cold:.0f} {curl:.0f} {warm:.0f} {hit / hello:.3f} {help / hello:.3f}")
PY
)
echo "$table" | grep -v '^@'
if [ -n "$output" ]; then
    {
        echo
        echo "## Work in instructions"
        echo
        echo "Counted by \`scripts/count-instructions.sh\` ($(date -u +%F)): valgrind's callgrind, user-space"
        echo "instructions of each process and its children, the same from run to run. Per URL"
        echo "is what $count URLs cost beyond one, over $((count - 1)): the start-up every run pays"
        echo "is left out, for curl as for imgcache."
        echo
        echo "$table" | grep -v '^@'
    } >> "$output"
fi
if [ "$check" = yes ]; then
    read -r _ cold curl warm hit_ratio help_ratio <<< "$(echo "$table" | grep '^@')"
    python3 - "$cold" "$curl" "$warm" "$hit_ratio" "$help_ratio" "$cold_limit" "$warm_limit" "$hit_limit" "$help_limit" <<'PY'
import sys
cold, curl, warm, hit, help, cold_limit, warm_limit, hit_limit, help_limit = map(float, sys.argv[1:])
limits = [("cold prefetch per URL, against curl's", cold / curl, cold_limit),
          ("warm prefetch per URL", warm, warm_limit),
          ("one hit, against the hello world", hit, hit_limit),
          ("help, against the hello world", help, help_limit)]
failed = [f"{name}: {value:,.2f} is over {limit:,.2f}" for name, value, limit in limits if value > limit]
for line in failed:
    print("instruction count over its limit:", line, file=sys.stderr)
sys.exit(1 if failed else 0)
PY
fi
