#!/usr/bin/env python3
"""Runs imgcache over public conformance suites and compares what it makes of
each file with a reference decoder.

    python3 scripts/conformance.py [--imgcache BIN] [--report FILE] NAME=FOLDER...

Each FOLDER is searched for AVIF, HEIC/HEIF, JPEG XL, TIFF, BMP, ICO/CUR and
SVG files (by extension). The suites are not part of the repository: fetch
them from their projects, for example
    AOMediaCodec/av1-avif (testFiles/), nokiatech/heif_conformance
    (conformance_files/), libjxl/conformance (testcases/), python-pillow/Pillow
    (Tests/images/: TIFF, BMP, ICO), linebender/resvg (crates/resvg/tests/).

For each file, served from 127.0.0.1 by a throwaway HTTP server:
  - imgcache's size (`fetch --json`: as shown, upright) against the reference
    decoder's (heif-convert for HEIF and AVIF stills, which applies their
    crop, rotation and mirror; avifdec for what heif-convert cannot read and
    for sequences; the suite's own ref.png for JPEG XL, else djxl; Pillow
    for TIFF, BMP, ICO; rsvg-convert for SVG);
  - imgcache's conversion of it to PNG (`--format png`: every pixel, upright,
    in sRGB) against the reference's pixels turned into sRGB through their ICC
    profile: they agree when the mean channel difference is at most 3 and no
    pixel's exceeds 48 (lossy decoders round differently, and colour
    management engines differ by a step or two).
A file either reader refuses is counted, with the reason, not compared.
Prints one Markdown table per suite and the files that differ.
"""
import argparse
import contextlib
import functools
import http.server
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse

from PIL import Image, ImageCms

EXTENSIONS = {".avif": "avif", ".avifs": "avif", ".heic": "heif", ".heif": "heif", ".hif": "heif",
              ".jxl": "jxl", ".tif": "pillow", ".tiff": "pillow", ".bmp": "pillow", ".ico": "pillow",
              ".cur": "pillow", ".svg": "svg"}


