#!/usr/bin/env python3
"""Regenerates the fixtures of the formats read through libavif, libheif,
libjxl, libtiff, librsvg and imgcache's own BMP/ICO reader, each with what a
reference decoder makes of it.

Run from the repository root (Debian: libavif-bin, libheif-examples,
libjxl-tools, librsvg2-bin, libvips-tools, python3-pil):
    python3 Tests/Fixtures/make_format_fixtures.py
It writes Tests/Fixtures/images/formats/: the files, NAME.ref.png (the first
frame as the reference decoder shows it: avifdec, heif-convert, djxl,
rsvg-convert, Pillow; turned upright and in sRGB), cut/NAME (the file cut
two thirds in), and formats.tsv: name,
format, width, height (as shown: upright), frames, alpha, depth, tolerance (the largest
difference of a channel allowed against the reference: lossy decoders of
one format may round differently).
"""
import ctypes
import io
import os
import subprocess
import tempfile

from PIL import Image, ImageCms

from make_fixtures import gradient

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "images", "formats")
ROWS = []


def run(*command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def path(name):
    return os.path.join(OUT, name)


def reference(name, image):
    image.convert("RGBA").save(path(name + ".ref.png"))


def decoded(command, suffix=".png"):
    """What a reference decoder writes, read back by Pillow."""
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "out" + suffix)
        run(*command, target)
        with Image.open(target) as image:
            return image.convert("RGBA").copy()


def row(name, fmt, width, height, frames=1, alpha=0, depth=8, tolerance=0):
    ROWS.append(f"{name}\t{fmt}\t{width}\t{height}\t{frames}\t{alpha}\t{depth}\t{tolerance}")


def prophoto_profile():
    """A ProPhoto RGB profile (gamma 1.8, D50) made with lcms2 itself."""
    lcms = ctypes.CDLL("liblcms2.so.2")

    class XYY(ctypes.Structure):
        _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("Y", ctypes.c_double)]

    class Triple(ctypes.Structure):
        _fields_ = [("r", XYY), ("g", XYY), ("b", XYY)]

    lcms.cmsBuildGamma.restype = ctypes.c_void_p
    lcms.cmsBuildGamma.argtypes = [ctypes.c_void_p, ctypes.c_double]
    lcms.cmsCreateRGBProfile.restype = ctypes.c_void_p
    lcms.cmsCreateRGBProfile.argtypes = [ctypes.POINTER(XYY), ctypes.POINTER(Triple), ctypes.c_void_p * 3]
    lcms.cmsSaveProfileToMem.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
    gamma = lcms.cmsBuildGamma(None, 1.8)
    curves = (ctypes.c_void_p * 3)(gamma, gamma, gamma)
    white = XYY(0.3457, 0.3585, 1.0)
    primaries = Triple(XYY(0.7347, 0.2653, 1), XYY(0.1596, 0.8404, 1), XYY(0.0366, 0.0001, 1))
    profile = lcms.cmsCreateRGBProfile(ctypes.byref(white), ctypes.byref(primaries), curves)
    size = ctypes.c_uint32(0)
    lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), None, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(size.value)
    lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), buffer, ctypes.byref(size))
    return buffer.raw[:size.value]


def write_avif(source, source_rgb):
    run("avifenc", "--min", "0", "--max", "4", "-y", "420", source, path("still.avif"))
    reference("still.avif", decoded(["avifdec", path("still.avif")]))
    row("still.avif", "avif", 40, 30, alpha=1, tolerance=3)
    run("avifenc", "--min", "0", "--max", "4", "-d", "10", "-y", "444", source, path("deep.avif"))
    reference("deep.avif", decoded(["avifdec", "-d", "8", path("deep.avif")]))
    row("deep.avif", "avif", 40, 30, alpha=1, depth=10, tolerance=3)
    run("avifenc", "--min", "0", "--max", "4", "-d", "12", "-y", "422", source_rgb, path("twelve.avif"))
    reference("twelve.avif", decoded(["avifdec", "-d", "8", path("twelve.avif")]))
    row("twelve.avif", "avif", 40, 30, depth=12, tolerance=3)
    run("avifenc", "--min", "0", "--max", "4", "-y", "400", source_rgb, path("mono.avif"))
    reference("mono.avif", decoded(["avifdec", path("mono.avif")]))
    row("mono.avif", "avif", 40, 30, tolerance=3)
    # Cropped to 24x20 at (8, 4), turned a quarter anticlockwise, then top and bottom exchanged:
    # avifdec leaves the transformations to the viewer, so the reference applies them here.
    run("avifenc", "--min", "0", "--max", "4", "--crop", "8,4,24,20", "--irot", "1", "--imir", "0", source_rgb,
        path("turned.avif"))
    whole = decoded(["avifdec", path("turned.avif")])
    upright = whole.crop((8, 4, 32, 24)).transpose(Image.Transpose.ROTATE_90).transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    reference("turned.avif", upright)
    row("turned.avif", "avif", 20, 24, tolerance=3)
    with tempfile.TemporaryDirectory() as folder:
        frames = []
        for index in range(3):
            frame = os.path.join(folder, f"f{index}.png")
            gradient(32, 24, phase=index * 6).save(frame)
            frames.append(frame)
        run("avifenc", "--min", "0", "--max", "4", "--fps", "10", *frames, path("sequence.avif"))
    reference("sequence.avif", decoded(["avifdec", "--index", "0", path("sequence.avif")]))
    row("sequence.avif", "avif", 32, 24, frames=3, alpha=1, tolerance=3)  # avifenc writes an (opaque) alpha track


