# Sourced by the benchmarks (after setting root): the corpus of COUNT generated
# images they share, their common arguments, and the corpus served by nginx.
#   corpus=$(bench_corpus ROOT COUNT)   made once in ROOT/.build/bench-corpus-COUNT
bench_corpus() {
    local corpus="$1/.build/bench-corpus-$2"
    if [ ! -f "$corpus/summary.txt" ]; then
        rm -rf "$corpus"
        mkdir -p "$corpus"
        local python
        for python in python3 /usr/bin/python3; do "$python" -c 'import PIL' 2>/dev/null && break; done
        # (&&: errexit does not reach into the $(...) this runs in)
        "$python" "$1/scripts/make-corpus.py" "$corpus" "$2" > "$corpus/summary.txt.partial" &&
            mv "$corpus/summary.txt.partial" "$corpus/summary.txt"
    fi
    echo "$corpus"
}

# bench_arguments BINARY OUTPUT.md [COUNT]: sets bin (an absolute path), output,
# count (default 2000) and corpus (made if missing).
bench_arguments() {
    bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    output=$2
    count=${3:-2000}
    corpus=$(bench_corpus "$root" "$count")
}

# bench_serve_corpus PORT: serves the corpus from nginx on a free port from PORT
# for the rest of the script; sets work and server_base, and lists every image's
# URL in $work/urls.txt.
bench_serve_corpus() {
    source "$root/scripts/sample-server.sh"
    SAMPLE_SERVER_PORT=$1 start_sample_server "$corpus"
    work=$server_work
    ls "$corpus" | grep -v summary | sed "s|^|$server_base/|" > "$work/urls.txt"
}

# timed COMMAND...: runs it and prints "wall user+sys peakKB" (GNU time), in $work.
timed() {
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@"
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}
