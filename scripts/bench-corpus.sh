# Sourced by the benchmarks: the corpus of COUNT generated images they share.
#   corpus=$(bench_corpus ROOT COUNT)   made once in ROOT/.build/bench-corpus-COUNT
bench_corpus() {
    local corpus="$1/.build/bench-corpus-$2"
    if [ ! -f "$corpus/summary.txt" ]; then
        rm -rf "$corpus"
        mkdir -p "$corpus"
        /usr/bin/python3 "$1/scripts/make-corpus.py" "$corpus" "$2" > "$corpus/summary.txt.partial"
        mv "$corpus/summary.txt.partial" "$corpus/summary.txt"
    fi
    echo "$corpus"
}