@contextlib.contextmanager
def served(folder):
    handler = functools.partial(QuietHandler, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def run(command, timeout=60):
    return subprocess.run(command, capture_output=True, timeout=timeout)


def reference_images(kind, path, work):
    """Each reference decoder's first frame as RGBA in sRGB, with its name;
    the reasons of those that failed."""
    # A suite that ships its own expected picture (libjxl's conformance: ref.png beside input.jxl) is the reference.
    shipped = os.path.join(os.path.dirname(path), "ref.png")
    if kind == "jxl" and os.path.exists(shipped):
        with Image.open(shipped) as image:
            return [(in_srgb(image), "the suite's ref.png")], []
    if kind == "pillow":
        try:
            with Image.open(path) as image:
                image.seek(0)
                return [(in_srgb(image), "Pillow")], []
        except Exception as error:  # noqa: BLE001 - Pillow's refusal is a reported outcome
            return [], [f"Pillow: {error}"]
    target = os.path.join(work, "reference.png")
    icc = os.path.join(work, "reference.icc")
    attempts = {
        "avif": [("heif-convert", ["heif-convert", path, target]), ("avifdec", ["avifdec", "--no-strict", "--index", "0", path, target])],
        "heif": [("heif-convert", ["heif-convert", path, target])],
        "jxl": [("djxl", ["djxl", path, target, "--icc_out", icc])],
        "svg": [("rsvg-convert", ["rsvg-convert", path, "-o", target])],
    }
    found, failures = [], []
    for name, command in attempts[kind]:
        for stale in [target, icc] + [os.path.join(work, name) for name in os.listdir(work) if name.startswith("reference-")]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(stale)
        result = run(command)
        # heif-convert writes NAME-1.png, NAME-2.png... for files with several top-level images:
        # the primary's is the one heif-info marks.
        written = target if os.path.exists(target) else os.path.join(work, f"reference-{primary_index(path)}.png")
        if result.returncode == 0 and os.path.exists(written):
            with Image.open(written) as image:
                if os.path.exists(icc) and "icc_profile" not in image.info:
                    with open(icc, "rb") as profile:
                        image.info["icc_profile"] = profile.read()
                if kind == "avif" and "icc_profile" not in image.info:
                    described = coded_profile(path)
                    if described:
                        image.info["icc_profile"] = described
                found.append((in_srgb(image), name))
        else:
            said = (result.stderr or result.stdout).decode(errors="replace").strip().splitlines()
            failures.append(f"{name}: {said[-1] if said else 'failed'}")
    return found, failures


PRIMARIES = {  # ITU-T H.273 code point: red, green, blue (x, y); white D65
    9: ((0.708, 0.292), (0.170, 0.797), (0.131, 0.046)),
    12: ((0.680, 0.320), (0.265, 0.690), (0.150, 0.060)),
}


def coded_profile(path):
    """An ICC profile for an AVIF's colour description when it is not sRGB's
    primaries (the reference decoders write their PNGs without one), made with
    lcms2; None otherwise."""
    info = run(["avifdec", "--info", path]).stdout.decode(errors="replace")
    fields = {key.strip(): value.strip() for key, value in
              (line.strip(" *").split(":", 1) for line in info.splitlines() if ":" in line and line.strip().startswith("*"))}
    try:
        primaries = int(fields.get("Color Primaries", ""))
        transfer = int(fields.get("Transfer Char.", ""))
    except ValueError:
        return None
    if primaries not in PRIMARIES or transfer not in (1, 6, 13, 14, 15):
        return None
    import ctypes
    lcms = ctypes.CDLL("liblcms2.so.2")

    class XYY(ctypes.Structure):
        _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("Y", ctypes.c_double)]

    class Triple(ctypes.Structure):
        _fields_ = [("r", XYY), ("g", XYY), ("b", XYY)]

    lcms.cmsBuildParametricToneCurve.restype = ctypes.c_void_p
    lcms.cmsBuildParametricToneCurve.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
    lcms.cmsCreateRGBProfile.restype = ctypes.c_void_p
    lcms.cmsCreateRGBProfile.argtypes = [ctypes.POINTER(XYY), ctypes.POINTER(Triple), ctypes.c_void_p * 3]
    lcms.cmsSaveProfileToMem.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
    # The sRGB curve (BT.709's is shown with it too, as browsers do).
    parameters = (ctypes.c_double * 5)(2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045)
    curve = lcms.cmsBuildParametricToneCurve(None, 4, parameters)
    red, green, blue = PRIMARIES[primaries]
    profile = lcms.cmsCreateRGBProfile(ctypes.byref(XYY(0.3127, 0.3290, 1.0)),
                                       ctypes.byref(Triple(XYY(*red, 1), XYY(*green, 1), XYY(*blue, 1))),
                                       (ctypes.c_void_p * 3)(curve, curve, curve))
    size = ctypes.c_uint32(0)
    lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), None, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(size.value)
    lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), buffer, ctypes.byref(size))
    return buffer.raw[:size.value]


def primary_index(path):
    """Which of a HEIF file's top-level images (1-based, heif-info's order) is its primary."""
    with contextlib.suppress(Exception):
        images = [line for line in run(["heif-info", path]).stdout.decode(errors="replace").splitlines()
                  if line.startswith("image:")]
        for index, line in enumerate(images, 1):
            if line.rstrip().endswith("primary"):
                return index
    return 1


def in_srgb(image):
    """RGBA in sRGB: through the embedded (or given) ICC profile, gray or RGB."""
    profile = image.info.get("icc_profile")
    if image.mode in ("I;16", "I;16B", "I"):
        image = image.point(lambda value: value / 257).convert("L")
    if image.mode == "P":
        image = image.convert("RGBA")
    if profile:
        with contextlib.suppress(Exception):
            source = ImageCms.ImageCmsProfile(io.BytesIO(profile))
            alpha = image.getchannel("A") if "A" in image.getbands() else None
            gray = source.profile.xcolor_space.strip() == "GRAY"
            base = image.convert("L" if gray else "RGB")
            converted = ImageCms.profileToProfile(base, source, ImageCms.createProfile("sRGB"), outputMode="RGB")
            if alpha is not None:
                converted.putalpha(alpha)
            image = converted
    return image.convert("RGBA")


