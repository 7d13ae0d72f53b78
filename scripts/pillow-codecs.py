#!/usr/bin/env python3
"""Pillow's side of the codec benchmark: over every image of DIRECTORY,
    probe   Image.open(...).size (the header only)
    decode  Image.load() on every frame
and prints how many images it handled.

    scripts/pillow-codecs.py probe|decode DIRECTORY
"""
import os, sys
from PIL import Image
# The openers for HEIC and JPEG XL, where they are installed (bench-formats.sh needs them).
try:
    import pillow_heif
    pillow_heif.register_heif_opener()
except ImportError:
    pass
try:
    import pillow_jxl  # noqa: F401 - registers itself
except ImportError:
    pass
d = sys.argv[2]
files = sorted(f for f in os.listdir(d) if not f.endswith(".txt"))
n = 0
for f in files:
    with Image.open(os.path.join(d, f)) as im:
        if sys.argv[1] == "probe":
            im.size
        else:
            for i in range(getattr(im, "n_frames", 1)):
                im.seek(i)
                im.load()
    n += 1
print(sys.argv[1], n)
