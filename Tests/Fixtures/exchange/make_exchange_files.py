#!/usr/bin/env python3
"""Writes calibration files as other tools write them, for one known stereo rig, so
Parallax's readers are tested on files Parallax did not write:

- opencv/stereo.yml: cv2.FileStorage, every key of OpenCV's stereo_calib sample (M1 D1 M2 D2
  R T R1 R2 P1 P2 Q) plus image_width and image_height; R1..Q from cv2.stereoRectify.
- opencv/stereo-python-names.yml: the same rig under the names OpenCV's Python API uses
  (K1 D1 K2 D2 R T), with the size.
- opencv/intrinsics.yml + opencv/extrinsics.yml: the two files of OpenCV's stereo_calib
  sample (M1 D1 M2 D2; R T R1 R2 P1 P2 Q), no image size.
- opencv/intrinsics-with-size.yml: intrinsics.yml with image_width and image_height added, the
  form `--calibration intrinsics.yml,extrinsics.yml` needs.
- opencv/stereo-rodrigues.yml: R as a 3x1 Rodrigues vector (cv2.Rodrigues), as some tools store it.
- ros-camera_info_manager/{left,right}.yaml: ROS camera_info as camera_calibration_parsers
  (yaml-cpp, used by camera_info_manager) lays it out: a block mapping of image_width,
  image_height, camera_name, camera_matrix, distortion_model, distortion_coefficients,
  rectification_matrix, projection_matrix, each matrix a block mapping of rows, cols and a
  flow list of data with every digit. Emitted with PyYAML. Integral values are written as
  integers, as yaml-cpp writes them.
- ros-camera_calibration/{left,right}.yaml: the text ROS's camera_calibration writes
  (numpy.array2string with precision 5 for K and P, 8 for R, "%8f" for D, lists continued on
  lines indented by 8 spaces), built here from that documented layout.
- kalibr/camchain.yaml: a Kalibr camchain in Kalibr's documented layout (cam0, cam1 with
  T_cn_cnm1, camera_model pinhole, intrinsics [fu, fv, pu, pv], distortion_model radtan,
  distortion_coeffs [k1, k2, r1, r2], resolution [w, h], rostopic). Parallax does not read
  Kalibr files; the test checks that it names this one as a Kalibr camchain.

The rig: 1280x720 cameras with different intrinsics, non-zero k1, k2, p1, p2, k3 on both
sides and a skew of 0.75 on the right camera; R from the Rodrigues vector below, T in
millimetres in the OpenCV files and in metres in the ROS and Kalibr files (ROS and Kalibr
measure in metres). Every value written, as PyYAML reads it back from the files, is stored in
values.json, which the Swift tests compare against field by field.

    /tmp/cvenv/bin/python make_exchange_files.py
"""
import json
import os
import sys

import cv2
import numpy as np
import yaml

if cv2.__version__ != "5.0.0" or np.__version__ != "2.4.6" or yaml.__version__ != "6.0.3":
    sys.exit(f"made with OpenCV 5.0.0, numpy 2.4.6, PyYAML 6.0.3; this is {cv2.__version__}, {np.__version__}, {yaml.__version__}")

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = (1280, 720)
K1 = np.array([[1402.5, 0.0, 655.25], [0.0, 1398.125, 361.75], [0.0, 0.0, 1.0]])
D1 = np.array([[-0.171, 0.0265, 0.00081, -0.00043, -0.0021]])
K2 = np.array([[1411.75, 0.75, 628.5], [0.0, 1409.375, 352.625], [0.0, 0.0, 1.0]])
D2 = np.array([[-0.163, 0.0242, -0.00052, 0.00037, 0.0017]])
RVEC = np.array([[0.0042], [-0.0117], [0.0023]])
R, _ = cv2.Rodrigues(RVEC)
T_MM = np.array([[-119.8], [0.42], [-0.87]])
T_M = T_MM / 1000


def rows(m):
    return [float(v) for v in np.asarray(m, np.float64).reshape(-1)]


