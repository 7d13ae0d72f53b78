#!/usr/bin/env bash
# The main job on the sample images in Samples/, with no internet: serve them
# from nginx on loopback, prefetch them into a temporary cache (progress bar on
# a terminal), show cache-info, fetch one again (a cache hit), show how a
# failed URL is remembered, and what clean would do; then stop the server.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/sample-server.sh"
start_sample_server "$root/Samples"

export IMGCACHE_DIR="$server_work/cache"
base=$server_base
list="$server_work/urls.txt"
{
    echo "# the samples, one repeated, and one that does not exist"
    for file in "$root"/Samples/*; do echo "$base/$(basename "$file")"; done
    echo "$base/$(ls "$root/Samples" | head -1)"
    echo "$base/missing.png"
} > "$list"
echo "Serving $(ls "$root/Samples" | wc -l) sample images at $base; cache in $IMGCACHE_DIR"
echo
echo "== The list"
cat "$list"
echo
echo "== imgcache prefetch: downloaded, checked and stored, up to 6 at once"
"$bin" prefetch "$list" || echo "(exit status $?: one URL failed)"
echo
echo "== cache-info"
"$bin" cache-info
echo
echo "== A second prefetch: every image is a hit; the 404 is remembered and not asked again"
"$bin" prefetch "$list" || echo "(exit status $?)"
echo
echo "== fetch -i: one line per URL of the list, in its order (an empty path for the one that failed)"
"$bin" fetch -i "$list" --with-url || echo "(exit status $?)"
echo
echo "== fetch prints the path of the plain image file, usable by any program (cache \"disk\")"
"$bin" --json fetch "$base/waves.jpg"
path=$("$bin" fetch "$base/waves.jpg")
file "$path" 2>/dev/null || ls -l "$path"
echo
echo "== Cache contents (each image's metadata is its user.imgcache attribute)"
find "$IMGCACHE_DIR" -type f ! -name 'tmp.*' | sort | sed "s|$IMGCACHE_DIR/||"
echo
echo "== clean --dry-run --max-size 100k: what trimming to 100 kB would remove"
"$bin" clean --dry-run --max-size 100k
echo
echo "Requests nginx served: $(wc -l < "$server_work/nginx/access.log") (hits and remembered failures never reached it)"
