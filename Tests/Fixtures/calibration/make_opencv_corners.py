#!/usr/bin/env python3
"""Writes opencv-sample-corners.json: OpenCV's findChessboardCorners + cornerSubPix
(11x11 window, as its stereo_calib sample) on every image of OpenCV's stereo sample
(Debian opencv-doc), 9x6 inner corners. Parallax's detector is compared with these.

    /tmp/cvenv/bin/python make_opencv_corners.py
"""
import json, os, sys
import cv2

if cv2.__version__ != "5.0.0":
    sys.exit(f"made with OpenCV 5.0.0; this is OpenCV {cv2.__version__}")

DATA = "/usr/share/doc/opencv-doc/examples/data"
NUMBERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
out = {"tool": f"OpenCV {cv2.__version__} findChessboardCorners(ADAPTIVE_THRESH|NORMALIZE_IMAGE) + cornerSubPix(11x11, 30 it, 0.01)",
       "board": [9, 6], "images": {}}
for side in ("left", "right"):
    for n in NUMBERS:
        name = f"{side}{n:02d}.jpg"
        img = cv2.imread(os.path.join(DATA, name), cv2.IMREAD_GRAYSCALE)
        ok, c = cv2.findChessboardCorners(img, (9, 6), cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE)
        if not ok:
            out["images"][name] = None
            continue
        c = cv2.cornerSubPix(img, c, (11, 11), (-1, -1), (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 30, 0.01))
        out["images"][name] = [[round(float(p[0]), 4), round(float(p[1]), 4)] for p in c.reshape(-1, 2)]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencv-sample-corners.json"), "w") as f:
    json.dump(out, f, indent=1)
