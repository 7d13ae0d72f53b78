#!/usr/bin/env python3
"""Writes the hostile images the containment tests fetch, into the folder given.

Standard library only (zlib for the compressed ones), so that any python3 the
tests find can run it: python3 Tests/Fixtures/make_hostile_corpus.py OUTDIR
The 9000x9000 JPEG XL is committed (Tests/Fixtures/images/hostile/huge.jxl):
nothing here writes JPEG XL.
"""
import base64
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "images")


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def big_png(width, height):
    """A grey PNG of width x height, its rows deflated as they are made (never all in memory)."""
    deflate = zlib.compressobj(9)
    row = b"\0" + b"\x80" * width
    data = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def big_tiff(width, height):
    """A grey TIFF of width x height in one deflated strip."""
    deflate = zlib.compressobj(9)
    row = b"\x80" * width
    strip = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 8), (262, 3, 1, 1),
               (273, 4, 1, 8), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, len(strip))]
    directory_at = 8 + len(strip)
    directory = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        directory += struct.pack("<HHI", tag, kind, count) + (struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value))
    return b"II*\0" + struct.pack("<I", directory_at) + strip + directory + b"\0\0\0\0"


def paged_tiff(pages, broken):
    """A grey TIFF of `pages` 8x8 pages, each a deflated strip; page `broken` (1-based) holds noise
    where its strip should be: whole as a structure, not as pixels."""
    strips = []
    for page in range(pages):
        strip = zlib.compress(bytes([40 + 60 * page]) * 64, 9)
        strips.append(bytes((i * 37 + 11) & 0xFF for i in range(len(strip))) if page + 1 == broken else strip)
    data = b"II*\0" + struct.pack("<I", 0)
    offsets = []
    for strip in strips:
        offsets.append(len(data))
        data += strip
    directories = []
    for page, strip in enumerate(strips):
        entries = [(256, 4, 1, 8), (257, 4, 1, 8), (258, 3, 1, 8), (259, 3, 1, 8), (262, 3, 1, 1),
                   (273, 4, 1, offsets[page]), (277, 3, 1, 1), (278, 4, 1, 8), (279, 4, 1, len(strip))]
        directory = struct.pack("<H", len(entries))
        for tag, kind, count, value in entries:
            directory += struct.pack("<HHI", tag, kind, count) + (struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value))
        directories.append(directory)
    at = len(data)
    first = at
    for index, directory in enumerate(directories):
        following = at + len(directory) + 4 if index + 1 < len(directories) else 0
        data += directory + struct.pack("<I", following)
        at = len(data)
    return data[:4] + struct.pack("<I", first) + data[8:]


def many_frames_gif(width, height, frames):
    """A GIF whose screen is width x height, with `frames` one-pixel frames: tiny, yet it announces
    frames x width x height pixels."""
    data = b"GIF89a" + struct.pack("<HH", width, height) + b"\x80\0\0" + b"\0\0\0\xff\xff\xff"
    frame = b"\x2c\0\0\0\0\x01\0\x01\0\0\x02\x02\x4c\x01\0"
    return data + frame * frames + b";"


def rle8_bmp(width, height):
    """An RLE8 BMP of width x height whose data ends at once: a kilobyte for 100 megapixels."""
    data = b"\0\1"
    palette = b"\0\0\0\0" * 256
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 8, 1, len(data), 2835, 2835, 256, 0)
    offset = 14 + 40 + len(palette)
    return b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + header + palette + data


def png_chunks(data):
    offset, found = 8, []
    while offset < len(data):
        length = struct.unpack(">I", data[offset:offset + 4])[0]
        found.append([data[offset + 4:offset + 8], data[offset + 8:offset + 8 + length]])
        offset += 12 + length
    return found


def png_of(chunks):
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunk(kind, data) for kind, data in chunks)


def apngs(out):
    source = open(os.path.join(IMAGES, "apng.png"), "rb").read()
    # A later frame's data replaced by noise: only a decode of every frame finds it.
    chunks = png_chunks(source)
    last = [index for index, (kind, _) in enumerate(chunks) if kind == b"fdAT"][-1]
    chunks[last][1] = chunks[last][1][:4] + bytes((i * 37) & 0xFF for i in range(len(chunks[last][1]) - 4))
    write(out, "apng-bad-frame.png", png_of(chunks))
    # acTL claiming 2,147,483,647 frames.
    chunks = png_chunks(source)
    for entry in chunks:
        if entry[0] == b"acTL":
            entry[1] = struct.pack(">I", 2147483647) + entry[1][4:]
    write(out, "apng-lying.png", png_of(chunks))
    # A 60000x60000 frame on the canvas.
    chunks = png_chunks(source)
    second = [index for index, (kind, _) in enumerate(chunks) if kind == b"fcTL"][1]
    chunks[second][1] = chunks[second][1][:4] + struct.pack(">II", 60000, 60000) + chunks[second][1][12:]
    write(out, "apng-huge-frame.png", png_of(chunks))


