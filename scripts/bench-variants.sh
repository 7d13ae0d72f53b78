#!/usr/bin/env bash
# Thumbnails of a warmed list: imgcache prefetch --thumbnail against
# vipsthumbnail and img2dataset, side by side; and the peak memory of one
# thumbnail of a big JPEG, WebP and PNG against vipsthumbnail's.
#   scripts/bench-variants.sh BINARY OUTPUT.md [COUNT] [IMG2DATASET] [BASELINE]
# BASELINE, a binary that decodes in its own process (built by
# scripts/build-baseline.sh from the commit before decode workers), runs the
# same prefetch in the same alternation: what containment costs.
# Serves COUNT (default 2000) generated images from nginx on loopback, then
# alternately runs, five times each, each into a folder of /dev/shm never used
# before (tmpfs: the per-image work cannot hide behind the disk):
#   imgcache prefetch -j 6 --thumbnail 256x256 --format jpeg LIST
#       (downloads, checks and stores each image, then its thumbnail)
#   xargs -P 2 vipsthumbnail -s 256x256 FILES    (the files already on disk)
#   img2dataset --resize_mode keep_ratio --image_size 256, 2 processes x 32
#       threads (downloads over the same loopback server), when IMG2DATASET
#       names its executable
# and appends a Markdown section to OUTPUT.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
bench_arguments "$@"
img2dataset=${4:-}
baseline=${5:-}
bench_serve_corpus 18700
shm=$(mktemp -d /dev/shm/imgcache-bench.XXXXXX)
trap 'rm -rf "$shm"; stop_sample_server' EXIT
ls "$corpus" | grep -v summary | sed "s|^|$corpus/|" > "$work/files.txt"

run=0
expect_count() {
    local found
    found=$(find "$1" -type f -name "$2" | wc -l)
    [ "$found" -ge "$count" ] || { echo "$3 made $found of $count" >&2; exit 1; }
}
run_imgcache() {
    run=$((run + 1))
    timed "$bin" --cache-dir "$shm/imgcache-$run" -q prefetch -j 6 --thumbnail 256x256 --format jpeg "$work/urls.txt"
    # Every original, and a thumbnail of each that is not already one (a JPEG inside the box is its own).
    # prefetch exits 0 only when every URL was answered.
    [ "$(find "$shm/imgcache-$run" -type f ! -name lock ! -name urls ! -name stats ! -name 'tmp.*' | wc -l)" -gt "$count" ] \
        || { echo "imgcache stored too few files" >&2; exit 1; }
}
run_baseline() {
    run=$((run + 1))
    timed "$baseline" --cache-dir "$shm/baseline-$run" -q prefetch -j 6 --thumbnail 256x256 --format jpeg "$work/urls.txt"
}
run_vips() {
    run=$((run + 1))
    mkdir -p "$shm/vips-$run"
    timed xargs -P 2 -n 50 -a "$work/files.txt" vipsthumbnail -s 256x256 -o "$shm/vips-$run/%s.jpg[Q=85]"
    expect_count "$shm/vips-$run" '*.jpg' vipsthumbnail
}
run_img2dataset() {
    run=$((run + 1))
    # Its chatter goes to a log; the timing line to the caller.
    I2D_LOG="$work/i2d.log" timed sh -c 'exec "$@" > "$I2D_LOG" 2>&1' sh \
        "$img2dataset" --url_list "$work/urls.txt" --output_folder "$shm/i2d-$run" --output_format files \
        --resize_mode keep_ratio --image_size 256 --processes_count 2 --thread_count 32 --timeout 10 \
        --enable_wandb False --compute_hash None --disallowed_header_directives '[]'
    expect_count "$shm/i2d-$run" '*.jpg' img2dataset
}

