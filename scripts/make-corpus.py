#!/usr/bin/env python3
"""Writes a benchmark corpus: COUNT images of mixed formats (JPEG, PNG, WebP,
GIF) whose sizes spread over 10-200 KB, into DIRECTORY, and prints a one-line
summary. Deterministic for a given COUNT (fixed seed).

    scripts/make-corpus.py DIRECTORY COUNT
"""
import io
import os
import random
import sys

from PIL import Image

FORMATS = [("jpg", "JPEG", {"quality": 85}), ("png", "PNG", {}), ("webp", "WEBP", {"quality": 80}),
           ("gif", "GIF", {})]


def render(rng, width, height):
    """Noise over a gradient: random enough that the encoders cannot shrink it to nothing."""
    noise = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    gradient = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    return Image.blend(gradient, noise, rng.uniform(0.3, 0.9))


def encode(image, fmt, options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def main():
    directory, count = sys.argv[1], int(sys.argv[2])
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(20261121)
    sizes = []
    for index in range(count):
        extension, fmt, options = FORMATS[index % len(FORMATS)]
        target = rng.uniform(10_000, 200_000)
        # Aim at the target size from a per-format guess of bytes per pixel, then correct once.
        guess = {"jpg": 1.1, "png": 2.6, "webp": 0.9, "gif": 0.9}[extension]
        data = b""
        for _ in range(4):
            pixels = max(32 * 32, int(target / guess))
            width = max(32, int((pixels * rng.uniform(0.6, 1.6)) ** 0.5))
            height = max(32, pixels // width)
            data = encode(render(rng, width, height), fmt, options)
            guess *= len(data) / target
            if 10_000 <= len(data) <= 200_000:
                break
        with open(os.path.join(directory, f"img{index:05d}.{extension}"), "wb") as out:
            out.write(data)
        sizes.append(len(data))
    print(f"{count} images, {sum(sizes) / 1e6:.1f} MB, {min(sizes) / 1000:.0f}-{max(sizes) / 1000:.0f} KB each")


if __name__ == "__main__":
    main()
