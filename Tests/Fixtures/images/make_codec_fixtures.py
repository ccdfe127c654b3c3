#!/usr/bin/env python3
"""Makes the small image files ParallaxImageTests decode (codec edge cases).

Plain Python (zlib, struct), no third-party packages. Run from this folder:
    python3 make_codec_fixtures.py
Pinned to Python 3.11 and zlib 1.2.13 (the compressed bytes depend on zlib's version).

- gray16.png: 16-bit gray, 8x4, sample (x*4096 + y*1000); 8-bit decoders keep the high byte.
- gray-alpha.png: 8-bit gray + alpha, 6x3, gray = 10*x + 40*y, alpha = 77; the alpha is dropped on read.
- palette.png: 4x2, 2-bit palette of red, green, blue, white; index = (x + y) % 4.
- gray16.pgm: 16-bit big-endian P5, 4x2, samples 7710*i (i = 0…7), maxval 65535, with a comment line.
"""
import os, struct, sys, zlib

PINNED = {"python": "3.11", "zlib": "1.2.13"}
found = {"python": "%d.%d" % sys.version_info[:2], "zlib": zlib.ZLIB_RUNTIME_VERSION}
if found != PINNED:
    sys.exit(f"make_codec_fixtures.py is pinned to {PINNED}, found {found}")
os.chdir(os.path.dirname(os.path.abspath(__file__)))

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

def png(path, width, height, depth, color, rows, extra=b""):
    raw = b"".join(b"\x00" + r for r in rows)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
    data += extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(path, "wb").write(data)

png("gray16.png", 8, 4, 16, 0,
    [b"".join(struct.pack(">H", x * 4096 + y * 1000) for x in range(8)) for y in range(4)])
png("gray-alpha.png", 6, 3, 8, 4,
    [bytes(v for x in range(6) for v in (10 * x + 40 * y, 77)) for y in range(3)])
palette = chunk(b"PLTE", bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]))
def packed(indices):  # 2 bits per pixel, first pixel in the high bits
    b = 0
    for i, v in enumerate(indices):
        b |= v << (6 - 2 * i)
    return bytes([b])
png("palette.png", 4, 2, 2, 3, [packed([(x + y) % 4 for x in range(4)]) for y in range(2)], palette)

with open("gray16.pgm", "wb") as f:
    f.write(b"P5\n# 16-bit sample\n4 2\n65535\n")
    for i in range(8):
        f.write(struct.pack(">H", 7710 * i))