run_imgcache > /dev/null   # warm the page cache and nginx's open-file cache
run_vips > /dev/null
[ -n "$baseline" ] && run_baseline > /dev/null
for round in 1 2 3 4 5 6 7; do
    # The two builds side by side, each first in turn, so that neither always follows
    # img2dataset (whose processes and tmpfs writes linger a moment after it exits).
    if [ $((round % 2)) = 1 ] || [ -z "$baseline" ]; then
        run_imgcache >> "$work/imgcache.runs"
        [ -n "$baseline" ] && run_baseline >> "$work/baseline.runs"
    else
        run_baseline >> "$work/baseline.runs"
        run_imgcache >> "$work/imgcache.runs"
    fi
    run_vips >> "$work/vips.runs"
    [ -n "$img2dataset" ] && run_img2dataset >> "$work/i2d.runs"
    # Each run's folder goes once measured: tmpfs holding every run's images would weigh on the next.
    rm -rf "$shm"/*
done

# Peak memory for one 256-pixel thumbnail of a big image, served from a second nginx.
big="$root/.build/bench-big-images"
if [ ! -f "$big/done" ]; then
    mkdir -p "$big"
    /usr/bin/python3 - "$big" <<'EOF'
import sys
from PIL import Image
folder = sys.argv[1]
Image.MAX_IMAGE_PIXELS = None
def picture(width, height):
    noise = Image.effect_noise((width, height), 40)
    gradient = Image.linear_gradient("L").resize((width, height))
    return Image.merge("RGB", (noise, gradient, gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
picture(9248, 6936).save(f"{folder}/big-64mp.jpg", quality=90)
picture(7360, 4912).save(f"{folder}/big-36mp.webp", quality=80)
picture(4000, 4000).save(f"{folder}/big-16mp.png", compress_level=6)
EOF
    touch "$big/done"
fi
port=$("$root/scripts/free-port.sh" 18800)
"$root/scripts/nginx-serve.sh" "$big" "$work/nginx-big" "$port" &
big_server=$!
trap 'kill $big_server 2>/dev/null; rm -rf "$shm"; stop_sample_server' EXIT
wait_for_port "$port"
for name in big-64mp.jpg big-36mp.webp big-16mp.png; do
    for round in 1 2 3 4 5; do
        run=$((run + 1))
        "$bin" --cache-dir "$shm/big-cache-$run" -q fetch "http://127.0.0.1:$port/$name" > /dev/null
        # The path fetch prints is not the timing line.
        timed sh -c 'exec "$@" > /dev/null' sh "$bin" --cache-dir "$shm/big-cache-$run" -q fetch --thumbnail 256x256 \
            --format jpeg "http://127.0.0.1:$port/$name" >> "$work/$name.imgcache"
        mkdir -p "$shm/big-vips-$run"
        timed vipsthumbnail -s 256x256 -o "$shm/big-vips-$run/%s.jpg[Q=85]" "$big/$name" >> "$work/$name.vips"
        rm -rf "$shm/big-cache-$run" "$shm/big-vips-$run"
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
column() { awk -v c="$2" '{ print $c }' "$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
{
    echo
    echo "## Thumbnails of a list: prefetch --thumbnail"
    echo
    echo "$(cat "$corpus/summary.txt"), served by nginx on loopback. Seven runs of each, one"
    echo "after the other, each into a new folder on tmpfs (/dev/shm), medians. imgcache"
    echo "downloads every image, checks it, stores it and makes its 256-pixel JPEG thumbnail"
    echo "(\`prefetch -j 6 --thumbnail 256x256 --format jpeg\`); vipsthumbnail (libvips $(vips --version | awk '{print $1}' | cut -d- -f2))"
    echo "reads the same files from disk, two processes (\`xargs -P 2\`)."
    [ -n "$img2dataset" ] && echo "img2dataset 1.47 downloads from the same server (2 processes x 32 threads, \`--resize_mode keep_ratio --image_size 256\`)."
    echo
    echo "| Command | Wall | CPU (user+sys) | Peak RSS | imgcache / it |"
    echo "|---|---:|---:|---:|---:|"
    mine=$(column "$work/imgcache.runs" 1)
    echo "| imgcache prefetch --thumbnail | ${mine} s | $(column "$work/imgcache.runs" 2) s | $(( $(column "$work/imgcache.runs" 3) / 1024 )) MB | |"
    vips=$(column "$work/vips.runs" 1)
    echo "| vipsthumbnail (xargs -P 2) | ${vips} s | $(column "$work/vips.runs" 2) s | $(( $(column "$work/vips.runs" 3) / 1024 )) MB | $(ratio "$mine" "$vips")x |"
    if [ -n "$baseline" ]; then
        base=$(column "$work/baseline.runs" 1)
        echo "| the same, decoding in its own process (before decode workers) | ${base} s | $(column "$work/baseline.runs" 2) s | $(( $(column "$work/baseline.runs" 3) / 1024 )) MB | $(ratio "$mine" "$base")x |"
    fi
    if [ -n "$img2dataset" ]; then
        i2d=$(column "$work/i2d.runs" 1)
        echo "| img2dataset | ${i2d} s | $(column "$work/i2d.runs" 2) s | $(( $(column "$work/i2d.runs" 3) / 1024 )) MB | $(ratio "$mine" "$i2d")x |"
    fi
    echo
    echo "Target: imgcache at most 0.5x vipsthumbnail and 0.2x img2dataset, and within 5% of the build that"
    echo "decodes in its own process (every thumbnail is made in a confined decode worker now; Peak RSS is the"
    echo "largest process's, a worker's). imgcache does more than either"
    echo "(it downloads and keeps every original too), making thumbnails on one thread more than the cores (at most -j),"
    echo "each driving its decode worker, while the manager downloads."
    echo
    echo "## Peak memory of one thumbnail of a big image"
    echo
    echo "\`fetch --thumbnail 256x256 --format jpeg\` of a cached image against \`vipsthumbnail -s 256x256\`"
    echo "of the same file: peak RSS (medians of five), and imgcache's as a multiple of vipsthumbnail's."
    echo
    echo "| Image | imgcache | vipsthumbnail | Ratio | imgcache wall | vipsthumbnail wall |"
    echo "|---|---:|---:|---:|---:|---:|"
    for name in big-64mp.jpg big-36mp.webp big-16mp.png; do
        a=$(column "$work/$name.imgcache" 3); b=$(column "$work/$name.vips" 3)
        echo "| $name | $((a / 1024)) MB | $((b / 1024)) MB | $(ratio "$a" "$b")x | $(column "$work/$name.imgcache" 1) s | $(column "$work/$name.vips" 1) s |"
    done
    echo
    echo "Target: within 1.5x vipsthumbnail's. A JPEG is decoded through libjpeg-turbo's DCT scaling, a WebP"
    echo "through libwebp's scaled decoding, a PNG shrunk by a whole factor row by row as libpng reads it."
} >> "$output"
