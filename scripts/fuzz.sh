#!/usr/bin/env bash
# Builds the libFuzzer binary (ImgCacheCore and the C shim with AddressSanitizer
# and coverage) and runs each target for SECONDS (default 60), starting from the
# committed corpus in Tests/Fixtures/fuzz/<target>/ (seeded with the fixtures).
# A crash, leak or timeout stops that target and its input is copied to
# Tests/Fixtures/fuzz/crashers/<target>/, which the test suite replays.
# With --build-only (as `make test` runs it) it builds the fuzzer without
# optimisation and runs each target once over its corpus, so the targets
# cannot fall behind the code they drive.
#   scripts/fuzz.sh [--build-only] [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(cli sniff png jpeg webp gif avif heic heif jxl tiff bmp ico svg files)
bin_dir=${SWIFT_DIR:-/opt/swift/usr/bin}
build="$root/.build/fuzz"
mkdir -p "$build"

cat > "$build/module.modulemap" <<MAP
module CImgCacheShims {
    header "$root/Sources/CImgCacheShims/include/imgcache_shims.h"
    export *
}
MAP
objects=()
for source in "$root"/Sources/CImgCacheShims/*.c; do
    object="$build/$(basename "$source" .c).o"
    "$bin_dir/clang" -c -g -O1 -fsanitize=fuzzer-no-link,address -I "$root/Sources/CImgCacheShims/include" \
        "$source" -o "$object"
    objects+=("$object")
done
# The CLI's parser joins the same module (its import of ImgCacheCore dropped).
rm -rf "$build/cli" && mkdir -p "$build/cli"
for source in $(find "$root/Sources/ImgCacheCLI" -name '*.swift'); do
    sed '/^import ImgCacheCore$/d' "$source" > "$build/cli/$(basename "$source")"
done
optimisation=-O
[ $build_only = 1 ] && optimisation=-Onone
echo "building the fuzzer (ImgCacheCore and the CLI parser with -sanitize=fuzzer,address, $optimisation)"
if ! "$bin_dir/swiftc" -sanitize=fuzzer,address -parse-as-library -g $optimisation -module-name ImgCacheCore -package-name imgcache \
        -Xcc -fmodule-map-file="$build/module.modulemap" -I "$root/Sources/CImgCacheShims/include" \
        $(find "$root/Sources/ImgCacheCore" -name '*.swift' | sort) "$build"/cli/*.swift "$root/Fuzz/FuzzTargets.swift" \
        "${objects[@]}" -ldl -o "$build/imgcache-fuzz" > "$build/compile.log" 2>&1; then
    grep -v "Cannot export local symbol" "$build/compile.log" >&2
    echo "the fuzzer does not build" >&2
    exit 1
fi

if [ $build_only = 1 ]; then
    for target in "${targets[@]}"; do
        # -runs=0: each input of the corpus once, then stop. Leaks are left to
        # real runs: unoptimised, the command table's one-time statics look like one.
        if ! ASAN_OPTIONS=detect_leaks=0 IMGCACHE_FUZZ_TARGET=$target "$build/imgcache-fuzz" -runs=0 -rss_limit_mb=2048 \
                -artifact_prefix="$build/" \
                "$root/Tests/Fixtures/fuzz/$target" > "$build/$target.log" 2>&1; then
            tail -n 30 "$build/$target.log" >&2
            echo "fuzz target $target failed on its own corpus" >&2
            exit 1
        fi
        echo "fuzz target $target: $(ls "$root/Tests/Fixtures/fuzz/$target" | wc -l) corpus inputs run"
    done
    exit 0
fi

status=0
report="$build/report.md"
printf '| Target | Seconds | Runs | Findings |\n|:---|---:|---:|---:|\n' > "$report"
for target in "${targets[@]}"; do
    corpus="$root/Tests/Fixtures/fuzz/$target"
    crashers="$root/Tests/Fixtures/fuzz/crashers/$target"
    mkdir -p "$corpus" "$crashers"
    work=$(mktemp -d)
    echo "== $target: ${seconds}s"
    if ! (cd "$work" && IMGCACHE_FUZZ_TARGET=$target "$build/imgcache-fuzz" -max_total_time="$seconds" \
            -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 "$work" "$corpus" > "$work/log" 2>&1); then
        status=1
    fi
    tail -n 12 "$work/log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
    findings=$(ls "$work" | grep -cE '^(crash|leak|timeout|oom)-' || true)
    for found in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$found" ] || continue
        cp "$found" "$crashers/"
        echo "kept $crashers/$(basename "$found")"
        status=1
    done
    printf '| %s | %s | %s | %s |\n' "$target" "$seconds" "${runs:-?}" "$findings" >> "$report"
    rm -rf "$work"
done
{
    echo "# Fuzzing results"
    echo
    echo "Last \`make fuzz\` ($(date -u +%Y-%m-%d), FUZZ_SECONDS=$seconds): libFuzzer with AddressSanitizer over the"
    echo "command-line parser, ImgCacheCore and the C shim (scripts/fuzz.sh). The C libraries are loaded with dlopen"
    echo "and not instrumented: crashes in them are caught, but coverage guides only imgcache's"
    echo "own code. Findings are kept in Tests/Fixtures/fuzz/crashers/ and replayed by make test."
    echo
    cat "$report"
} > "$root/Docs/FUZZ.md"
exit $status
