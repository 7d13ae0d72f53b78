#!/usr/bin/env bash
# Proves the Debian package on a clean machine: a Debian 12 root made with
# debootstrap from Debian's packages, the .deb installed there by apt (so its
# dependencies resolve from Debian alone), then, inside the root, against an
# nginx on loopback:
#   - without the recommended libraries: fetch and prefetch of the core formats,
#     and a format whose library is missing names its package;
#   - with them: every format, man imgcache, the bash completion, the clean
#     timer enabled, imgcache-clean.service's command and imgcache-serve's
#     (socket-activated, as a user of its own, no new privileges) from their units,
#     SERVE.md's key recipe;
#   - apt-get remove leaves no file behind but the cache.
# Needs root (chroot, mount) and Debian's mirror; everything is made under WORK.
#
#   scripts/package-test.sh DEB [WORK]
#
# A finished base root is kept in .build/package-root.tar, so that a second run
# on the same checkout skips debootstrap (CI's clean clone makes it anew).
set -euo pipefail

DEB=$(readlink -f "$1")
cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${2:-$(mktemp -d /tmp/imgcache-package.XXXXXX)}
ROOT=$WORK/root
BASE_TAR=$REPO/.build/package-root.tar
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
failures=0

if [ "$(id -u)" != 0 ]; then exec sudo -E "$0" "$@"; fi

