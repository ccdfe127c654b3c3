#!/usr/bin/env python3
"""Reference figures for ParallaxGeometryTests, produced by OpenCV.

    cd Tests/ParallaxGeometryTests/Fixtures
    /tmp/cvenv/bin/python make_fixtures.py

Needs Python 3.11 with opencv-python-headless 5.0.0 and numpy 2.4.6 (pinned below: the
script refuses other versions, so a regenerated fixture is comparable with this one).
What each output file holds is described in README.md in this folder.
"""
import json, os, struct, sys
import cv2
import numpy as np

PINNED = {"python": "3.11", "opencv": "5.0.0", "numpy": "2.4.6"}
found = {"python": "%d.%d" % sys.version_info[:2], "opencv": cv2.__version__, "numpy": np.__version__}
if found != PINNED:
    sys.exit(f"make_fixtures.py is pinned to {PINNED}, found {found}; regenerate only with the pinned versions")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
STEP = 16
GENERATOR = (f"make_fixtures.py with OpenCV {cv2.__version__}, numpy {np.__version__}, "
             f"Python {sys.version.split()[0]}")

def load(path):
    with open(path) as f:
        return json.load(f)

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

# The rigs: OpenCV's own calibration of its stereo sample, then made-up rigs that exercise
# a vertical baseline, a few degrees of rotation about every axis, the rational model and fisheye.
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

with open(os.path.join(HERE, "stereo-rectify-reference.json"), "w") as f:
    json.dump({"generator": f"make_fixtures.py with OpenCV {cv2.__version__}", "rigs": rigs, "cases": cases,
               "fisheye_cases": fisheye_cases}, f, indent=1)

# Maps: the float32 values initUndistortRectifyMap writes (CV_32FC1), bit for bit, at the
# samples below. Stored as little-endian float32 in rectify-maps-reference.f32, not as
# decimal text, so a test can tell a one-ulp difference from an exact match.
def samples(size):
    w, h = size
    xs = list(range(0, w, STEP)) + [w - 1]
    ys = list(range(0, h, STEP)) + [h - 1]
    ring = ([(x, 0) for x in range(w)] + [(x, h - 1) for x in range(w)] +
            [(0, y) for y in range(1, h - 1)] + [(w - 1, y) for y in range(1, h - 1)])
    return xs, ys, ring

floats = []
def store(mx, my, xs, ys, ring):
    for m in (mx, my):
        floats.extend(m[y, x] for y in ys for x in xs)
    for m in (mx, my):
        floats.extend(m[y, x] for x, y in ring)

maps = []
def map_set(rig, key, value, R1, R2, P1, P2, initUndistortRectifyMap):
    K1, D1, K2, D2, R, T, size = unpack(rigs[rig])
    xs, ys, ring = samples(size)
    entry = {"rig": rig, key: value, "xs": xs, "ys": ys, "ring_count": len(ring), "offset": len(floats)}
    for K, D, Rk, Pk in ((K1, D1, R1, P1), (K2, D2, R2, P2)):
        mx, my = initUndistortRectifyMap(K, D, Rk, Pk, size, cv2.CV_32FC1)
        assert mx.dtype == np.float32 and np.isfinite(mx).all() and np.isfinite(my).all()
        store(mx, my, xs, ys, ring)
    maps.append(entry)

for rig, alpha in (("opencv-sample", 0.0), ("vertical", 1.0), ("rotated", -1.0), ("rational", 0.0)):
    K1, D1, K2, D2, R, T, size = unpack(rigs[rig])
    R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, alpha=alpha)
    map_set(rig, "alpha", alpha, R1, R2, P1, P2, cv2.initUndistortRectifyMap)
K1, D1, K2, D2, R, T, size = unpack(rigs["fisheye"])
R1, R2, P1, P2, Q = cv2.fisheye.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, balance=0.0)
map_set("fisheye", "balance", 0.0, R1, R2, P1, P2, cv2.fisheye.initUndistortRectifyMap)

with open(os.path.join(HERE, "rectify-maps-reference.f32"), "wb") as f:
    f.write(np.asarray(floats, dtype="<f4").tobytes())
with open(os.path.join(HERE, "rectify-maps-reference.json"), "w") as f:
    json.dump({"generator": GENERATOR, "step": STEP, "values": "rectify-maps-reference.f32",
               "layout": "per map set, from `offset` (in float32 values): for the left camera, then the right: "
                         "x at the grid (row-major over ys, then xs), y at the grid, x along the ring, y along the ring; "
                         "the ring is row 0 left to right, row h-1 left to right, then columns 0 and w-1 top to bottom "
                         "without their first and last rows",
               "maps": maps}, f, indent=1)
print(len(cases), "rectify cases,", len(fisheye_cases), "fisheye cases,", len(maps), "map sets,", len(floats), "map values")
