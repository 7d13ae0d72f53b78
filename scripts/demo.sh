#!/usr/bin/env bash
# The main job on the sample images in Samples/, with no internet: serve them
# from nginx on loopback, fetch each into a temporary cache (a download), fetch
# each again (a cache hit), show the cache, stop the server.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/imgcache-demo.XXXXXX)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

port=$("$root/scripts/free-port.sh")
"$root/scripts/nginx-serve.sh" "$root/Samples" "$work/nginx" "$port" &
server_pid=$!
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
done

export IMGCACHE_DIR="$work/cache"
base="http://127.0.0.1:$port"
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
echo "== Cache contents"
find "$IMGCACHE_DIR" -type f ! -path '*/.tmp/*' | sort | sed "s|$IMGCACHE_DIR/||"
echo
echo "Requests nginx served: $(wc -l < "$work/nginx/access.log") (the hits never reached it)"