pass() { echo "ok: $*"; }
fail() { echo "FAILED: $*" >&2; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

cleanup() {
    [ -n "${nginx_pid:-}" ] && kill "$nginx_pid" 2>/dev/null || true
    [ -n "${activator_pid:-}" ] && kill "$activator_pid" 2>/dev/null || true
    for mount in "$ROOT/srv/site" "$ROOT/proc" "$ROOT/dev"; do mountpoint -q "$mount" 2>/dev/null && umount -l "$mount"; done
    if [ "$failures" -gt 0 ] || [ "${finished:-}" != yes ]; then
        mkdir -p "$REPO/.build/package-test-logs" && cp "$WORK"/*.log "$REPO/.build/package-test-logs/" 2>/dev/null || true
        echo "the logs: .build/package-test-logs" >&2
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- A clean Debian 12 ---
mkdir -p "$ROOT"
if [ -f "$BASE_TAR" ]; then
    tar -xf "$BASE_TAR" -C "$ROOT"
else
    # systemd, man-db and bash-completion as on a Debian system people log in to; openssl for SERVE.md's recipe.
    debootstrap --variant=minbase --include=systemd,man-db,bash-completion,openssl,python3 bookworm "$ROOT" "$MIRROR" \
        > "$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; exit 1; }
    in_root apt-get clean
    mkdir -p "$(dirname "$BASE_TAR")"
    tar -cf "$BASE_TAR" -C "$ROOT" .
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
in_root apt-get update -q > "$WORK/apt.log" 2>&1 || { tail -n 20 "$WORK/apt.log" >&2; exit 1; }
# ca-certificates first, as on most machines: its postinst writes files no package holds, which would
# otherwise look left behind by imgcache's removal.
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q ca-certificates >> "$WORK/apt.log" 2>&1 \
    || { tail -n 20 "$WORK/apt.log" >&2; exit 1; }

# What is on the machine before the package (the folders apt and dpkg keep their records in aside).
files_now() {
    (cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./tmp -o -path ./var/lib/dpkg -o -path ./var/lib/apt \
        -o -path ./var/cache/apt -o -path ./var/cache/debconf -o -path ./var/log -o -path ./root -o -path ./srv \
        -o -path ./var/cache/man -o -path ./etc/ld.so.cache -o -path ./var/lib/systemd/deb-systemd-helper-masked \) -prune -o -print | sort)
}
files_now > "$WORK/before"

# The server run by ARGS... (systemd-socket-activate on $SERVE_PORT) in the background, once it listens.
start_server() {
    "$@" > "$WORK/serve.log" 2>&1 &
    activator_pid=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$SERVE_PORT") 2>/dev/null && break; sleep 0.05; done
}
stop_server() {
    local server
    server=$(pgrep -x imgcache-serve | head -n 1 || true)
    kill "$activator_pid" 2>/dev/null || true; [ -n "$server" ] && kill "$server" 2>/dev/null || true
    wait "$activator_pid" 2>/dev/null || true; activator_pid=""
}

# --- The images, served from the host's loopback (the root shares its network) ---
PORT=$(scripts/free-port.sh 18900)
mkdir -p "$WORK/site"
cp Tests/Fixtures/images/{photo.jpg,logo.png,sticker.webp,anim.gif} Tests/Fixtures/images/formats/{mono.avif,alpha.heic,lzw.tiff,editor.svg} "$WORK/site/"
scripts/nginx-serve.sh "$WORK/site" "$WORK/nginx" "$PORT" > "$WORK/nginx.log" 2>&1 &
nginx_pid=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
BASE=http://127.0.0.1:$PORT

# --- Installed without the recommended libraries ---
cp "$DEB" "$ROOT/tmp/"
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "/tmp/$(basename "$DEB")" \
    > "$WORK/install.log" 2>&1 || { tail -n 30 "$WORK/install.log" >&2; exit 1; }
pass "apt-get install --no-install-recommends ./$(basename "$DEB")"
HOME_IN_ROOT=/root
version=$(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/ImgCacheCore/ImgCache.swift)
check "imgcache --version says $version" test "$(in_root imgcache --version | head -n 1)" = "imgcache $version"
check "a user's cache is the XDG one" grep -q "^path: *$HOME_IN_ROOT/.cache/imgcache/default" <<< "$(in_root imgcache cache-info)"
in_root imgcache -q fetch -o /tmp/photo.jpg "$BASE/photo.jpg" && check "fetch writes the JPEG" cmp -s "$ROOT/tmp/photo.jpg" "$WORK/site/photo.jpg" \
    || fail "fetch $BASE/photo.jpg"
printf '%s\n' "$BASE/photo.jpg" "$BASE/logo.png" "$BASE/sticker.webp" "$BASE/anim.gif" > "$ROOT/tmp/core.txt"
check "prefetch of JPEG, PNG, WebP and GIF" in_root imgcache -q prefetch --thumbnail 32x32 /tmp/core.txt
avif=$(in_root imgcache fetch -o /tmp/x.avif --thumbnail 16x16 "$BASE/mono.avif" 2>&1 || true)
check "without libavif, AVIF names its package ($avif)" grep -q "install the libavif15 package" <<< "$avif"
check "--version names what is missing" grep -q "libheif *not available" <<< "$(in_root imgcache --version)"
# The server without libavif: a browser's Accept gets WebP, not an error.
SERVE_PORT=$(scripts/free-port.sh 18950)
start_server in_root systemd-socket-activate -l "127.0.0.1:$SERVE_PORT" imgcache serve --allow-unsigned --allow-private-sources
served=$(curl -s -o /dev/null -w '%{http_code} %{content_type}' -H 'Accept: image/avif,image/webp,image/apng,image/*,*/*;q=0.8' \
    "http://127.0.0.1:$SERVE_PORT/_/rs:fill:32:32/plain/$BASE/photo.jpg" || true)
check "without libavif, the server answers a browser with WebP ($served)" test "$served" = "200 image/webp"
stop_server

check "the clean timer is enabled" test -L "$ROOT/etc/systemd/system/timers.target.wants/imgcache-clean.timer"

# Removed: nothing left but the caches (and, later, the key file the admin made).
removed_cleanly() {
    in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q imgcache > "$WORK/remove.log" 2>&1 \
        || { tail -n 30 "$WORK/remove.log" >&2; exit 1; }
    files_now | grep -v -e '^\./var/cache/imgcache' -e '^\./etc/imgcache' > "$WORK/after"
    # A file an installed package holds (a dependency apt keeps) is not left behind.
    left=$(comm -13 "$1" "$WORK/after" | while read -r file; do in_root dpkg -S "${file#.}" >/dev/null 2>&1 || echo "$file"; done)
    check "apt-get remove leaves no file behind but the cache${left:+: $left}" test -z "$left"
}
removed_cleanly "$WORK/before"

# --- With the recommended libraries, installed first, then the package again ---
recommends=$(dpkg-deb -f "$DEB" Recommends | sed 's/([^)]*)//g; s/,/ /g')
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $recommends > "$WORK/recommends.log" 2>&1 \
    || { tail -n 30 "$WORK/recommends.log" >&2; exit 1; }
files_now > "$WORK/before-again"
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "/tmp/$(basename "$DEB")" > "$WORK/install.log" 2>&1 \
    || { tail -n 30 "$WORK/install.log" >&2; exit 1; }
printf '%s\n' "$BASE/mono.avif" "$BASE/alpha.heic" "$BASE/lzw.tiff" "$BASE/editor.svg" > "$ROOT/tmp/more.txt"
check "with the Recommends, AVIF, HEIC, TIFF and SVG" in_root imgcache -q prefetch --thumbnail 16x16 /tmp/more.txt
check "man imgcache" grep -q "imgcache prefetch" <<< "$(in_root man -P cat imgcache 2>/dev/null)"
completion=$(in_root bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader imgcache;
    COMP_WORDS=(imgcache pre); COMP_CWORD=1; COMP_LINE="imgcache pre"; COMP_POINT=12; _imgcache; echo "${COMPREPLY[*]}"')
check "bash completes 'imgcache pre' from its Debian path ($completion)" test "$completion" = prefetch
check "zsh and fish find theirs" test -f "$ROOT/usr/share/zsh/vendor-completions/_imgcache" -a -f "$ROOT/usr/share/fish/vendor_completions.d/imgcache.fish"
check "the clean timer is enabled" test -L "$ROOT/etc/systemd/system/timers.target.wants/imgcache-clean.timer"
check "the server is not enabled" test ! -e "$ROOT/etc/systemd/system/sockets.target.wants/imgcache-serve.socket"

# A unit's command as systemd runs it: its Environment= and ExecStart=, as a user of its own
# (DynamicUser) without new privileges, in the cache CacheDirectory= makes.
unit_value() { sed -n "s/^$2=//p" "$ROOT/lib/systemd/system/$1" | tail -n 1; }
as_service() { in_root setpriv --reuid 61874 --regid 61874 --clear-groups --no-new-privs env HOME=/ $(unit_value "$1" Environment) "${@:2}"; }
install -d -o 61874 -g 61874 -m 700 "$ROOT/var/cache/imgcache"
as_service imgcache-clean.service imgcache -q clean --max-size 10K --remember
as_service imgcache-clean.service imgcache -q prefetch /tmp/core.txt /tmp/more.txt
before_clean=$(as_service imgcache-clean.service imgcache list | wc -l)
read -r -a clean_command <<< "$(unit_value imgcache-clean.service ExecStart)"
check "imgcache-clean.service's command runs" as_service imgcache-clean.service "${clean_command[@]}"
after_clean=$(as_service imgcache-clean.service imgcache list | wc -l)
check "it trimmed to the remembered 10K ($before_clean entries, then $after_clean)" test "$after_clean" -lt "$before_clean"

# SERVE.md's recipe for the key (sudo and systemctl as in a chroot: the root's own, starting nothing).
recipe=$(awk '/^```sh no-test package/{on=1; next} /^```/{on=0} on' Docs/SERVE.md)
# (A chroot has no systemd running to start the socket: --now is left out there.)
check "SERVE.md's key recipe" in_root bash -ec "sudo() { if [ \"\$1\" = systemctl ]; then shift; local a=(); for x; do [ \"\$x\" = --now ] || a+=(\"\$x\"); done; systemctl \"\${a[@]}\"; else \"\$@\"; fi; }; $recipe"
check "it enabled the socket" test -L "$ROOT/etc/systemd/system/sockets.target.wants/imgcache-serve.socket"
# The server socket-activated as the unit describes, on a free port (origins on loopback allowed for this test).
read -r -a serve_command <<< "$(unit_value imgcache-serve.service ExecStart)"
key=$(sed -n 's/^IMGPROXY_KEY=//p' "$ROOT/etc/imgcache/serve.env")
salt=$(sed -n 's/^IMGPROXY_SALT=//p' "$ROOT/etc/imgcache/serve.env")
SERVE_PORT=$(scripts/free-port.sh 18950)
start_server as_service imgcache-serve.service env IMGPROXY_KEY="$key" IMGPROXY_SALT="$salt" \
    systemd-socket-activate -E IMGCACHE_DIR -E IMGPROXY_KEY -E IMGPROXY_SALT -l "127.0.0.1:$SERVE_PORT" "${serve_command[@]}" --allow-private-sources
path="/rs:fill:40:30/plain/$BASE/photo.jpg@webp"
signature=$(python3 -c 'import base64,hashlib,hmac,sys; k,s,p=sys.argv[1:]; print(base64.urlsafe_b64encode(hmac.new(bytes.fromhex(k), bytes.fromhex(s)+p.encode(), hashlib.sha256).digest()).rstrip(b"=").decode())' "$key" "$salt" "$path")
served=$(curl -s -o "$WORK/served.webp" -w '%{http_code} %{content_type}' "http://127.0.0.1:$SERVE_PORT/$signature$path" || true)
check "the socket-activated server answers a signed URL ($served)" test "$served" = "200 image/webp"
forged=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SERVE_PORT/forged$path" || true)
check "and refuses a forged one ($forged)" test "$forged" = 403
# Its decode worker (kept between variants) under its own seccomp filter, inside the unit's sandbox.
server=$(pgrep -x imgcache-serve | head -n 1 || true)
worker=$( [ -n "$server" ] && pgrep -P "$server" | head -n 1 || true)
filters=$( [ -n "$worker" ] && grep -E '^(Seccomp|NoNewPrivs):' "/proc/$worker/status" | tr -s '\t\n' '  ' || true)
check "the server's decode worker runs under seccomp, without new privileges ($filters)" grep -q "NoNewPrivs: 1 Seccomp: 2" <<< "$filters"
stop_server

# --- Removed again ---
removed_cleanly "$WORK/before-again"
check "the cache stays" test -d "$ROOT/var/cache/imgcache"
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q imgcache > "$WORK/purge.log" 2>&1 || { tail -n 30 "$WORK/purge.log" >&2; exit 1; }
check "apt-get purge takes the system cache" test ! -e "$ROOT/var/cache/imgcache"

finished=yes
if [ "$failures" -gt 0 ]; then echo "package test: $failures failed" >&2; exit 1; fi
echo "package test: passed"
