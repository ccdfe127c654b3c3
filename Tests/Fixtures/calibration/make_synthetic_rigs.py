#!/usr/bin/env python3
"""Writes synthetic-rigs.json: chessboard corners of known rigs, projected by OpenCV
(cv2.projectPoints, cv2.fisheye.projectPoints), not by Parallax, so the calibration tests
check Parallax's solver against an independent camera model.

Every rig sees an 11x8 inner-corner board with 30 mm squares; corner i sits at
((i % 11) * 30, (i // 11) * 30, 0) mm in the board frame (OpenCV's object-point order).
Board poses (board -> left camera: rvec, tvec in mm) are drawn with numpy's default_rng from a
fixed seed and kept only when every corner is in front of both cameras and at least MARGIN px
inside both 640x480 images. The right camera sees x_r = R x_l + T. Corners are noise-free
(the tests add their own seeded noise) and stored with every digit of the double.

- "brown5_stereo": both cameras Brown-Conrady k1, k2, p1, p2, k3 (all non-zero, different per
  side), 20 poses;
- "fisheye_stereo": both cameras Kannala-Brandt k1..k4 (cv2.fisheye), 12 poses;
- "rational_mono": one camera with OpenCV's rational model (k1, k2, p1, p2, k3, k4, k5, k6), 15 poses.

For each rig: "left" (and "right") with "K" (3x3 row-major), "D", "size" [w, h]; for stereo
rigs "R" (3x3 row-major) and "T"; "views", each with "rvec", "tvec" and the "left" (and
"right") corners as [x, y] pixels.

    /tmp/cvenv/bin/python make_synthetic_rigs.py
"""
import json
import os
import sys

import cv2
import numpy as np

if cv2.__version__ != "5.0.0" or np.__version__ != "2.4.6":
    sys.exit(f"made with OpenCV 5.0.0 and numpy 2.4.6; this is OpenCV {cv2.__version__}, numpy {np.__version__}")

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS, ROWS, SQUARE = 11, 8, 30.0
SIZE = (640, 480)
BOARD = np.array([[(i % COLUMNS) * SQUARE, (i // COLUMNS) * SQUARE, 0.0] for i in range(COLUMNS * ROWS)])
CENTRE = np.array([(COLUMNS - 1) * SQUARE / 2, (ROWS - 1) * SQUARE / 2, 0.0])


def matrix(fx, fy, cx, cy):
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def project(points, rvec, tvec, K, D, fisheye):
    if fisheye:
        return cv2.fisheye.projectPoints(points.reshape(-1, 1, 3), rvec, tvec, K, D)[0].reshape(-1, 2)
    return cv2.projectPoints(points, rvec, tvec, K, D)[0].reshape(-1, 2)


def in_view(points, rvec, tvec, K, D, fisheye, margin):
    R, _ = cv2.Rodrigues(rvec)
    if ((BOARD @ R.T + tvec)[:, 2] <= 0).any():
        return None
    pixels = project(points, rvec, tvec, K, D, fisheye)
    inside = (pixels[:, 0] > margin) & (pixels[:, 1] > margin) & (pixels[:, 0] < SIZE[0] - margin) & (pixels[:, 1] < SIZE[1] - margin)
    return pixels if inside.all() else None


def rig(seed, count, cameras, fisheye, tilt, distance, offset, margin, extrinsics=None):
    """`cameras`: [(K, D)] for left (and right); `extrinsics`: (rvec, T) left -> right."""
    rng = np.random.default_rng(seed)
    views = []
    while len(views) < count:
        rvec = rng.uniform(-np.array(tilt), np.array(tilt))
        R, _ = cv2.Rodrigues(rvec)
        d = rng.uniform(*distance)
        tvec = np.array([rng.uniform(*offset[0]) * d, rng.uniform(*offset[1]) * d, d]) - R @ CENTRE
        poses = [(rvec, tvec)]
        if extrinsics is not None:
            Rlr, _ = cv2.Rodrigues(extrinsics[0])
            right_rvec, _ = cv2.Rodrigues(Rlr @ R)
            poses.append((right_rvec.reshape(3), Rlr @ tvec + extrinsics[1]))
        seen = [in_view(BOARD, r, t, K, D, fisheye, margin) for (r, t), (K, D) in zip(poses, cameras)]
        if any(s is None for s in seen):
            continue
        view = {"rvec": [float(v) for v in rvec], "tvec": [float(v) for v in tvec]}
        for name, pixels in zip(("left", "right"), seen):
            view[name] = [[float(x), float(y)] for x, y in pixels]
        views.append(view)
    out = {}
    for name, (K, D) in zip(("left", "right"), cameras):
        out[name] = {"size": list(SIZE), "K": [float(v) for v in K.reshape(-1)], "D": [float(v) for v in np.ravel(D)]}
    if extrinsics is not None:
        Rlr, _ = cv2.Rodrigues(extrinsics[0])
        out["rvec"] = [float(v) for v in extrinsics[0]]
        out["R"] = [float(v) for v in Rlr.reshape(-1)]
        out["T"] = [float(v) for v in extrinsics[1]]
    out["views"] = views
    return out


fisheye_extrinsics = (np.array([0.005, -0.01, 0.002]), np.array([-80.0, 0.5, 0.3]))
result = {
    "tool": f"OpenCV {cv2.__version__}, numpy {np.__version__}",
    "board": {"columns": COLUMNS, "rows": ROWS, "square": SQUARE, "unit": "mm"},
    "brown5_stereo": rig(
        seed=7, count=20,
        cameras=[(matrix(520, 515, 322, 236), np.array([-0.25, 0.09, 0.001, -0.0005, -0.012])),
                 (matrix(525, 522, 315, 245), np.array([-0.22, 0.06, -0.0008, 0.0004, 0.008]))],
        fisheye=False, tilt=[0.9, 0.9, 0.4], distance=(280, 460), offset=((-0.2, 0.12), (-0.15, 0.15)), margin=10,
        extrinsics=(np.array([0.01, -0.02, 0.005]), np.array([-65.0, 0.8, -1.2]))),
    "fisheye_stereo": rig(
        seed=17, count=12,
        cameras=[(matrix(320, 320, 321, 238), np.array([0.04, -0.01, 0.001, 0.0002])),
                 (matrix(318, 319, 317, 243), np.array([0.035, -0.008, 0.0015, -0.0003]))],
        fisheye=True, tilt=[0.8, 0.8, 0.3], distance=(250, 420), offset=((-0.3, 0.2), (-0.2, 0.2)), margin=5,
        extrinsics=fisheye_extrinsics),
    "rational_mono": rig(
        seed=8, count=15,
        cameras=[(matrix(480, 482, 321, 238), np.array([0.3, -0.1, 0.0005, -0.0003, 0.0, 0.6, -0.05, 0.0]))],
        fisheye=False, tilt=[0.8, 0.8, 0.4], distance=(300, 500), offset=((-0.15, 0.15), (-0.12, 0.12)), margin=5),
}
with open(os.path.join(HERE, "synthetic-rigs.json"), "w") as f:
    json.dump(result, f)
    f.write("\n")
print({k: len(v["views"]) for k, v in result.items() if isinstance(v, dict) and "views" in v})
