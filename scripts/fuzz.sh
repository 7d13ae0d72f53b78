#!/usr/bin/env bash
# Builds the libFuzzer binary (ImgCacheCore and the C shim with AddressSanitizer
# and coverage) and runs each target for SECONDS (default 60), starting from the
# committed corpus in Tests/Fixtures/fuzz/<target>/ (seeded with the fixtures).
# A crash, leak or timeout stops that target and its input is copied to
# Tests/Fixtures/fuzz/crashers/<target>/, which the test suite replays.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(sniff png jpeg webp gif)
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
echo "building the fuzzer (ImgCacheCore with -sanitize=fuzzer,address)"
"$bin_dir/swiftc" -sanitize=fuzzer,address -parse-as-library -g -O -module-name ImgCacheCore \
    -Xcc -fmodule-map-file="$build/module.modulemap" -I "$root/Sources/CImgCacheShims/include" \
    $(find "$root/Sources/ImgCacheCore" -name '*.swift' | sort) "$root/Fuzz/FuzzTargets.swift" \
    "${objects[@]}" -ldl -o "$build/imgcache-fuzz" 2>&1 | grep -v "Cannot export local symbol" || true

status=0
for target in "${targets[@]}"; do
    corpus="$root/Tests/Fixtures/fuzz/$target"
    crashers="$root/Tests/Fixtures/fuzz/crashers/$target"
    mkdir -p "$corpus" "$crashers"
    work=$(mktemp -d)
    echo "== $target: ${seconds}s"
    if ! (cd "$work" && IMGCACHE_FUZZ_TARGET=$target "$build/imgcache-fuzz" -max_total_time="$seconds" \
            -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 "$work" "$corpus" 2>&1 | tail -n 12); then
        status=1
    fi
    for found in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$found" ] || continue
        cp "$found" "$crashers/"
        echo "kept $crashers/$(basename "$found")"
        status=1
    done
    rm -rf "$work"
done
exit $status
