#!/usr/bin/python3
"""Writes a namespace of N entries in imgcache's on-disk format, for benchmarks.

  scripts/make-namespace.py NAMESPACE_DIR N OLD_FRACTION

Each entry is a small JPEG-signed file `<shard>/<md5>.jpg` whose metadata is the
`user.imgcache` extended attribute, as imgcache writes it. The first
OLD_FRACTION of the entries are marked last used 30 days ago, the rest now.
"""
import hashlib
import os
import sys
import time

directory, count, old_fraction = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
now = time.time()
body = b"\xff\xd8\xff\xe0" + b"\x00" * 1996
for shard in range(256):
    os.makedirs(os.path.join(directory, "%02x" % shard), mode=0o700, exist_ok=True)
for index in range(count):
    key = "http://127.0.0.1/bench/%d.jpg" % index
    digest = hashlib.md5(key.encode()).hexdigest()
    path = os.path.join(directory, digest[:2], digest + ".jpg")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(descriptor, body)
    inode = os.fstat(descriptor).st_ino
    metadata = "imgcache-entry 1\nfile %s.jpg\ninode %d\nsize %d\nkey %s\nformat jpeg\nstored %f\n" % (
        digest, inode, len(body), key, now)
    os.setxattr(descriptor, "user.imgcache", metadata.encode())
    os.close(descriptor)
    used = now - 30 * 86400 if index < count * old_fraction else now
    os.utime(path, (used, used))
open(os.path.join(directory, "lock"), "a").close()
