#!/usr/bin/env bash
# Installs the Python packages the tests need when python3 cannot import them
# yet: moto's S3-compatible server (with boto3, which sets it up) and the
# wsgidav WebDAV server (with cheroot, which serves it), and imgproxy's URL builder; with
# --bench, those the format benchmark needs instead: Pillow 11.3+ (which reads
# AVIF), pillow-heif and pillow-jxl-plugin; with --img2dataset [VENV], img2dataset
# in a virtual environment (default .build/img2dataset).
#
#   scripts/pip-install.sh [--bench | --img2dataset [VENV]]
set -euo pipefail
if [ "${1:-}" = --img2dataset ]; then
    # img2dataset 1.47, the thumbnail benchmark's reference, in a virtual environment of its own
    # (its dependencies pin versions the other packages do not want).
    venv=${2:-.build/img2dataset}
    [ -x "$venv/bin/img2dataset" ] && exit 0
    python3 -m venv "$venv" 2>/dev/null || { scripts/apt-install.sh python3-venv; python3 -m venv "$venv"; }
    echo "Installing: img2dataset 1.47 (Python, into $venv)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'img2dataset==1.47.0'
    exit 0
fi
packages=('moto[server]>=5,<6' 'wsgidav>=4,<5' cheroot pyarrow webdataset pillow 'imgproxy==1.0.0')
check='import moto.server, boto3, flask, wsgidav, cheroot, pyarrow, webdataset, PIL, imgproxy'
if [ "${1:-}" = --bench ]; then
    packages=('pillow>=11.3' pillow-heif pillow-jxl-plugin)
    check='import PIL, pillow_heif, pillow_jxl; from PIL import features; assert features.check("avif")'
fi
python3 -c "$check" 2>/dev/null && exit 0
if ! python3 -m pip --version >/dev/null 2>&1; then
    scripts/apt-install.sh python3-pip
fi
echo "Installing: ${packages[*]} (Python)"
# Debian's own python3 refuses a plain pip install (PEP 668); a pyenv or venv python does not need the flag.
flags=()
python3 -m pip install --help 2>/dev/null | grep -q -- '--break-system-packages' && \
    python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix and sys.prefix.startswith("/usr") else 1)' && \
    flags+=(--break-system-packages)
python3 -m pip install --quiet --disable-pip-version-check "${flags[@]}" "${packages[@]}"
