#!/usr/bin/env python3
"""Calibrates OpenCV's own stereo sample (Debian opencv-doc) with OpenCV, the way
its stereo_calib sample does, and writes the result as a Parallax calibration
file: opencv-sample-calibration.json.

Run from this folder with Python 3.11, opencv-python-headless 5.0.0 and numpy 2.4.6
(pinned below):
    python3 -m venv /tmp/cvenv && /tmp/cvenv/bin/pip install opencv-python-headless==5.0.0 numpy==2.4.6
    /tmp/cvenv/bin/python make_sample_calibration.py
The stored file is an input to other fixtures and tests; README.md in this folder says how
closely a re-run reproduces it and why it is not regenerated.
"""
import json, os, sys
import cv2
import numpy as np

PINNED = {"python": "3.11", "opencv": "5.0.0", "numpy": "2.4.6"}
found = {"python": "%d.%d" % sys.version_info[:2], "opencv": cv2.__version__, "numpy": np.__version__}
if found != PINNED:
    sys.exit(f"{os.path.basename(__file__)} is pinned to {PINNED}, found {found}")

DATA = "/usr/share/doc/opencv-doc/examples/data"
PAIRS = [f"{i:02d}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14)]
BOARD = (9, 6)

def corners(path):
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    ok, c = cv2.findChessboardCorners(img, BOARD, cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE)
    if not ok:
        return None, img.shape[::-1]
    c = cv2.cornerSubPix(img, c, (11, 11), (-1, -1), (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 30, 0.01))
    return c, img.shape[::-1]

obj = np.zeros((BOARD[0] * BOARD[1], 3), np.float32)
obj[:, :2] = np.mgrid[0:BOARD[0], 0:BOARD[1]].T.reshape(-1, 2)
objpoints, lpts, rpts = [], [], []
for p in PAIRS:
    l, size = corners(os.path.join(DATA, f"left{p}.jpg"))
    r, _ = corners(os.path.join(DATA, f"right{p}.jpg"))
    if l is None or r is None:
        print("skipping pair", p, file=sys.stderr)
        continue
    objpoints.append(obj); lpts.append(l); rpts.append(r)

K1 = cv2.initCameraMatrix2D(objpoints, lpts, size, 0)
K2 = cv2.initCameraMatrix2D(objpoints, rpts, size, 0)
flags = (cv2.CALIB_FIX_ASPECT_RATIO | cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_USE_INTRINSIC_GUESS |
         cv2.CALIB_SAME_FOCAL_LENGTH | cv2.CALIB_RATIONAL_MODEL | cv2.CALIB_FIX_K3 | cv2.CALIB_FIX_K4 | cv2.CALIB_FIX_K5)
rms, K1, D1, K2, D2, R, T, E, F = cv2.stereoCalibrate(
    objpoints, lpts, rpts, K1, None, K2, None, size, flags=flags,
    criteria=(cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-5))

def camera(K, D):
    return {"width": size[0], "height": size[1],
            "intrinsics": {"fx": K[0, 0], "fy": K[1, 1], "cx": K[0, 2], "cy": K[1, 2], "skew": K[0, 1]},
            "distortion": {"model": "brown", "coefficients": [float(v) for v in D.ravel()[:8]]}}

out = {"format": "parallax-stereo-calibration", "version": 1,
       "left": camera(K1, D1), "right": camera(K2, D2),
       "extrinsics": {"rotation": [float(v) for v in R.ravel()], "translation": [float(v) for v in T.ravel()]},
       "provenance": {"tool": f"OpenCV {cv2.__version__} stereoCalibrate (stereo_calib sample flags)",
                      "pairs": len(objpoints), "rms": rms,
                      "images": "/usr/share/doc/opencv-doc/examples/data/left01..right14.jpg"}}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencv-sample-calibration.json"), "w") as f:
    json.dump(out, f, indent=2)
print("pairs", len(objpoints), "rms", rms)