def path(*parts):
    p = os.path.join(HERE, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def storage(name, entries):
    fs = cv2.FileStorage(path("opencv", name), cv2.FILE_STORAGE_WRITE)
    for key, value in entries:
        fs.write(key, value)
    fs.release()


R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(K1, D1, K2, D2, SIZE, R, T_MM, flags=cv2.CALIB_ZERO_DISPARITY, alpha=0)
size_entries = [("image_width", SIZE[0]), ("image_height", SIZE[1])]
rectification = [("R1", R1), ("R2", R2), ("P1", P1), ("P2", P2), ("Q", Q)]
storage("stereo.yml", size_entries + [("M1", K1), ("D1", D1), ("M2", K2), ("D2", D2), ("R", R), ("T", T_MM)] + rectification)
storage("stereo-python-names.yml", size_entries + [("K1", K1), ("D1", D1), ("K2", K2), ("D2", D2), ("R", R), ("T", T_MM)])
storage("intrinsics.yml", [("M1", K1), ("D1", D1), ("M2", K2), ("D2", D2)])
storage("intrinsics-with-size.yml", size_entries + [("M1", K1), ("D1", D1), ("M2", K2), ("D2", D2)])
storage("extrinsics.yml", [("R", R), ("T", T_MM)] + rectification)
storage("stereo-rodrigues.yml", size_entries + [("M1", K1), ("D1", D1), ("M2", K2), ("D2", D2), ("R", RVEC), ("T", T_MM)])

# ROS: the rectification of the same rig with T in metres (P2[0][3] = -f' * B, B in metres).
ros_R1, ros_R2, ros_P1, ros_P2, _, _, _ = cv2.stereoRectify(K1, D1, K2, D2, SIZE, R, T_M, flags=cv2.CALIB_ZERO_DISPARITY, alpha=0)
ros_cameras = {"left": ("narrow_stereo/left", K1, D1, ros_R1, ros_P1), "right": ("narrow_stereo/right", K2, D2, ros_R2, ros_P2)}


class FlowList(list):
    pass


yaml.SafeDumper.add_representer(FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def yaml_cpp_number(v):
    v = float(v)
    return int(v) if v.is_integer() else v


def matrix(m):
    m = np.asarray(m, np.float64)
    return {"rows": m.shape[0], "cols": m.shape[1], "data": FlowList(yaml_cpp_number(v) for v in m.reshape(-1))}


for side, (name, K, D, Rr, P) in ros_cameras.items():
    info = {"image_width": SIZE[0], "image_height": SIZE[1], "camera_name": name, "camera_matrix": matrix(K),
            "distortion_model": "plumb_bob", "distortion_coefficients": matrix(D), "rectification_matrix": matrix(Rr),
            "projection_matrix": matrix(P)}
    with open(path("ros-camera_info_manager", f"{side}.yaml"), "w") as f:
        yaml.dump(info, f, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False)


def numpy_list(m, precision):
    text = np.array2string(np.asarray(m), precision=precision, suppress_small=True, separator=", ")
    return "[" + text.replace("[", "").replace("]", "").replace("\n", "\n        ") + "]"


for side, (name, K, D, Rr, P) in ros_cameras.items():
    lines = [f"image_width: {SIZE[0]}", f"image_height: {SIZE[1]}", f"camera_name: {name}",
             "camera_matrix:", "  rows: 3", "  cols: 3", "  data: " + numpy_list(K, 5),
             "distortion_model: plumb_bob",
             "distortion_coefficients:", "  rows: 1", f"  cols: {D.size}", "  data: [" + ", ".join("%8f" % x for x in D.flat) + "]",
             "rectification_matrix:", "  rows: 3", "  cols: 3", "  data: " + numpy_list(Rr, 8),
             "projection_matrix:", "  rows: 3", "  cols: 4", "  data: " + numpy_list(P, 5), ""]
    with open(path("ros-camera_calibration", f"{side}.yaml"), "w") as f:
        f.write("\n".join(lines))

# Kalibr: cam1's T_cn_cnm1 takes cam0 coordinates into cam1's, OpenCV's [R | T] in metres.
T_cn_cnm1 = np.vstack([np.hstack([R, T_M]), [[0.0, 0.0, 0.0, 1.0]]])
camchain = {
    "cam0": {"camera_model": "pinhole", "intrinsics": FlowList(rows([K1[0, 0], K1[1, 1], K1[0, 2], K1[1, 2]])),
             "distortion_model": "radtan", "distortion_coeffs": FlowList(rows(D1[0, :4])), "resolution": FlowList(SIZE),
             "rostopic": "/cam0/image_raw"},
    "cam1": {"T_cn_cnm1": [FlowList(rows(r)) for r in T_cn_cnm1], "camera_model": "pinhole",
             "intrinsics": FlowList(rows([K2[0, 0], K2[1, 1], K2[0, 2], K2[1, 2]])), "distortion_model": "radtan",
             "distortion_coeffs": FlowList(rows(D2[0, :4])), "resolution": FlowList(SIZE), "rostopic": "/cam1/image_raw"},
}
with open(path("kalibr", "camchain.yaml"), "w") as f:
    yaml.dump(camchain, f, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False)


def read_ros(folder):
    out = {}
    for side in ("left", "right"):
        with open(path(folder, f"{side}.yaml")) as f:
            info = yaml.safe_load(f)
        for key in ("camera_matrix", "distortion_coefficients", "rectification_matrix", "projection_matrix"):
            info[key]["data"] = [float(v) for v in info[key]["data"]]
        out[side] = info
    return out


values = {
    "tool": f"OpenCV {cv2.__version__}, numpy {np.__version__}, PyYAML {yaml.__version__}",
    "size": list(SIZE),
    "left": {"K": rows(K1), "D": rows(D1)},
    "right": {"K": rows(K2), "D": rows(D2)},
    "rvec": rows(RVEC),
    "R": rows(R),
    "T_mm": rows(T_MM),
    "T_m": rows(T_M),
    "opencv_rectification": {"R1": rows(R1), "R2": rows(R2), "P1": rows(P1), "P2": rows(P2), "Q": rows(Q)},
    "ros-camera_info_manager": read_ros("ros-camera_info_manager"),
    "ros-camera_calibration": read_ros("ros-camera_calibration"),
}
with open(path("values.json"), "w") as f:
    json.dump(values, f, indent=1)
    f.write("\n")
print("wrote", ", ".join(sorted(os.path.relpath(os.path.join(d, n), HERE) for d, _, ns in os.walk(HERE) for n in ns if not n.endswith(".py"))))
