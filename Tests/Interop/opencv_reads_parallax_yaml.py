#!/usr/bin/env python3
"""OpenCV reads the stereo YAML Parallax writes (`calibrate --opencv-yaml`).

    opencv_reads_parallax_yaml.py RIG.json RIG.yml

RIG.json and RIG.yml are one calibration written by Parallax. cv2.FileStorage must open the
YAML as it is (its `%YAML:1.0` line included) and read every matrix as the JSON has it, to
the bit: both are decimal text of the same doubles, and both parsers round correctly. Then
cv2.stereoRectify on what OpenCV read must give the R1, R2, P1, P2 and Q the file carries,
within the bound below of each matrix's largest entry. Exits 1 on any difference.

The bound. Both compute in double precision along the same steps, so they differ by the
rounding of a few dozen operations (2e-14, the figure StereoRectificationTests measures on
OpenCV's fixture rigs) plus two roundings that the steps magnify: the rotation angle of R,
θ = acos((trace R − 1) / 2), and the tilt of the baseline off the x axis, φ = acos(|Tx| / |T|).
acos near 1 turns an error δ in its argument into δ / sin of the angle. (trace R − 1) / 2 is
a sum of three numbers near 1, then exact steps: at most 5 unit roundoffs (u = 2^-53) apart
between two implementations; |Tx| / |T| (squares, a sum, a root, a quotient) at most 3 u.
So the bound is 2e-14 + u (5 / sin θ + 3 / sin φ). A real calibration's rig is nearly
parallel (θ of a few milliradians), where this is several times 2e-14; unlike the fixture
rigs, the calibration here is solved afresh on the machine (OpenBLAS picks its kernels by
CPU), so which way those roundings fall changes from CPU to CPU. A change of method moves
the matrices by 1e-6 or more, far beyond it.
"""
import json
import sys

import cv2
import numpy as np

rig_json, rig_yaml = sys.argv[1], sys.argv[2]
calibration = json.load(open(rig_json))
storage = cv2.FileStorage(rig_yaml, cv2.FILE_STORAGE_READ)
if not storage.isOpened():
    sys.exit(f"interop: OpenCV {cv2.__version__} cannot open {rig_yaml}")
failures = []


def matrix(name):
    node = storage.getNode(name)
    if node.empty():
        failures.append(f"{name}: not in {rig_yaml}")
        return None
    return node.mat()


def camera_matrix(side):
    i = calibration[side]["intrinsics"]
    return np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1]], dtype=np.float64)


def same_bits(name, read, expected):
    if read is None:
        return
    expected = np.asarray(expected, dtype=np.float64).reshape(read.shape)
    if not np.array_equal(read, expected):
        failures.append(f"{name}: OpenCV read {read.ravel().tolist()}, the JSON has {expected.ravel().tolist()}")


width, height = int(storage.getNode("image_width").real()), int(storage.getNode("image_height").real())
if (width, height) != (calibration["left"]["width"], calibration["left"]["height"]):
    failures.append(f"image size: OpenCV read {width}x{height}")
# The unit Parallax records beside OpenCV's keys: OpenCV reads it as a plain string.
# A unitless calibration writes no key (OpenCV then reads an empty string).
unit = storage.getNode("translation_unit").string()
if unit != calibration.get("unit", "unitless").replace("unitless", ""):
    failures.append(f"translation_unit: OpenCV read {unit!r}, the JSON says {calibration.get('unit')!r}")
M1, D1, M2, D2 = matrix("M1"), matrix("D1"), matrix("M2"), matrix("D2")
R, T = matrix("R"), matrix("T")
same_bits("M1", M1, camera_matrix("left"))
same_bits("M2", M2, camera_matrix("right"))
same_bits("D1", D1, calibration["left"]["distortion"]["coefficients"])
same_bits("D2", D2, calibration["right"]["distortion"]["coefficients"])
same_bits("R", R, calibration["extrinsics"]["rotation"])
same_bits("T", T, calibration["extrinsics"]["translation"])

worst = 0.0
bound = None
if not failures:
    u = 2.0 ** -53
    theta = float(np.linalg.norm(cv2.Rodrigues(R)[0]))
    phi = float(np.arccos(min(1.0, abs(T.ravel()[0]) / np.linalg.norm(T))))
    bound = 2e-14 + u * (5 / max(np.sin(theta), u) + 3 / max(np.sin(phi), u))
    r1, r2, p1, p2, q, _, _ = cv2.stereoRectify(M1, D1, M2, D2, (width, height), R, T, flags=cv2.CALIB_ZERO_DISPARITY, alpha=-1)
    for name, mine in [("R1", r1), ("R2", r2), ("P1", p1), ("P2", p2), ("Q", q)]:
        stored = matrix(name)
        if stored is None:
            continue
        difference = float(np.max(np.abs(stored - mine)) / np.max(np.abs(mine)))
        worst = max(worst, difference)
        if difference > bound:
            failures.append(f"{name}: the file's differs from cv2.stereoRectify's by {difference:.3g} of its largest entry "
                            f"(bound {bound:.3g}: rotation {theta:.3g} rad, baseline tilt {phi:.3g} rad)")

for failure in failures:
    print("interop:", failure)
if failures:
    sys.exit(1)
print(f"interop: OpenCV {cv2.__version__} read {rig_yaml}: M1, D1, M2, D2, R, T equal the JSON's to the bit, translation_unit {unit!r}; "
      f"stereoRectify on them gives the file's R1, R2, P1, P2, Q within {worst:.2g} of each matrix's largest entry "
      f"(bound {bound:.2g}: rotation {theta:.3g} rad, baseline tilt {phi:.3g} rad)")
