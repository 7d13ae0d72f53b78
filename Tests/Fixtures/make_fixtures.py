#!/usr/bin/env python3
"""Regenerates the committed test fixtures and demo samples with Pillow.

Deterministic: the same Pillow version writes the same bytes. Run from the
repository root:  python3 Tests/Fixtures/make_fixtures.py
It also writes Tests/Fixtures/images/expected.tsv: name, format, width, height,
as Pillow reads them back (the tests compare imgcache's header probe with it).
"""
import math
import os
import struct
import zlib
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "images")
SAMPLES = os.path.join(HERE, "..", "..", "Samples")


def gradient(width, height, mode="RGB", phase=0.0):
    image = Image.new("RGBA", (width, height))
    pixels = image.load()
    for y in range(height):
        for x in range(width):
            r = int(127 + 127 * math.sin((x + phase) / 7.0))
            g = int(127 + 127 * math.sin((y - phase) / 5.0))
            b = (x * 3 + y * 5) % 256
            a = 255 if mode != "RGBA" else (x * 255 // max(1, width - 1))
            pixels[x, y] = (r, g, b, a)
    return image if mode == "RGBA" else image.convert(mode)


def write_fixtures():
    os.makedirs(IMAGES, exist_ok=True)
    gradient(96, 64).save(os.path.join(IMAGES, "photo.jpg"), quality=85)
    gradient(64, 48, "RGBA").save(os.path.join(IMAGES, "logo.png"))
    frames = [gradient(32, 32, phase=i * 4).convert("P") for i in range(3)]
    frames[0].save(os.path.join(IMAGES, "anim.gif"), save_all=True, append_images=frames[1:], duration=80, loop=0)
    gradient(40, 30).save(os.path.join(IMAGES, "sticker.webp"), quality=80)
    gradient(24, 24, "RGBA").save(os.path.join(IMAGES, "lossless.webp"), lossless=True)
    gradient(16, 16).save(os.path.join(IMAGES, "scan.tiff"))
    with open(os.path.join(IMAGES, "page.html"), "w") as page:
        page.write("<!doctype html>\n<html><body><h1>Not an image</h1></body></html>\n")
    # A PNG signature followed by an IHDR chunk whose CRC is wrong.
    ihdr = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    with open(os.path.join(IMAGES, "broken.png"), "wb") as broken:
        broken.write(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + b"\0\0\0\0")
    write_bomb(os.path.join(IMAGES, "bomb.png"))
    # The JPEG cut two thirds in: its header is whole, its scan data is not.
    with open(os.path.join(IMAGES, "photo.jpg"), "rb") as photo:
        data = photo.read()
    with open(os.path.join(IMAGES, "cut.jpg"), "wb") as cut:
        cut.write(data[:len(data) * 2 // 3])
    # The JPEG with 64 bytes of its scan data scrambled: whole to a header check
    # (it still ends with its end-of-image marker), corrupt to a decoder.
    middle = len(data) // 2
    with open(os.path.join(IMAGES, "garbled.jpg"), "wb") as garbled:
        garbled.write(data[:middle] + bytes((index * 37) % 251 for index in range(64)) + data[middle + 64:])
    write_variants()
    write_expectations()


HEADER_FIXTURES = ["photo.jpg", "logo.png", "anim.gif", "sticker.webp", "lossless.webp",
                   "apng.png", "gray16.png", "clear.gif", "moving.webp",
                   "palette.png", "gray.jpg", "progressive.jpg", "cmyk.jpg", "alpha.webp"]


def write_variants():
    """Header variants: an APNG, a 16-bit grey PNG, a GIF with a transparent
    colour, an animated WebP with alpha."""
    frames = [gradient(20, 10, "RGBA", phase=i * 5) for i in range(3)]
    frames[0].save(os.path.join(IMAGES, "apng.png"), save_all=True, append_images=frames[1:], duration=100, loop=0)
    gray = Image.new("I;16", (12, 9))
    gray.putdata([(x * 5000 + y * 300) % 65536 for y in range(9) for x in range(12)])
    gray.save(os.path.join(IMAGES, "gray16.png"))
    clear = Image.new("P", (16, 16))
    clear.putpalette([channel for index in range(16) for channel in (index * 16, 255 - index * 16, 128)])
    clear.putdata([(x + y) % 16 for y in range(16) for x in range(16)])
    clear.save(os.path.join(IMAGES, "clear.gif"), transparency=0)
    moving = [gradient(18, 12, "RGBA", phase=i * 7) for i in range(2)]
    moving[0].save(os.path.join(IMAGES, "moving.webp"), save_all=True, append_images=moving[1:], duration=70, loop=0,
                   lossless=True)
    gradient(30, 20).convert("P", palette=Image.ADAPTIVE, colors=16).save(os.path.join(IMAGES, "palette.png"))
    gradient(40, 24).convert("L").save(os.path.join(IMAGES, "gray.jpg"), quality=90)
    gradient(48, 32).save(os.path.join(IMAGES, "progressive.jpg"), quality=85, progressive=True)
    gradient(32, 24).convert("CMYK").save(os.path.join(IMAGES, "cmyk.jpg"), quality=95)
    gradient(28, 20, "RGBA").save(os.path.join(IMAGES, "alpha.webp"), quality=80)
    # 48x32 stored, EXIF orientation 6: shown turned a quarter clockwise, 32x48.
    exif = Image.Exif()
    exif[0x0112] = 6
    gradient(48, 32).save(os.path.join(IMAGES, "rotated.jpg"), quality=90, exif=exif.tobytes())


def first_frame_rgba(image):
    """The first frame as RGBA8 bytes; 16-bit grey is rounded to 8 bits
    (v / 257, what libpng's scaling gives). Fully transparent pixels count as (0, 0, 0, 0), whatever colour they hide."""
    if image.mode.startswith("I;16") or image.mode == "I":
        return bytes(b for v in image.getdata() for b in ((v * 255 + 32767) // 65535,) * 3 + (255,))
    data = bytearray(image.convert("RGBA").tobytes())
    for index in range(0, len(data), 4):
        if data[index + 3] == 0:
            data[index:index + 3] = b"\0\0\0"
    return bytes(data)


def write_expectations():
    """What Pillow, an independent decoder, reads from each fixture: name,
    format, width, height, frames, alpha (0/1), bits per sample, and the MD5
    of the first frame's RGBA8 pixels."""
    import hashlib
    with open(os.path.join(IMAGES, "expected.tsv"), "w") as table:
        table.write("# name\tformat\twidth\theight\tframes\talpha\tdepth\trgba_md5\n")
        for name in HEADER_FIXTURES:
            with Image.open(os.path.join(IMAGES, name)) as image:
                frames = getattr(image, "n_frames", 1)
                alpha = int("A" in image.mode or "transparency" in image.info)
                depth = 16 if image.mode.startswith("I;16") else 1 if image.mode == "1" else 8
                if image.format == "PNG":
                    # Pillow widens palette and low-bit grey; the IHDR byte says what the file holds.
                    with open(os.path.join(IMAGES, name), "rb") as raw:
                        depth = raw.read(25)[24]
                digest = hashlib.md5(first_frame_rgba(image)).hexdigest()
                table.write(f"{name}\t{image.format.lower()}\t{image.width}\t{image.height}\t{frames}\t{alpha}\t{depth}\t{digest}\n")


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_bomb(path):
    """A valid PNG header for 50000x50000 RGBA pixels (10 GB decoded) in 100 bytes:
    a decompression bomb the pixel limit must refuse before any decoding."""
    ihdr = struct.pack(">IIBBBBB", 50000, 50000, 8, 6, 0, 0, 0)
    with open(path, "wb") as bomb:
        bomb.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
                   + png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + png_chunk(b"IEND", b""))


def write_samples():
    os.makedirs(SAMPLES, exist_ok=True)
    gradient(320, 200, phase=3).save(os.path.join(SAMPLES, "waves.jpg"), quality=88)
    gradient(240, 240, phase=9).save(os.path.join(SAMPLES, "tiles.jpg"), quality=80, progressive=True)
    gradient(160, 120, "RGBA", phase=5).save(os.path.join(SAMPLES, "glass.png"))
    gradient(200, 150, phase=12).save(os.path.join(SAMPLES, "dunes.webp"), quality=82)
    gradient(128, 128, "RGBA", phase=2).save(os.path.join(SAMPLES, "badge.webp"), lossless=True)
    frames = [gradient(96, 64, phase=i * 6).convert("P") for i in range(6)]
    frames[0].save(os.path.join(SAMPLES, "spinner.gif"), save_all=True, append_images=frames[1:], duration=60, loop=0)


if __name__ == "__main__":
    write_fixtures()
    write_samples()
