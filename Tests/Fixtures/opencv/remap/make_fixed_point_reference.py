#!/usr/bin/env python3
"""OpenCV's fixed-point maps and remap output for float maps whose positions are not on
the 1/32-pixel grid, so that the rounding of every position matters.

    cd Tests/Fixtures/opencv/remap
    /tmp/cvenv/bin/python make_fixed_point_reference.py

Needs Python 3.11 with opencv-python-headless 5.0.0 and numpy 2.4.6 (pinned below) and
Debian's opencv-doc for the sample image. Two maps:

- random-*: a 96 x 64 map over an 80 x 60 source: random float32 positions from a fixed seed
  (mostly across the source and a little beyond every edge), exact ties of the 1/32 grid
  (k + 1/2)/32 of both signs, positions on and next to the border thresholds, NaN,
  infinities and far-away values.
- calibration-*: the top-left 160 x 120 block of the left map of OpenCV's sample
  calibration (../opencv-sample-calibration.json) rectified with alpha 1, which keeps every
  source pixel and so reads across the image's edge in that corner; the source is the
  sample's left01.jpg as decoded in left-source.png.

For each: the float map (<name>-map.f32: little-endian float32, all x then all y,
row-major), cv2.convertMaps' CV_16SC2 + CV_16UC1 output (<name>-fixed.i16: little-endian
int16 x, y per entry; <name>-fraction.u16: little-endian uint16 (fy << 5) | fx), and
cv2.remap's output through those fixed-point maps (INTER_LINEAR, BORDER_CONSTANT 0) as
PNG: gray for both, and for the random map also 3- and 4-channel images.
"""
import json, os, sys
import cv2
import numpy as np

PINNED = {"python": "3.11", "opencv": "5.0.0", "numpy": "2.4.6"}
found = {"python": "%d.%d" % sys.version_info[:2], "opencv": cv2.__version__, "numpy": np.__version__}
if found != PINNED:
    sys.exit(f"make_fixed_point_reference.py is pinned to {PINNED}, found {found}")

HERE = os.path.dirname(os.path.abspath(__file__))

def write_raw(name, array, dtype):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(np.ascontiguousarray(array, dtype=dtype).tobytes())

def write_png(name, image):
    # PNG is lossless; cv2 stores 3- and 4-channel arrays in the file as RGB(A), i.e. with
    # the first and third channels swapped, for the source and the output alike.
    assert cv2.imwrite(os.path.join(HERE, name), image, [cv2.IMWRITE_PNG_COMPRESSION, 9])

def reference(name, mx, my, sources, write_sources=True):
    assert mx.dtype == np.float32 and my.dtype == np.float32 and mx.shape == my.shape
    write_raw(f"{name}-map.f32", np.stack([mx, my]), "<f4")
    fixed, fraction = cv2.convertMaps(mx, my, cv2.CV_16SC2)
    assert fixed.dtype == np.int16 and fraction.dtype == np.uint16
    write_raw(f"{name}-fixed.i16", fixed, "<i2")
    write_raw(f"{name}-fraction.u16", fraction, "<u2")
    for label, src in sources:
        if write_sources:
            write_png(f"{name}-source-{label}.png", src)
        out = cv2.remap(src, fixed, fraction, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        write_png(f"{name}-remap-{label}.png", out)
    print(name, mx.shape[::-1], "map entries;", int((~np.isfinite(mx) | ~np.isfinite(my)).sum()), "not finite")

# The random map.
rng = np.random.default_rng(20261123)
W, H, SW, SH = 96, 64, 80, 60
mx = rng.uniform(-2.5, SW + 1.5, (H, W)).astype(np.float32)
my = rng.uniform(-2.5, SH + 1.5, (H, W)).astype(np.float32)
special_x = []
# Ties of the 1/32 grid: 32 x is k + 1/2 exactly (float32 holds these exactly).
for k in rng.integers(-60, 32 * SW + 40, 40):
    special_x.append((k + 0.5) / 32)
# On and beside the thresholds where taps leave the source.
for t in (-1.0, 0.0, SW - 1.0, float(SW)):
    for d in (-1 / 64, -1 / 128, -1e-6, 0.0, 1e-6, 1 / 128, 1 / 64):
        special_x.append(t + d)
special_x += [np.nan, np.inf, -np.inf, 1e6, -1e6, 32767.9, -32768.4, 40000.0, -40000.0, 70000.0, -70000.0]
special_y = [float(v) / SW * SH for v in special_x[:40]]
for t in (-1.0, 0.0, SH - 1.0, float(SH)):
    for d in (-1 / 64, -1 / 128, -1e-6, 0.0, 1e-6, 1 / 128, 1 / 64):
        special_y.append(t + d)
special_y += [np.nan, 40000.0, -70000.0]
# Rows 0-1: special x with random y; rows 2-3: random x with special y; row 4: both special
# (NaN or far values in one coordinate only included).
flat = lambda a: a.reshape(-1)
sx = np.array(special_x, np.float32); sy = np.array(special_y, np.float32)
flat(mx[0:2])[:sx.size] = sx
flat(my[2:4])[:sy.size] = sy
n = min(sx.size, sy.size)
mx[4, :n] = sx[:n]; my[4, :n] = sy[:n]
gray = rng.integers(0, 256, (SH, SW), dtype=np.uint8)
bgr = rng.integers(0, 256, (SH, SW, 3), dtype=np.uint8)
bgra = rng.integers(0, 256, (SH, SW, 4), dtype=np.uint8)
reference("random", mx, my, [("gray", gray), ("bgr", bgr), ("bgra", bgra)])

# The real calibration's map, cropped.
with open(os.path.join(HERE, "..", "opencv-sample-calibration.json")) as f:
    cal = json.load(f)
def camera(c):
    i = c["intrinsics"]
    K = np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1]], float)
    return K, np.array(c["distortion"]["coefficients"], float)
K1, D1 = camera(cal["left"]); K2, D2 = camera(cal["right"])
R = np.array(cal["extrinsics"]["rotation"], float).reshape(3, 3)
T = np.array(cal["extrinsics"]["translation"], float).reshape(3, 1)
size = (cal["left"]["width"], cal["left"]["height"])
R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, alpha=1)
full_x, full_y = cv2.initUndistortRectifyMap(K1, D1, R1, P1, size, cv2.CV_32FC1)
source = cv2.imread(os.path.join(HERE, "left-source.png"), cv2.IMREAD_GRAYSCALE)
assert source is not None and source.shape == (size[1], size[0])
reference("calibration", np.ascontiguousarray(full_x[:120, :160]), np.ascontiguousarray(full_y[:120, :160]),
          [("gray", source)], write_sources=False)
