#!/usr/bin/env python3
"""Reference figures for ParallaxGeometryTests, produced by OpenCV.

    /tmp/cvenv/bin/python make_fixtures.py      # a venv with opencv-python-headless and numpy

Writes:
  stereo-rectify-reference.json  cv2.stereoRectify (and cv2.fisheye.stereoRectify) outputs
                                 for several rigs and options, with the calibrations used
  rectify-maps-reference.json    cv2.initUndistortRectifyMap float maps (CV_32FC1),
                                 sampled every STEP pixels plus the last row and column
The rigs: OpenCV's own calibration of its stereo sample images (Tests/Fixtures/opencv/
opencv-sample-calibration.json), a vertical-baseline rig, a rig rotated by several
degrees about each axis, a rational-model rig and a fisheye rig.
"""
import json, os
import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
STEP = 16

def load(path):
    return json.load(open(path))

def camera_json(K, D, size, model="brown"):
    return {"width": size[0], "height": size[1],
            "intrinsics": {"fx": float(K[0, 0]), "fy": float(K[1, 1]), "cx": float(K[0, 2]), "cy": float(K[1, 2]), "skew": 0.0},
            "distortion": {"model": model, "coefficients": [float(v) for v in np.ravel(D)]}}

def calib_json(K1, D1, K2, D2, R, T, size, model="brown"):
    return {"format": "parallax-stereo-calibration", "version": 1,
            "left": camera_json(K1, D1, size, model), "right": camera_json(K2, D2, size, model),
            "extrinsics": {"rotation": [float(v) for v in np.ravel(R)], "translation": [float(v) for v in np.ravel(T)]}}

def unpack(c):
    def cam(d):
        i = d["intrinsics"]
        K = np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1.0]])
        return K, np.array(d["distortion"]["coefficients"], dtype=np.float64)
    K1, D1 = cam(c["left"]); K2, D2 = cam(c["right"])
    R = np.array(c["extrinsics"]["rotation"]).reshape(3, 3)
    T = np.array(c["extrinsics"]["translation"]).reshape(3, 1)
    return K1, D1, K2, D2, R, T, (c["left"]["width"], c["left"]["height"])

rigs = {}
sample = load(os.path.join(ROOT, "Fixtures", "opencv", "opencv-sample-calibration.json"))
sample.pop("provenance", None)
rigs["opencv-sample"] = sample

size = (640, 480)
K1 = np.array([[610.0, 0, 322.5], [0, 612.0, 238.0], [0, 0, 1]])
K2 = np.array([[605.0, 0, 317.0], [0, 606.5, 243.5], [0, 0, 1]])
D1 = np.array([-0.28, 0.09, 0.0012, -0.0008, -0.012])
D2 = np.array([-0.26, 0.07, -0.0005, 0.0011, -0.008])
R_small, _ = cv2.Rodrigues(np.array([0.004, -0.006, 0.002]))
rigs["vertical"] = calib_json(K1, D1, K2, D2, R_small, np.array([0.8, -62.0, 1.5]), size)
R_rot, _ = cv2.Rodrigues(np.radians(np.array([3.0, -4.0, 5.0])))
rigs["rotated"] = calib_json(K1, D1, K2, D2, R_rot, np.array([-118.0, 4.0, -6.0]), size)
D1r = np.array([0.35, -0.2, 0.0004, -0.0003, 0.01, 0.62, -0.18, 0.05])
D2r = np.array([0.31, -0.15, -0.0002, 0.0005, 0.008, 0.58, -0.12, 0.04])
rigs["rational"] = calib_json(K1, D1r, K2, D2r, R_small, np.array([-60.0, 0.5, 0.8]), size)
Kf1 = np.array([[330.0, 0, 319.5], [0, 331.0, 239.5], [0, 0, 1]])
Kf2 = np.array([[328.0, 0, 322.0], [0, 329.0, 236.0], [0, 0, 1]])
Df1 = np.array([0.03, -0.01, 0.004, -0.001]); Df2 = np.array([0.025, -0.008, 0.003, -0.0008])
rigs["fisheye"] = calib_json(Kf1, Df1, Kf2, Df2, R_small, np.array([-64.0, 0.3, 0.6]), size, "fisheye")

