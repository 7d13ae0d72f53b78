#!/usr/bin/env bash
# Codecs: imgcache's header probe and full decode against Pillow (the same C
# libraries underneath), and its thumbnails against vipsthumbnail, side by side.
#   scripts/bench-codecs.sh CODEC-BENCH-BINARY OUTPUT.md [COUNT]
# Uses the download benchmark's corpus (COUNT images, 10-200 KB, JPEG, PNG,
# WebP and GIF in equal parts), made if missing; appends a Markdown section.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
bench_arguments "$@"
work=$(mktemp -d /tmp/imgcache-codecs.XXXXXX)
trap 'rm -rf "$work"' EXIT
pillow="/usr/bin/python3 $root/scripts/pillow-codecs.py"
# Both sides must have done the whole corpus.
for mode in probe decode; do
    "$bin" "$mode" "$corpus" | grep -q "$count images, 0 failed"
    $pillow "$mode" "$corpus" | grep -q "$mode $count"
done
mkdir -p "$work/imgcache" "$work/vips"
"$bin" thumbnail "$corpus" 256x256 "$work/imgcache" | grep -q "$count images, 0 failed"
files="$work/files.txt"
find "$corpus" -type f ! -name '*.txt' | sort > "$files"
vips="xargs -a $files vipsthumbnail -s 256x256 -o '$work/vips/%s.jpg[Q=75]'"
eval "$vips"
[ "$(ls "$work/vips" | wc -l)" -eq "$count" ] || { echo "vipsthumbnail wrote $(ls "$work/vips" | wc -l) of $count" >&2; exit 1; }

hyperfine --style none --warmup 2 --runs 10 --export-markdown "$work/probe.md" \
    -n "imgcache probe" "$bin probe $corpus" -n "Pillow Image.open().size" "$pillow probe $corpus" >/dev/null
hyperfine --style none --warmup 1 --runs 3 --export-markdown "$work/decode.md" \
    -n "imgcache decode" "$bin decode $corpus" -n "Pillow Image.load() every frame" "$pillow decode $corpus" >/dev/null
hyperfine --style none --warmup 1 --runs 3 --export-markdown "$work/thumbnail.md" \
    -n "imgcache thumbnail" "$bin thumbnail $corpus 256x256 $work/imgcache" \
    -n "vipsthumbnail -s 256x256" "$vips" >/dev/null

{
    echo
    echo "## Codecs: header probe, full decode, thumbnails"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"). \`imgcache-codec-bench\` (a release build"
    echo "of imgcache's codec code alone, over a folder) against Pillow $(/usr/bin/python3 -c 'import PIL; print(PIL.__version__)')"
    echo "in one Python process, both on the same libpng, libjpeg-turbo, libwebp (and"
    echo "giflib for imgcache; Pillow reads GIF itself), page cache warm. hyperfine."
    echo
    echo "Header probe of every image (imgcache reads 64 KB, or a GIF whole to count"
    echo "its frames; Pillow's \`Image.open(...).size\` reads what it needs). Target: 5x Pillow."
    echo
    cat "$work/probe.md"
    echo
    echo "Full decode of every image, every frame, to RGBA (imgcache) or the image's"
    echo "mode (Pillow's \`Image.load()\` on each frame). Target: 1.2x Pillow."
    echo
    cat "$work/decode.md"
    echo
    echo "Thumbnails of every image into 256x256, written as JPEG quality 75:"
    echo "imgcache decodes fully, averages areas and encodes; vipsthumbnail (libvips"
    echo "$(vips --version 2>/dev/null | cut -d- -f2), one process for all files) shrinks while loading where the format"
    echo "allows it (JPEG DCT scaling). The ratio is reported:"
    echo
    cat "$work/thumbnail.md"
} >> "$output"
tail -n 30 "$output"