def compare(mine, theirs):
    """Mean and largest channel difference, transparent pixels' colours ignored."""
    a, b = mine.tobytes(), theirs.tobytes()
    total, worst = 0, 0
    for index in range(0, len(a), 4):
        both_clear = a[index + 3] == 0 and b[index + 3] == 0
        for channel in range(3 if not both_clear else 0):
            difference = abs(a[index + channel] - b[index + channel])
            total += difference
            worst = max(worst, difference)
        difference = abs(a[index + 3] - b[index + 3])
        total += difference
        worst = max(worst, difference)
    return total / max(1, len(a)), worst


def check(binary, url, path, kind, work):
    """The outcome for one file and why: against each reference in turn, the best."""
    cache = os.path.join(work, "cache")
    thumb = os.path.join(work, "mine.png")  # the conversion to compare
    fetched = run([binary, "--cache-dir", cache, "--json", "fetch", url])
    lines = [json.loads(line) for line in fetched.stdout.decode().splitlines() if line.startswith("{")]
    references, failures = reference_images(kind, path, work)
    if fetched.returncode != 0 or not lines or "width" not in lines[0]:
        said = fetched.stderr.decode(errors="replace").strip().splitlines()
        return ("refused by imgcache" if references else "refused by both"), (said[-1] if said else "no answer")
    if not references:
        return "refused by the reference", "; ".join(failures)
    width, height = lines[0]["width"], lines[0]["height"]
    made = run([binary, "--cache-dir", cache, "fetch", "--format", "png", "-o", thumb, url])
    if made.returncode != 0:
        return "refused by imgcache", "thumbnail: " + made.stderr.decode(errors="replace").strip().splitlines()[-1]
    with Image.open(thumb) as image:
        mine = image.convert("RGBA")
    outcomes = []
    for reference, referee in references:
        if (width, height) != reference.size:
            outcomes.append(("size differs", f"imgcache {width}x{height}, {referee} {reference.size[0]}x{reference.size[1]}"))
            continue
        if mine.size != reference.size:
            outcomes.append(("size differs", f"imgcache wrote {mine.size[0]}x{mine.size[1]}, {referee} {reference.size[0]}x{reference.size[1]}"))
            continue
        mean, worst = compare(mine, reference)
        verdict = "agrees" if mean <= 3 and worst <= 48 else "pixels differ"
        outcomes.append((verdict, f"{referee}: mean {mean:.2f}, max {worst}"))
    rank = {"agrees": 0, "pixels differ": 1, "size differs": 2}
    return min(outcomes, key=lambda outcome: rank[outcome[0]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imgcache", default=".build/release/imgcache")
    parser.add_argument("--report")
    parser.add_argument("suites", nargs="+", metavar="NAME=FOLDER")
    arguments = parser.parse_args()
    out = []
    for suite in arguments.suites:
        name, folder = suite.split("=", 1)
        files = sorted(os.path.relpath(os.path.join(root, file), folder)
                       for root, _, names in os.walk(folder) for file in names
                       if os.path.splitext(file)[1].lower() in EXTENSIONS)
        outcomes = {}
        details = []
        with served(folder) as base:
            for relative in files:
                kind = EXTENSIONS[os.path.splitext(relative)[1].lower()]
                with tempfile.TemporaryDirectory() as work:
                    try:
                        outcome, detail = check(arguments.imgcache, base + urllib.parse.quote(relative),
                                                os.path.join(folder, relative), kind, work)
                    except subprocess.TimeoutExpired:
                        outcome, detail = "timed out", "over 60 s"
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if outcome != "agrees":
                    details.append(f"| {relative} | {outcome} | {detail.replace('|', '/')} |")
        out.append(f"### {name}: {len(files)} files, {outcomes.get('agrees', 0)} agree\n")
        out.append("| Outcome | Files |\n|---|---:|")
        out += [f"| {outcome} | {count} |" for outcome, count in sorted(outcomes.items(), key=lambda item: -item[1])]
        if details:
            out.append("\n| File | Outcome | Why |\n|---|---|---|")
            out += details
        out.append("")
    text = "\n".join(out)
    print(text)
    if arguments.report:
        with open(arguments.report, "w") as report:
            report.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