cases = []
def add(rig, alpha=-1.0, new_size=(0, 0), zero_disparity=True):
    K1, D1, K2, D2, R, T, size = unpack(rigs[rig])
    flags = cv2.CALIB_ZERO_DISPARITY if zero_disparity else 0
    R1, R2, P1, P2, Q, roi1, roi2 = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, flags=flags, alpha=alpha, newImageSize=new_size)
    cases.append({"rig": rig, "alpha": alpha, "new_size": list(new_size), "zero_disparity": zero_disparity,
                  "R1": R1.ravel().tolist(), "R2": R2.ravel().tolist(), "P1": P1.ravel().tolist(),
                  "P2": P2.ravel().tolist(), "Q": Q.ravel().tolist(), "roi1": list(roi1), "roi2": list(roi2)})

for a in (-1.0, 0.0, 0.5, 1.0):
    add("opencv-sample", alpha=a)
    add("vertical", alpha=a)
    add("rotated", alpha=a)
add("opencv-sample", alpha=0.0, new_size=(800, 600))
add("opencv-sample", alpha=1.0, new_size=(320, 240))
add("opencv-sample", alpha=-1.0, zero_disparity=False)
add("vertical", alpha=0.5, zero_disparity=False)
add("rational", alpha=0.0)

fisheye_cases = []
for balance in (0.0, 0.5, 1.0):
    K1, D1, K2, D2, R, T, size = unpack(rigs["fisheye"])
    R1, R2, P1, P2, Q = cv2.fisheye.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, balance=balance, fov_scale=1.0)
    fisheye_cases.append({"rig": "fisheye", "balance": balance, "fov_scale": 1.0,
                          "R1": R1.ravel().tolist(), "R2": R2.ravel().tolist(), "P1": P1.ravel().tolist(),
                          "P2": P2.ravel().tolist(), "Q": Q.ravel().tolist()})

json.dump({"generator": f"make_fixtures.py with OpenCV {cv2.__version__}", "rigs": rigs, "cases": cases,
           "fisheye_cases": fisheye_cases},
          open(os.path.join(HERE, "stereo-rectify-reference.json"), "w"), indent=1)

maps = []
for rig, alpha in (("opencv-sample", 0.0), ("vertical", 1.0), ("rotated", -1.0), ("rational", 0.0)):
    K1, D1, K2, D2, R, T, size = unpack(rigs[rig])
    R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, alpha=alpha)
    xs = list(range(0, size[0], STEP)) + [size[0] - 1]
    ys = list(range(0, size[1], STEP)) + [size[1] - 1]
    entry = {"rig": rig, "alpha": alpha, "xs": xs, "ys": ys}
    for side, (K, D, Rk, Pk) in (("left", (K1, D1, R1, P1)), ("right", (K2, D2, R2, P2))):
        mx, my = cv2.initUndistortRectifyMap(K, D, Rk, Pk, size, cv2.CV_32FC1)
        entry[side + "_x"] = [round(float(mx[y, x]), 5) for y in ys for x in xs]
        entry[side + "_y"] = [round(float(my[y, x]), 5) for y in ys for x in xs]
    maps.append(entry)
K1, D1, K2, D2, R, T, size = unpack(rigs["fisheye"])
R1, R2, P1, P2, Q = cv2.fisheye.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, balance=0.0)
xs = list(range(0, size[0], STEP)) + [size[0] - 1]
ys = list(range(0, size[1], STEP)) + [size[1] - 1]
entry = {"rig": "fisheye", "balance": 0.0, "xs": xs, "ys": ys}
for side, (K, D, Rk, Pk) in (("left", (K1, D1, R1, P1)), ("right", (K2, D2, R2, P2))):
    mx, my = cv2.fisheye.initUndistortRectifyMap(K, D, Rk, Pk, size, cv2.CV_32FC1)
    entry[side + "_x"] = [round(float(mx[y, x]), 5) for y in ys for x in xs]
    entry[side + "_y"] = [round(float(my[y, x]), 5) for y in ys for x in xs]
entry["P1"] = P1.ravel().tolist(); entry["P2"] = P2.ravel().tolist(); entry["R1"] = R1.ravel().tolist(); entry["R2"] = R2.ravel().tolist()
maps.append(entry)
json.dump({"generator": f"make_fixtures.py with OpenCV {cv2.__version__}", "step": STEP, "maps": maps},
          open(os.path.join(HERE, "rectify-maps-reference.json"), "w"))
print(len(cases), "rectify cases,", len(fisheye_cases), "fisheye cases,", len(maps), "map sets")
