#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz targets: Fuzz/corpus/<target>/.

Run from this folder with the OpenCV 5.0.0 virtualenv (used only to encode the JPEG seeds):

    /tmp/cvenv/bin/python make_seeds.py

Every other seed is plain Python or a copy of a file in Calibration/examples. The seeds are
small valid and near-valid inputs; libFuzzer's own corpus grows in .build-fuzz/corpus.
"""
import os
import shutil
import struct
import zlib

import cv2
import numpy

assert cv2.__version__ == "5.0.0", f"made with OpenCV 5.0.0, found {cv2.__version__}"
assert numpy.__version__ == "2.4.6", f"made with numpy 2.4.6, found {numpy.__version__}"

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "Calibration", "examples")


def write(target, name, data):
    folder = os.path.join(HERE, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def example(name):
    with open(os.path.join(EXAMPLES, name), "rb") as f:
        return f.read()


# calibration-json: Parallax JSON, valid and a few near misses; one YAML for the sniffing.
parallax_json = example("parallax-calibration.json")
write("calibration-json", "example.json", parallax_json)
write("calibration-json", "opencv-sample.json", example("opencv-sample.parallax.json"))
write("calibration-json", "fisheye.json",
      '{"format":"parallax-stereo-calibration","version":1,"unit":"mm",'
      '"left":{"width":1280,"height":720,"intrinsics":{"fx":700,"fy":700,"cx":640,"cy":360},'
      '"distortion":{"model":"fisheye","coefficients":[0.1,-0.01,0.001,0]}},'
      '"right":{"width":1280,"height":720,"intrinsics":{"fx":700,"fy":700,"cx":640,"cy":360,"skew":0},'
      '"distortion":{"model":"brown","coefficients":[0,0,0,0,0,0,0,0]}},'
      '"extrinsics":{"rotation":[1,0,0,0,1,0,0,0,1],"translation":[-60,0.5,1e-3]},"note":{"a":[null,true,"\\u00e9"]}}')
write("calibration-json", "newer-version.json", parallax_json.replace(b'"version": 1', b'"version": 2'))
write("calibration-json", "truncated.json", parallax_json[: len(parallax_json) // 2])
write("calibration-json", "opencv.yml", example("opencv-stereo-written-by-parallax.yml"))

# opencv-yaml: OpenCV's own files, Parallax's, and the sample's two files joined by a NUL.
write("opencv-yaml", "written-by-parallax.yml", example("opencv-stereo-written-by-parallax.yml"))
write("opencv-yaml", "opencv-stereo.yml", example("opencv-stereo.yml"))
write("opencv-yaml", "intrinsics-and-extrinsics.yml",
      example("opencv-intrinsics.yml") + b"\0" + example("opencv-extrinsics.yml")
      + b"\0image_width: 640\nimage_height: 480\n")
write("opencv-yaml", "rodrigues-fisheye.yml",
      "%YAML:1.0\n---\nimage_width: 8\nimage_height: 6\ndistortion_model: fisheye\n"
      "K1: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: [ 5., 0., 4., 0., 5., 3., 0., 0., 1. ]\n"
      "D1: !!opencv-matrix\n   rows: 4\n   cols: 1\n   dt: d\n   data: [ 0.1, 0., 0., 0. ]\n"
      "K2: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: [ 5., 0., 4., 0., 5., 3., 0., 0., 1. ]\n"
      "D2: !!opencv-matrix\n   rows: 1\n   cols: 4\n   dt: d\n   data: [ 0., 0., 0., .nan ]\n"
      "R: !!opencv-matrix\n   rows: 3\n   cols: 1\n   dt: d\n   data: [ 0.01, 0.02, 0.03 ]\n"
      "T: !!opencv-matrix\n   rows: 1\n   cols: 3\n   dt: d\n   data: [ -1., 0., 0. ]\n")

# corner-list: --corners-in lists, JSON and mrcal vnl, with the cases the reader handles.
write("corner-list", "corners.json",
      '{"tool": "seed", "board": [3, 2],\n "images": {"left01.png": [[1.5, 2.25], [10, 2], [20, 2], [1, 9], [10, 9], [20, 9.5]],\n'
      '  "right01.png": null},\n "image_sizes": {"left01.png": [640, 480]}}\n')
write("corner-list", "corners.vnl",
      "# filename x y level\nleft01.png 1.5 2.25 0\nleft01.png 10 2 0\nleft01.png 20 2 1\n"
      "right01.png - - -\nleft02.png 3 4 -\nleft02.png 5 6 -1\n\tleft03.png  7e2 8.5e-1 0\r\n")
write("corner-list", "broken.json", '{"images": {"a.png": [[1, 2], [3, ]]}, "board": [1, 9]}')

# ros-camera-info: one camera, and a left/right pair joined by a NUL.
left, right = example("ros/left.yaml"), example("ros/right.yaml")
write("ros-camera-info", "left.yaml", left)
write("ros-camera-info", "stereo-pair.yaml", left + b"\0" + right)
write("ros-camera-info", "equidistant-quoted.yaml",
      'image_width: 4\nimage_height: 2\ncamera_name: "cam: one"\n'
      "camera_matrix: {rows: 3, cols: 3, data: [2, 0, 2, 0, 2, 1, 0, 0, 1]}\n"
      "distortion_model: equidistant\ndistortion_coefficients: {rows: 1, cols: 4, data: [0.1, 0, 0, 0]}\n")
write("ros-camera-info", "empty-distortion.yaml",
      "image_width: 640\nimage_height: 480\ncamera_matrix:\n  rows: 3\n  cols: 3\n"
      "  data: [500, 0, 320, 0, 500, 240, 0, 0, 1]\ndistortion_model: plumb_bob\n"
      "distortion_coefficients:\n  rows: 1\n  cols: 0\n  data: []\n")

# euroc-csv: the first byte picks the streaming chunk size (1 to 64 bytes), the rest is the log.
header = "#timestamp [ns],filename\n"
write("euroc-csv", "recording.csv", "\x10" + header + "".join(
    f"{1403636579763555584 + 50000000 * i},{1403636579763555584 + 50000000 * i}.png\n" for i in range(6)))
write("euroc-csv", "windows-and-blanks.csv",
      "\x03" + header.replace("\n", "\r\n") + " 100 , a.png\r\n\r\n200,b.png\r300,c.png\r\n# end\n")
write("euroc-csv", "problems.csv",
      "\x01" + header + "300,c.png\n100,a.png\n100,again.png\n-5,neg.png\n1,2,3\nno comma\n7,\n99999999999999999999,big.png\n")

# images: Netpbm in every flavour, PNG (plain Python, as Tests/Fixtures/images does), JPEG (OpenCV).
write("images", "gray.pgm", b"P5\n# a comment\n4 2\n255\n" + bytes(range(0, 256, 32)))
write("images", "gray-plain.pgm", b"P2\n3 2\n15\n0 5 10\n15 7 1\n")
write("images", "gray16.pgm", b"P5 2 2 65535\n" + struct.pack(">4H", 0, 1000, 40000, 65535))
write("images", "rgb.ppm", b"P6\n2 2\n255\n" + bytes(range(12)))
write("images", "rgb-plain.ppm", b"P3\n1 2\n7\n1 2 3 4 5 6\n")


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, depth, color, rows, extra=b"", interlace=0):
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace))
            + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


write("images", "gray.png", png(4, 3, 8, 0, [bytes(10 * x + 40 * y for x in range(4)) for y in range(3)]))
write("images", "rgba.png", png(2, 2, 8, 6, [bytes(range(8)), bytes(range(8, 16))]))
write("images", "palette-trns.png", png(2, 1, 8, 3, [bytes([0, 1])],
      extra=chunk(b"PLTE", bytes([255, 0, 0, 0, 0, 255])) + chunk(b"tRNS", bytes([128]))))
write("images", "gray16-interlaced.png", png(3, 3, 16, 0, [struct.pack(">3H", 1, 2, 3)] * 3, interlace=1))
gray = numpy.array([[(x * 37 + y * 11) % 256 for x in range(16)] for y in range(8)], dtype=numpy.uint8)
color = numpy.dstack([gray, 255 - gray, gray // 2])
write("images", "gray.jpg", cv2.imencode(".jpg", gray, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes())
write("images", "color-420.jpg", cv2.imencode(".jpg", color, [cv2.IMWRITE_JPEG_QUALITY, 75])[1].tobytes())
write("images", "color-progressive.jpg",
      cv2.imencode(".jpg", color, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                                   cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444])[1].tobytes())

# values: the first byte picks the parser (0 size, 1 format, 2 length, 3 duration, 4 board).
for name, text in [("size", "\x001920x1080"), ("size-times", "\x00640×480"),
                   ("format", "\x011280x720@30:YUYV"), ("format-fraction", "\x01640x480@7.5:MJPG"),
                   ("length", "\x021.5m"), ("length-bare", "\x02 1500 "), ("length-inch", "\x022in"),
                   ("duration", "\x0333.3ms"), ("duration-micro", "\x03200µs"), ("duration-minutes", "\x032min"),
                   ("duration-bare", "\x035"), ("board", "\x049x6\n25mm"), ("board-bare", "\x0410X7\n1")]:
    write("values", name, text)

print("seeds written under", HERE)
