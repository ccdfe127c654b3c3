#!/usr/bin/env python3
"""Writes OpenCV FileStorage files as OpenCV itself writes them, from the OpenCV
calibration of its stereo sample (Tests/Fixtures/opencv/opencv-sample-calibration.json):

- opencv-stereo.yml: every key of OpenCV's stereo_calib sample in one file
  (M1 D1 M2 D2 R T R1 R2 P1 P2 Q) plus image_width/image_height;
- opencv-intrinsics.yml and opencv-extrinsics.yml: the sample's two files exactly.

    /tmp/cvenv/bin/python make_opencv_examples.py
"""
import json, os
import cv2
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
c = json.load(open(os.path.join(here, "../../Tests/Fixtures/opencv/opencv-sample-calibration.json")))

def K(cam):
    i = cam["intrinsics"]
    return np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1]], dtype=np.float64)

M1, M2 = K(c["left"]), K(c["right"])
D1 = np.array([c["left"]["distortion"]["coefficients"]], dtype=np.float64)
D2 = np.array([c["right"]["distortion"]["coefficients"]], dtype=np.float64)
R = np.array(c["extrinsics"]["rotation"], dtype=np.float64).reshape(3, 3)
T = np.array(c["extrinsics"]["translation"], dtype=np.float64).reshape(3, 1)
size = (c["left"]["width"], c["left"]["height"])
R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(M1, D1, M2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, alpha=-1)

fs = cv2.FileStorage(os.path.join(here, "opencv-stereo.yml"), cv2.FILE_STORAGE_WRITE)
fs.write("image_width", size[0]); fs.write("image_height", size[1])
for k, v in [("M1", M1), ("D1", D1), ("M2", M2), ("D2", D2), ("R", R), ("T", T), ("R1", R1), ("R2", R2), ("P1", P1), ("P2", P2), ("Q", Q)]:
    fs.write(k, v)
fs.release()
fs = cv2.FileStorage(os.path.join(here, "opencv-intrinsics.yml"), cv2.FILE_STORAGE_WRITE)
for k, v in [("M1", M1), ("D1", D1), ("M2", M2), ("D2", D2)]:
    fs.write(k, v)
fs.release()
fs = cv2.FileStorage(os.path.join(here, "opencv-extrinsics.yml"), cv2.FILE_STORAGE_WRITE)
for k, v in [("R", R), ("T", T), ("R1", R1), ("R2", R2), ("P1", P1), ("P2", P2), ("Q", Q)]:
    fs.write(k, v)
fs.release()
