#!/usr/bin/env bash
# The main job on the sample images in Samples/, with no internet: serve them
# from nginx on loopback, fetch each into a temporary cache (a download), fetch
# each again (a cache hit), show the cache and what clean would do, stop the server.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/sample-server.sh"
start_sample_server "$root/Samples"

export IMGCACHE_DIR="$server_work/cache"
base=$server_base
echo "Serving $(ls "$root/Samples" | wc -l) sample images at $base; cache in $IMGCACHE_DIR"
echo
echo "== First fetch of each sample: downloaded, checked, stored"
for file in "$root"/Samples/*; do
    "$bin" --json fetch "$base/$(basename "$file")"
done
echo
echo "== Second fetch: every one is a cache hit (cache \"disk\")"
for file in "$root"/Samples/*; do
    "$bin" --json fetch "$base/$(basename "$file")"
done
echo
echo "== A hit prints the path of the plain image file, usable by any program"
path=$("$bin" fetch "$base/waves.jpg")
echo "$path"
file "$path" 2>/dev/null || ls -l "$path"
echo
echo "== Errors are one line each, with a documented exit status"
"$bin" fetch "$base/missing.png" || echo "(exit status $?)"
echo
echo "== Cache contents (each image's metadata is its user.imgcache attribute)"
find "$IMGCACHE_DIR" -type f ! -name 'tmp.*' | sort | sed "s|$IMGCACHE_DIR/||"
echo
echo "== cache-info"
"$bin" cache-info
echo
echo "== clean --dry-run --max-size 100k: what trimming to 100 kB would remove"
"$bin" clean --dry-run --max-size 100k
echo
echo "Requests nginx served: $(wc -l < "$server_work/nginx/access.log") (the hits never reached it)"