def svgs(out):
    filters = "".join(f'<filter id="f{i}"><feGaussianBlur stdDeviation="50"/><feMorphology radius="40" operator="dilate"/></filter>'
                      for i in range(40))
    groups = '<rect width="1000" height="1000" fill="red"/>'
    for i in range(40):
        groups = f'<g filter="url(#f{i})">{groups}</g>'
    write(out, "filters.svg", f'<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><defs>{filters}</defs>{groups}</svg>'.encode())
    write(out, "blur.svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="2000"><filter id="b" x="-50" y="-50" '
                           b'width="100" height="100"><feGaussianBlur stdDeviation="3000"/></filter><rect width="2000" height="2000" '
                           b'filter="url(#b)"/></svg>')
    bomb = base64.b64encode(open(os.path.join(IMAGES, "bomb.png"), "rb").read()).decode()
    image = '<image width="10" height="10" xlink:href="{}"/>'
    head = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10">'
    write(out, "data-bomb.svg", (head + image.format("data:image/png;base64," + bomb) + "</svg>").encode())
    # The same, the scheme spelt by an entity and character references.
    write(out, "data-bomb-hidden.svg", ('<?xml version="1.0"?>\n<!DOCTYPE svg [<!ENTITY d "&#100;at">]>\n' + head
                                        + image.format("&d;a:image/png;base64," + bomb) + "</svg>").encode())
    # A hundred 2-megapixel PNGs, each under the limit, 200 megapixels together.
    tile = base64.b64encode(big_png(2000, 1000)).decode()
    write(out, "data-many.svg", (head + "".join(image.format("data:image/png;base64," + tile) for _ in range(100)) + "</svg>").encode())
    # Entities that expand to just under the cap (4 MiB).
    entities = '<!ENTITY a "' + "x" * 1000 + '">' + "".join(f'<!ENTITY e{i} "&a;&a;&a;&a;">' for i in range(1))
    references = "&e0;" * 900
    write(out, "entities.svg", ('<?xml version="1.0"?>\n<!DOCTYPE svg [' + entities + ']>\n'
                                '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><desc>' + references
                                + '</desc><rect width="20" height="20"/></svg>').encode())
    # The root element after 100 KB of comment.
    write(out, "long-prolog.svg", b'<?xml version="1.0"?>\n<!-- ' + b"x" * 100_000 + b' -->\n'
                                  b'<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10"/></svg>')


def large_headers(out):
    """Valid images whose header lies beyond their first 16 MiB: a JPEG behind 20 MB of comments, a
    GIF behind a 20 MB comment extension, a TIFF whose first directory is 20 MB in."""
    photo = open(os.path.join(IMAGES, "photo.jpg"), "rb").read()
    comment = b"\xff\xfe" + struct.pack(">H", 65535) + b"c" * 65533
    write(out, "late-header.jpg", photo[:2] + comment * 320 + photo[2:])
    gif = open(os.path.join(IMAGES, "clear.gif"), "rb").read()
    blocks = (b"\xff" + b"g" * 255) * 80_000
    at = 13 + ((3 << ((gif[10] & 7) + 1)) if gif[10] & 0x80 else 0)
    write(out, "late-header.gif", gif[:at] + b"\x21\xfe" + blocks + b"\x00" + gif[at:])
    width, height = 64, 48
    pixels = bytes((x * 4) & 0xFF for y in range(height) for x in range(width))
    offset = 20_000_000
    entries = [(256, 3, 1, width), (257, 3, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 8), (277, 3, 1, 1), (278, 3, 1, height), (279, 4, 1, len(pixels))]
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", tag, kind, count, value) for tag, kind, count, value in entries)
    tiff = b"II*\x00" + struct.pack("<I", offset) + pixels
    write(out, "late-header.tiff", tiff + b"\x00" * (offset - len(tiff)) + ifd + struct.pack("<I", 0))


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as file:
        file.write(data)


def main(out):
    os.makedirs(out, exist_ok=True)
    svgs(out)
    apngs(out)
    write(out, "huge.png", big_png(10000, 10000))
    # A 4x4 PNG behind a 20 MB text chunk: more than imgcache reads whole, a header libpng never needs it for.
    small = png_chunks(big_png(4, 4))
    text_chunk = png_of(small[:1] + [[b"tEXt", b"Comment\0" + b"x" * 20_000_000]] + small[1:])
    write(out, "text-chunk.png", text_chunk)
    # The same with a megabyte cut from the middle: its first and last bytes look whole.
    write(out, "text-chunk-cut.png", text_chunk[:8_000_000] + text_chunk[9_000_000:])
    large_headers(out)
    write(out, "huge.tiff", big_tiff(10000, 10000))
    write(out, "third-page-broken.tiff", paged_tiff(3, 3))
    write(out, "many-frames.gif", many_frames_gif(2000, 2000, 2000))
    write(out, "rle.bmp", rle8_bmp(9999, 9999))
    with open(os.path.join(IMAGES, "hostile", "huge.jxl"), "rb") as file:
        jxl = file.read()
    write(out, "huge.jxl", jxl)
    # A JPEG XL signature before noise (libjxl prints a line for each field it refuses), and one
    # whose header holds but whose pixel data is noise.
    noise = bytes((i * 131 + 7) % 251 for i in range(400))
    write(out, "garbage.jxl", b"\xff\x0a" + noise)
    write(out, "bad-pixels.jxl", jxl[:1999] + noise * 4)


if __name__ == "__main__":
    main(sys.argv[1])