def write_heif(source, source_rgb):
    run("heif-enc", "-q", "95", "-o", path("still.heic"), source_rgb)
    reference("still.heic", decoded(["heif-convert", path("still.heic")]))
    row("still.heic", "heic", 40, 30, tolerance=3)
    run("heif-enc", "-q", "95", "-o", path("alpha.heic"), source)
    reference("alpha.heic", decoded(["heif-convert", path("alpha.heic")]))
    row("alpha.heic", "heic", 40, 30, alpha=1, tolerance=3)


def write_jxl(source):
    run("cjxl", "-d", "0", source, path("still.jxl"))
    reference("still.jxl", decoded(["djxl", path("still.jxl")]))
    row("still.jxl", "jxl", 40, 30, alpha=1, tolerance=0)
    with tempfile.TemporaryDirectory() as folder:
        frames = [gradient(24, 16, "RGBA", phase=index * 5) for index in range(3)]
        animation = os.path.join(folder, "anim.png")
        frames[0].save(animation, save_all=True, append_images=frames[1:], duration=100, loop=0)
        run("cjxl", "-d", "0", animation, path("anim.jxl"))
    reference("anim.jxl", frames[0])
    row("anim.jxl", "jxl", 24, 16, frames=3, alpha=1, tolerance=0)


def write_tiff(image, image_rgb):
    image.save(path("lzw.tiff"), compression="tiff_lzw")
    reference("lzw.tiff", image)
    row("lzw.tiff", "tiff", 40, 30, alpha=1)
    image_rgb.save(path("deflate.tiff"), compression="tiff_adobe_deflate")
    reference("deflate.tiff", image_rgb)
    row("deflate.tiff", "tiff", 40, 30)
    image_rgb.save(path("jpeg.tiff"), compression="jpeg", quality=95)
    with Image.open(path("jpeg.tiff")) as back:
        reference("jpeg.tiff", back)
    row("jpeg.tiff", "tiff", 40, 30, tolerance=2)
    pages = [gradient(40, 30, phase=index * 9) for index in range(3)]
    pages[0].save(path("pages.tiff"), save_all=True, append_images=pages[1:], compression="tiff_lzw")
    reference("pages.tiff", pages[0])
    row("pages.tiff", "tiff", 40, 30)
    # 16 bits a sample: libtiff reduces each to 8 bits.
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "in.png")
        image_rgb.save(source)
        run("vips", "colourspace", source, path("deep.tiff") + "[compression=deflate]", "rgb16")
    with Image.open(path("deep.tiff")) as back:
        reference("deep.tiff", image_rgb)
    row("deep.tiff", "tiff", 40, 30, depth=16, tolerance=1)


def write_bmp_ico(image, image_rgb):
    image_rgb.save(path("rgb.bmp"))
    reference("rgb.bmp", image_rgb)
    row("rgb.bmp", "bmp", 40, 30)
    image.save(path("alpha.bmp"))
    reference("alpha.bmp", image)
    row("alpha.bmp", "bmp", 40, 30, alpha=1)
    palette = image_rgb.convert("P", palette=Image.ADAPTIVE, colors=16)
    palette.save(path("palette.bmp"))
    reference("palette.bmp", palette)
    row("palette.bmp", "bmp", 40, 30)
    gradient(32, 32, "RGBA").save(path("icon.ico"), sizes=[(16, 16), (32, 32)])
    with Image.open(path("icon.ico")) as back:
        reference("icon.ico", back)
    row("icon.ico", "ico", 32, 32, alpha=1)


SVG = """<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30" viewBox="0 0 80 60">
  <rect width="80" height="60" fill="#2060c0"/>
  <circle cx="40" cy="30" r="20" fill="#f0c020" fill-opacity="0.8"/>
  <rect x="0" y="0" width="20" height="20" fill="#e03020"/>
</svg>
"""


