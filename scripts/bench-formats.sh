#!/usr/bin/env bash
# The formats read through libavif, libheif, libjxl, libtiff, librsvg and
# imgcache's own BMP reader, one at a time: imgcache's header probe against
# Pillow's (with the pillow-heif and pillow-jxl-plugin openers, Pillow 11.3+
# reading AVIF itself), and its thumbnails against vipsthumbnail's.
#   scripts/bench-formats.sh CODEC-BENCH-BINARY OUTPUT.md [COUNT]
# The corpus: COUNT (default 20) 1600x1200 photographs made up of noise and
# gradients, encoded by each format's own tool (avifenc, heif-enc, cjxl; Pillow
# for TIFF LZW and BMP) and COUNT SVG drawings of 400 shapes; kept in /tmp
# between runs. Appends a Markdown section to OUTPUT.md.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
output=$2
count=${3:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PILLOW_PYTHON:-python3}
if ! $python -c 'import PIL, pillow_heif, pillow_jxl; from PIL import features; assert features.check("avif")' 2>/dev/null; then
    echo "bench-formats: $python needs Pillow 11.3+, pillow-heif and pillow-jxl-plugin (pip install pillow pillow-heif pillow-jxl-plugin)" >&2
    exit 69
fi
corpus=/tmp/imgcache-formats-corpus-$count
formats=(avif heic jxl tiff bmp svg)
if [ ! -f "$corpus/done" ]; then
    rm -rf "$corpus"
    mkdir -p "$corpus/source" "${formats[@]/#/$corpus/}"
    $python - "$corpus" "$count" <<'PY'
import os, random, sys
from PIL import Image, ImageDraw, ImageFilter
folder, count = sys.argv[1], int(sys.argv[2])
random.seed(7)
for index in range(count):
    noise = Image.effect_noise((1600, 1200), 60).filter(ImageFilter.GaussianBlur(2))
    base = Image.linear_gradient("L").resize((1600, 1200))
    photo = Image.merge("RGB", (noise, base, Image.eval(noise, lambda v: 255 - v))).filter(ImageFilter.SMOOTH)
    photo.save(f"{folder}/source/{index:03}.png")
    photo.save(f"{folder}/tiff/{index:03}.tiff", compression="tiff_lzw")
    photo.save(f"{folder}/bmp/{index:03}.bmp")
    shapes = []
    for _ in range(400):
        x, y, r = random.uniform(0, 1600), random.uniform(0, 1200), random.uniform(5, 120)
        colour = "#%06x" % random.randrange(1 << 24)
        shapes.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}" fill-opacity="0.6"/>')
    with open(f"{folder}/svg/{index:03}.svg", "w") as svg:
        svg.write('<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="1200">' + "".join(shapes) + "</svg>\n")
PY
    for source in "$corpus"/source/*.png; do
        name=$(basename "$source" .png)
        avifenc -s 8 --min 20 --max 30 "$source" "$corpus/avif/$name.avif" >/dev/null
        heif-enc -q 60 -o "$corpus/heic/$name.heic" "$source" >/dev/null
        cjxl -d 1.5 -e 3 "$source" "$corpus/jxl/$name.jxl" >/dev/null 2>&1
    done
    rm -rf "$corpus/source"
    touch "$corpus/done"
fi
work=$(mktemp -d /tmp/imgcache-formats.XXXXXX)
trap 'rm -rf "$work"' EXIT
pillow="$python $root/scripts/pillow-codecs.py"
rows=()
for format in "${formats[@]}"; do
    folder="$corpus/$format"
    # Both sides must have done the whole folder.
    "$bin" probe "$folder" | grep -q "$count images, 0 failed"
    # Pillow reads no SVG: its probe is left out there.
    [ "$format" = svg ] || $pillow probe "$folder" | grep -q "probe $count"
    mkdir -p "$work/$format-imgcache" "$work/$format-vips"
    "$bin" thumbnail "$folder" 256x256 "$work/$format-imgcache" | grep -q "$count images, 0 failed"
    find "$folder" -type f | sort > "$work/$format.txt"
    vips="xargs -a $work/$format.txt vipsthumbnail -s 256x256 -o '$work/$format-vips/%s.jpg[Q=75]'"
    eval "$vips"
    probes=(-n "imgcache" "$bin probe $folder")
    [ "$format" = svg ] || probes+=(-n "Pillow" "$pillow probe $folder")
    hyperfine -N --style none --warmup 2 --runs 10 --export-json "$work/$format-probe.json" "${probes[@]}" >/dev/null 2>&1
    hyperfine --style none --warmup 1 --runs 5 --export-json "$work/$format-thumb.json" \
        -n "imgcache" "$bin thumbnail $folder 256x256 $work/$format-imgcache" -n "vipsthumbnail" "$vips" >/dev/null 2>&1
    rows+=("$($python - "$work/$format-probe.json" "$work/$format-thumb.json" "$format" "$(du -sk "$folder" | cut -f1)" <<'PY'
import json, sys
probe = [r["median"] for r in json.load(open(sys.argv[1]))["results"]]
thumb = [r["median"] for r in json.load(open(sys.argv[2]))["results"]]
name = {"avif": "AVIF", "heic": "HEIC", "jxl": "JPEG XL", "tiff": "TIFF (LZW)", "bmp": "BMP", "svg": "SVG"}[sys.argv[3]]
pillow = f"{probe[1] * 1000:.1f} ms | {probe[1] / probe[0]:.1f}x" if len(probe) > 1 else "(reads no SVG) | —"
print(f"| {name} | {int(sys.argv[4]) // 1024} MB | {probe[0] * 1000:.1f} ms | {pillow} | "
      f"{thumb[0]:.2f} s | {thumb[1]:.2f} s | {thumb[0] / thumb[1]:.2f}x |")
PY
)")
done
{
    echo
    echo "## Other formats: header probe and thumbnails"
    echo
    echo "$count images a format: 1600x1200 photographs (noise and gradients) encoded by avifenc"
    echo "(speed 8, quantiser 20-30), heif-enc (quality 60), cjxl (distance 1.5), Pillow (TIFF"
    echo "with LZW, BMP), and $count SVG drawings of 400 translucent circles. \`imgcache-codec-bench\`"
    echo "(a release build of imgcache's codec code alone) against Pillow $($python -c 'import PIL; print(PIL.__version__)')"
    echo "with pillow-heif and pillow-jxl-plugin in one Python process, and vipsthumbnail (libvips"
    echo "$(vips --version 2>/dev/null | cut -d- -f2), one process for all files, its own libheif, libjxl, libtiff and librsvg)."
    echo "Medians of hyperfine runs (10 for probes, 5 for thumbnails), one command after the other."
    echo
    echo "Probe: every file's size and kind (imgcache reads its first 64 KB; Pillow's"
    echo "\`Image.open(...).size\`). Target: 5x Pillow. Thumbnail: into 256x256, written"
    echo "as JPEG quality 75. Target: imgcache / vipsthumbnail at most 0.5."
    echo
    echo "| Format | Corpus | imgcache probe | Pillow probe | Probe speed-up | imgcache thumbnails | vipsthumbnail | Thumbnail ratio |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} >> "$output"
tail -n 20 "$output"
