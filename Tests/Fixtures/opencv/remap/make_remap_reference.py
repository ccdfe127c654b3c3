#!/usr/bin/env python3
"""Reference outputs of cv2.remap for the Rectifier's bilinear kernel.

Rectifies OpenCV's sample pair left01.jpg / right01.jpg (Debian opencv-doc)
with OpenCV's own calibration of it (../opencv-sample-calibration.json):
cv2.stereoRectify (alpha -1, CALIB_ZERO_DISPARITY) -> cv2.initUndistortRectifyMap
(CV_32FC1) -> cv2.convertMaps (CV_16SC2) -> cv2.remap (INTER_LINEAR,
BORDER_CONSTANT 0).

Writes, per side (left, right):
- <side>-source.png  the decoded input (so both sides of the comparison read identical pixels)
- <side>-map.png     the float map as cv2.remap sees it after convertMaps: RGBA bytes
                     = little-endian int16 round(32 x), int16 round(32 y); -32768 where
                     the map is not finite. Dividing by 32 gives float maps that quantise
                     to exactly the same fixed-point map.
- <side>-opencv.png  cv2.remap's output.

Run from this folder: /tmp/cvenv/bin/python make_remap_reference.py
Needs Python 3.11 with opencv-python-headless 5.0.0 and numpy 2.4.6 (pinned below) and
Debian's opencv-doc. README.md in this folder describes every file.
"""
import json, os, sys
import cv2
import numpy as np

PINNED = {"python": "3.11", "opencv": "5.0.0", "numpy": "2.4.6"}
found = {"python": "%d.%d" % sys.version_info[:2], "opencv": cv2.__version__, "numpy": np.__version__}
if found != PINNED:
    sys.exit(f"{os.path.basename(__file__)} is pinned to {PINNED}, found {found}")

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/doc/opencv-doc/examples/data"
cal = json.load(open(os.path.join(HERE, "..", "opencv-sample-calibration.json")))

def camera(c):
    i = c["intrinsics"]
    K = np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1]], float)
    D = np.array(c["distortion"]["coefficients"], float)
    return K, D

K1, D1 = camera(cal["left"])
K2, D2 = camera(cal["right"])
ext = cal["extrinsics"]
R = np.array(ext["rotation"], float).reshape(3, 3)
T = np.array(ext["translation"], float).reshape(3, 1)
size = (cal["left"]["width"], cal["left"]["height"])
R1, R2, P1, P2, Q, roi1, roi2 = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, alpha=-1)

for side, K, D, Rr, P, name in (("left", K1, D1, R1, P1, "left01.jpg"), ("right", K2, D2, R2, P2, "right01.jpg")):
    mx, my = cv2.initUndistortRectifyMap(K, D, Rr, P, size, cv2.CV_32FC1)
    fixed, frac = cv2.convertMaps(mx, my, cv2.CV_16SC2)
    # The quantised position OpenCV interpolates at: integer part * 32 + fraction.
    qx = fixed[..., 0].astype(np.int32) * 32 + (frac & 31).astype(np.int32)
    qy = fixed[..., 1].astype(np.int32) * 32 + (frac >> 5).astype(np.int32)
    bad = ~(np.isfinite(mx) & np.isfinite(my)) | (np.abs(qx) > 32767) | (np.abs(qy) > 32767)
    qx[bad] = -32768
    qy[bad] = -32768
    packed = np.dstack([qx.astype("<i2").view(np.uint8).reshape(size[1], size[0], 2),
                        qy.astype("<i2").view(np.uint8).reshape(size[1], size[0], 2)])
    # cv2.imwrite takes BGRA: swap so that the file's R,G,B,A bytes are x lo, x hi, y lo, y hi.
    cv2.imwrite(os.path.join(HERE, f"{side}-map.png"), packed[..., [2, 1, 0, 3]], [cv2.IMWRITE_PNG_COMPRESSION, 9])
    src = cv2.imread(os.path.join(DATA, name), cv2.IMREAD_GRAYSCALE)
    cv2.imwrite(os.path.join(HERE, f"{side}-source.png"), src)
    out = cv2.remap(src, fixed, frac, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    cv2.imwrite(os.path.join(HERE, f"{side}-opencv.png"), out)
    print(side, "pixels", out.size, "undefined map entries", int(bad.sum()))