def write_svg():
    with open(path("shapes.svg"), "w") as svg:
        svg.write(SVG)
    reference("shapes.svg", decoded(["rsvg-convert", path("shapes.svg"), "-o"]))
    row("shapes.svg", "svg", 40, 30, alpha=1, tolerance=2)


def write_editor_svg():
    """An SVG as an editor saves it: a byte-order mark, a long notice and a doctype
    with entities before the root element, its size from the viewBox alone."""
    notice = "<!-- Generator: an illustration editor. " + "Notice text. " * 300 + "-->\n"
    doctype = '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd" [\n' \
        '  <!ENTITY ns_svg "http://www.w3.org/2000/svg">\n  <!ENTITY fill "#30a050">\n]>\n'
    body = '<svg xmlns="&ns_svg;" viewBox="0 0 24 36"><rect width="24" height="36" fill="&fill;"/>' \
        '<circle cx="12" cy="18" r="8" fill="#f0f0f0"/></svg>\n'
    with open(path("editor.svg"), "w", encoding="utf-8") as svg:
        svg.write("\ufeff<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + notice + doctype + body)
    reference("editor.svg", decoded(["rsvg-convert", path("editor.svg"), "-o"]))
    row("editor.svg", "svg", 24, 36, alpha=1, tolerance=2)


def write_colour(image_rgb):
    """A ProPhoto-tagged JPEG, PNG and WebP: shown in sRGB through their profile."""
    profile = prophoto_profile()
    image_rgb.save(path("prophoto.jpg"), quality=95, icc_profile=profile)
    image_rgb.save(path("prophoto.png"), icc_profile=profile)
    image_rgb.save(path("prophoto.webp"), lossless=True, icc_profile=profile)
    source = ImageCms.ImageCmsProfile(io.BytesIO(profile))
    srgb = ImageCms.createProfile("sRGB")
    with Image.open(path("prophoto.png")) as png:
        reference("prophoto.png", ImageCms.profileToProfile(png, source, srgb))
    with Image.open(path("prophoto.jpg")) as jpeg:
        reference("prophoto.jpg", ImageCms.profileToProfile(jpeg, source, srgb))
    with Image.open(path("prophoto.webp")) as webp:
        reference("prophoto.webp", ImageCms.profileToProfile(webp.convert("RGB"), source, srgb))
    row("prophoto.png", "png", 40, 30, tolerance=2)
    row("prophoto.webp", "webp", 40, 30, tolerance=2)
    row("prophoto.jpg", "jpeg", 40, 30, tolerance=2)


def write_orientation(image_rgb):
    """EXIF orientation 6 outside JPEG: a PNG's eXIf chunk, a WebP's EXIF chunk, a TIFF's tag.
    Stored 40x30, shown turned a quarter clockwise: 30x40."""
    exif = Image.Exif()
    exif[0x0112] = 6
    image_rgb.save(path("turned.png"), exif=exif.tobytes())
    image_rgb.save(path("turned.webp"), lossless=True, exif=exif.tobytes())
    # TIFF's own Orientation tag means the same.
    image_rgb.save(path("turned.tiff"), compression="tiff_lzw", tiffinfo={0x0112: 6})
    upright = image_rgb.transpose(Image.Transpose.ROTATE_270)
    for name, fmt in (("turned.png", "png"), ("turned.webp", "webp"), ("turned.tiff", "tiff")):
        reference(name, upright)
        row(name, fmt, 30, 40)


def main():
    os.makedirs(OUT, exist_ok=True)
    image = gradient(40, 30, "RGBA")
    image_rgb = gradient(40, 30)
    with tempfile.TemporaryDirectory() as folder:
        source, source_rgb = os.path.join(folder, "a.png"), os.path.join(folder, "b.png")
        image.save(source)
        image_rgb.save(source_rgb)
        write_avif(source, source_rgb)
        write_heif(source, source_rgb)
        write_jxl(source)
    write_tiff(image, image_rgb)
    write_bmp_ico(image, image_rgb)
    write_svg()
    write_editor_svg()
    write_colour(image_rgb)
    write_orientation(image_rgb)
    # Each file cut two thirds in, as a server that lies about its length leaves it.
    os.makedirs(path("cut"), exist_ok=True)
    for line in ROWS:
        name = line.split("\t")[0]
        with open(path(name), "rb") as whole, open(os.path.join(OUT, "cut", name), "wb") as cut:
            data = whole.read()
            cut.write(data[:len(data) * 2 // 3])
    with open(path("formats.tsv"), "w") as table:
        table.write("# name\tformat\twidth\theight\tframes\talpha\tdepth\ttolerance\n")
        table.write("\n".join(ROWS) + "\n")


if __name__ == "__main__":
    main()
