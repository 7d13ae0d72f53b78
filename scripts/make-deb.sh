#!/bin/sh
# Builds imgcache_VERSION_ARCH.deb from the release binaries (make build) with
# dpkg-deb, into OUT (default: .build/deb), and prints its path.
#
#   scripts/make-deb.sh [OUT]
#
# The version is ImgCache.version, the one `imgcache --version` prints. Depends,
# Recommends and Suggests come from what the binaries load: the sonames they
# link (ELF NEEDED) and those they open on first use (the names in the binary),
# each mapped to the Debian package holding it here and to that package's
# shlibs line. Core libraries (downloads, the formats every run knows, the
# decode workers' seccomp) are Depends; the other formats' are Recommends, so
# `--no-install-recommends` gives a smaller imgcache that names what it lacks;
# Redis is Suggests.
set -eu

cd "$(dirname "$0")/.."
OUT=${1:-.build/deb}
BIN=.build/release/imgcache
SERVE=.build/release/imgcache-serve
for binary in "$BIN" "$SERVE"; do
    [ -x "$binary" ] || { echo "make-deb: $binary is missing (make build first)" >&2; exit 1; }
done

VERSION=$(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/ImgCacheCore/ImgCache.swift)
[ -n "$VERSION" ] || { echo "make-deb: no version in Sources/ImgCacheCore/ImgCache.swift" >&2; exit 1; }
REVISION=1
# Who answers for the package: DEBFULLNAME and DEBEMAIL, as Debian's tools take them.
MAINTAINER="${DEBFULLNAME:-imgcache maintainers} <${DEBEMAIL:-maintainers@imgcache.invalid}>"
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
NAME=imgcache_${VERSION}-${REVISION}_${ARCH}
# Reproducible: every date in the package is the last commit's.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

ROOT=$OUT/$NAME
rm -rf "$ROOT"
mkdir -p "$ROOT/DEBIAN"
umask 022

# The programs, stripped as Debian ships them (symbols stay in the build tree).
install -d "$ROOT/usr/bin" "$ROOT/usr/libexec/imgcache"
install -m 755 "$BIN" "$ROOT/usr/bin/imgcache"
install -m 755 "$SERVE" "$ROOT/usr/libexec/imgcache/imgcache-serve"
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$ROOT/usr/bin/imgcache" "$ROOT/usr/libexec/imgcache/imgcache-serve"

# The manual, the completions in Debian's paths, the units.
install -d "$ROOT/usr/share/man/man1" "$ROOT/usr/share/bash-completion/completions" \
    "$ROOT/usr/share/zsh/vendor-completions" "$ROOT/usr/share/fish/vendor_completions.d" "$ROOT/lib/systemd/system"
gzip -9n < Docs/imgcache.1 > "$ROOT/usr/share/man/man1/imgcache.1.gz"
install -m 644 completions/imgcache.bash "$ROOT/usr/share/bash-completion/completions/imgcache"
install -m 644 completions/_imgcache "$ROOT/usr/share/zsh/vendor-completions/_imgcache"
install -m 644 completions/imgcache.fish "$ROOT/usr/share/fish/vendor_completions.d/imgcache.fish"
install -m 644 packaging/systemd/*.service packaging/systemd/*.socket packaging/systemd/*.timer "$ROOT/lib/systemd/system/"

# The documents (the units' Documentation= links name them uncompressed), the
# copyright, and a changelog entry for this version.
DOC=$ROOT/usr/share/doc/imgcache
install -d "$DOC"
install -m 644 README.md Docs/*.md "$DOC/"
install -m 644 packaging/debian/copyright "$DOC/copyright"
{
    printf 'imgcache (%s-%s) unstable; urgency=medium\n\n' "$VERSION" "$REVISION"
    printf '  * imgcache %s, built from commit %s.\n\n' "$VERSION" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf ' -- %s  %s\n' "$MAINTAINER" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$DOC/changelog.Debian.gz"

install -d "$ROOT/usr/share/lintian/overrides"
install -m 644 packaging/debian/lintian-overrides "$ROOT/usr/share/lintian/overrides/imgcache"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$ROOT/DEBIAN/"

# The package holding SONAME here, with its shlibs version constraint when it has one.
dependency() {
    soname=$1
    file=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|AArch64|i386|,/ { print $NF; exit }')
    [ -n "$file" ] || { echo "make-deb: $soname is not installed here" >&2; exit 1; }
    package=""
    for candidate in "$file" "$(readlink -f "$file")" "/usr$file" "${file#/usr}"; do
        package=$(dpkg -S "$candidate" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$package" ] && break
    done
    [ -n "$package" ] || { echo "make-deb: no package holds $soname ($file)" >&2; exit 1; }
    base=${soname%%.so.*}
    major=${soname#*.so.}
    constraint=$(cat "/var/lib/dpkg/info/$package:$ARCH.shlibs" "/var/lib/dpkg/info/$package.shlibs" 2>/dev/null |
        awk -v b="$base" -v m="$major" '$1 == b && $2 == m { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }')
    echo "${constraint:-$package}"
}

SONAMES=$( { for binary in "$BIN" "$SERVE"; do
    readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
    strings -a "$binary" | grep -E '^lib[A-Za-z0-9_+-]+\.so\.[0-9][0-9.]*$'
done; } | sort -u)
# libcurl checks HTTPS against Debian's certificate bundle, which it only recommends: without it no
# https:// URL downloads, so it is a dependency here.
DEPENDS="ca-certificates\n" RECOMMENDS="" SUGGESTS=""
for soname in $SONAMES; do
    entry=$(dependency "$soname")
    case $soname in
        libhiredis.*) SUGGESTS="$SUGGESTS$entry\n" ;;
        libavif.*|libheif.*|libjxl.*|libjxl_threads.*|libtiff.*|librsvg-2.*|liblcms2.*|libarchive.*) RECOMMENDS="$RECOMMENDS$entry\n" ;;
        *) DEPENDS="$DEPENDS$entry\n" ;;
    esac
done
# One line each, sorted, a package named once (its strictest constraint is the last).
joined() { printf "$1" | sort -u | awk -F' ' '{ name[$1] = $0 } END { for (n in name) print name[n] }' | sort | paste -sd, | sed 's/,/, /g'; }

INSTALLED_SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
cat > "$ROOT/DEBIAN/control" <<EOF
Package: imgcache
Version: $VERSION-$REVISION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_SIZE
Depends: $(joined "$DEPENDS")
Recommends: $(joined "$RECOMMENDS")
Suggests: $(joined "$SUGGESTS")
Section: graphics
Priority: optional
Description: image fetch-and-cache tool and caching image server
 imgcache downloads images once and keeps them in a disk cache that many
 processes share safely: fetch one URL, prefetch lists from scripts, make
 thumbnails and other formats from the cached original, export data sets,
 and trim the cache from a timer. It checks every image before storing it and
 decodes in sandboxed worker processes.
 .
 imgcache serve is an image server over the same cache, speaking imgproxy's
 signed URL format. The package ships systemd units for it (not enabled) and
 a daily timer that trims the system cache, /var/cache/imgcache.
EOF

(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort | xargs md5sum) > "$ROOT/DEBIAN/md5sums"
chmod 644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/md5sums"
find "$ROOT" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT/$NAME.deb" >/dev/null
echo "$OUT/$NAME.deb"
