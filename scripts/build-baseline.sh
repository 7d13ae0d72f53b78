#!/usr/bin/env bash
# Builds imgcache as it was at COMMIT (a release binary, as `make build` makes
# it) beside this checkout, for benchmarks that set a change against what came
# before it, alternated in one run. Prints the binary's path.
#   scripts/build-baseline.sh COMMIT
# The source goes to .build-baseline/src (a git worktree), the build to
# .build-baseline/build; both are reused while COMMIT stays the same.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$1
base="$root/.build-baseline"
mkdir -p "$base"
if [ "$(cat "$base/commit" 2>/dev/null)" != "$commit" ]; then
    rm -rf "$base/src" "$base/build"
    git -C "$root" worktree prune
    git -C "$root" worktree add --detach "$base/src" "$commit" >&2
    echo "$commit" > "$base/commit"
fi
(cd "$base/src" && swift build -c release --static-swift-stdlib --disable-local-rpath --product imgcache \
    --scratch-path "$base/build" >&2)
echo "$base/build/release/imgcache"
