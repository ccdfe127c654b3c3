#!/usr/bin/env python3
"""Writes opencv-sample-stereo-calibration.json: OpenCV's own stereo calibration of its
stereo sample, solved on the corners in opencv-sample-corners.json (OpenCV's detector), so
Parallax's solver can be compared with OpenCV's on exactly the same observations.

Two solves, both with the corners as float32 (OpenCV's calibration takes only float32
points; the Swift test rounds the JSON's values to float32 the same way):

- "brown5_joint": the model Parallax fits by default (`calibrate --model brown5`): per camera
  fx, fy, cx, cy (no skew) and k1, k2, p1, p2, k3, all free. cv2.calibrateCamera per side with
  no flags (OpenCV's default model is exactly that), then cv2.stereoCalibrate with
  CALIB_USE_INTRINSIC_GUESS only, so the intrinsics and distortion of both cameras, R, T and
  every board pose are refined together (Parallax's joint refinement, FixedIntrinsics.none).
  "mono_left" and "mono_right" keep each calibrateCamera result (Parallax's MonoCalibrator).
  The termination criteria are tight (1000 iterations, eps 1e-15) so the stored values are the
  converged minimum, not where a loose criterion stopped.
- "stereo_calib_sample_flags": the flags of OpenCV's stereo_calib sample (initCameraMatrix2D,
  then FIX_ASPECT_RATIO | ZERO_TANGENT_DIST | USE_INTRINSIC_GUESS | SAME_FOCAL_LENGTH |
  RATIONAL_MODEL | FIX_K3 | FIX_K4 | FIX_K5, criteria 100 iterations, eps 1e-5), for the RMS
  the README quotes.

Matrices are stored row-major; D is [k1, k2, p1, p2, k3] (brown5_joint) or OpenCV's 8 rational
coefficients (sample flags). R and T map left-camera coordinates into the right camera
(x_r = R x_l + T), in board squares (square size 1).

    /tmp/cvenv/bin/python make_opencv_stereo_calibration.py
"""
import json
import os
import sys

import cv2
import numpy as np

if cv2.__version__ != "5.0.0" or np.__version__ != "2.4.6":
    sys.exit(f"made with OpenCV 5.0.0 and numpy 2.4.6; this is OpenCV {cv2.__version__}, numpy {np.__version__}")

HERE = os.path.dirname(os.path.abspath(__file__))
NUMBERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
BOARD = (9, 6)
SIZE = (640, 480)

corners = json.load(open(os.path.join(HERE, "opencv-sample-corners.json")))["images"]
names = [(f"left{n:02d}.jpg", f"right{n:02d}.jpg") for n in NUMBERS]
for pair in names:
    for name in pair:
        if corners.get(name) is None or len(corners[name]) != BOARD[0] * BOARD[1]:
            sys.exit(f"{name}: no full board in opencv-sample-corners.json")

board = np.zeros((BOARD[0] * BOARD[1], 3), np.float32)
board[:, :2] = np.mgrid[0:BOARD[0], 0:BOARD[1]].T.reshape(-1, 2)
objects = [board.reshape(-1, 1, 3)] * len(names)
left = [np.array(corners[l], np.float32).reshape(-1, 1, 2) for l, _ in names]
right = [np.array(corners[r], np.float32).reshape(-1, 1, 2) for _, r in names]

TIGHT = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 1000, 1e-15)


def rows(m):
    return [float(v) for v in np.asarray(m, np.float64).reshape(-1)]


def stereo(rms, K1, D1, K2, D2, R, T):
    return {"rms": float(rms), "K1": rows(K1), "D1": rows(D1), "K2": rows(K2), "D2": rows(D2), "R": rows(R), "T": rows(T)}


out = {
    "tool": f"OpenCV {cv2.__version__}, numpy {np.__version__}",
    "corners": "opencv-sample-corners.json",
    "pairs": [list(p) for p in names],
    "board": list(BOARD),
    "square": 1.0,
    "size": list(SIZE),
}

# Parallax's default model, every parameter free, joint refinement.
rms_l, K1, D1, _, _ = cv2.calibrateCamera(objects, left, SIZE, None, None, criteria=TIGHT)
rms_r, K2, D2, _, _ = cv2.calibrateCamera(objects, right, SIZE, None, None, criteria=TIGHT)
# stereoCalibrate writes its result into the arrays it is given: keep the mono results apart.
mono = {"mono_left": {"rms": float(rms_l), "K": rows(K1), "D": rows(D1)},
        "mono_right": {"rms": float(rms_r), "K": rows(K2), "D": rows(D2)}}
result = cv2.stereoCalibrate(objects, left, right, K1, D1, K2, D2, SIZE, flags=cv2.CALIB_USE_INTRINSIC_GUESS, criteria=TIGHT)
out["brown5_joint"] = {
    "flags": "calibrateCamera(flags=0) per side, then stereoCalibrate(CALIB_USE_INTRINSIC_GUESS), criteria (COUNT+EPS, 1000, 1e-15)",
    **mono,
    **stereo(*result[:7]),
}

# OpenCV's stereo_calib sample.
K1 = cv2.initCameraMatrix2D(objects, left, SIZE, 0)
K2 = cv2.initCameraMatrix2D(objects, right, SIZE, 0)
flags = (cv2.CALIB_FIX_ASPECT_RATIO | cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_USE_INTRINSIC_GUESS | cv2.CALIB_SAME_FOCAL_LENGTH
         | cv2.CALIB_RATIONAL_MODEL | cv2.CALIB_FIX_K3 | cv2.CALIB_FIX_K4 | cv2.CALIB_FIX_K5)
result = cv2.stereoCalibrate(objects, left, right, K1, None, K2, None, SIZE, flags=flags,
                             criteria=(cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-5))
out["stereo_calib_sample_flags"] = {
    "flags": "initCameraMatrix2D, then stereoCalibrate(FIX_ASPECT_RATIO | ZERO_TANGENT_DIST | USE_INTRINSIC_GUESS | SAME_FOCAL_LENGTH"
             " | RATIONAL_MODEL | FIX_K3 | FIX_K4 | FIX_K5), criteria (COUNT+EPS, 100, 1e-5)",
    **stereo(*result[:7]),
}

with open(os.path.join(HERE, "opencv-sample-stereo-calibration.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(f"brown5_joint rms {out['brown5_joint']['rms']:.6f}, stereo_calib flags rms {out['stereo_calib_sample_flags']['rms']:.6f}")
