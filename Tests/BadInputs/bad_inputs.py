#!/usr/bin/env python3
"""Bad inputs for the parallax CLI, each run classified.

Started by `Tests/BadInputs/run` (which makes and removes the temporary folder); standard
library only. A case is one command line, the files it makes in its own folder first, and
whether it must fail. Every run gets one verdict:

  CRASH         killed by a signal, status 132/134/139, or a Swift trap / backtrace on stderr
  HANG          not done within the case's timeout (killed), or longer than --timeout + 1 s
  LOSS          a file of the user's (everything in the case folder before the run, and the
                absolute input paths it names) changed, went away or changed kind; or a
                temporary file (.partial-, .parallax-staging-, .tmp) was left in the folder
  SILENT-WRONG  a case that must fail exited 0
  REFUSED       a case that must succeed did not exit 0
  MESSAGE       failed as it should, but stderr is empty, does not start with "Error:" (after
                any "warning:" lines; for commands that print progress first, progress_first,
                no line starts with it), is longer than 4000 bytes, does not name the
                offending thing (must_name), or says something wrong (must_not_name; a
                negative number refused as "Missing value" is one)
  OK            otherwise

To add a case, call `add(...)` in one of the `*_cases` functions below: args (run in the
case's folder), files to make there, must_fail (True, False, or None for "either, as long
as it does not crash, hang or lose anything"), must_name (substrings stderr must hold).
Pre-existing files the command may rewrite when it succeeds are `may_change` (cases that
must succeed) or `outputs` (a must-fail case that exits 0 and rewrote only these is
SILENT-WRONG rather than LOSS).

Every run gets a 3 GiB address-space limit, so an input read without bound ends in an
allocation failure (CRASH) instead of taking the machine's memory.

Usage (through ./run): run [PARALLAX] [--only REGEX] [--jobs N] [--verbose] [--list]
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import resource
import shlex
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib

# ----------------------------------------------------------------------------------------
# Files a case makes in its folder before the run.


class Fifo:
    """A named pipe (only ever given as an output: nothing writes into it)."""


class Folder:
    """An empty folder."""


class Link:
    """A symbolic link to `target` (relative to the link's folder, or absolute)."""

    def __init__(self, target):
        self.target = target


class Copy:
    """A copy of the file at the absolute path `source`."""

    def __init__(self, source):
        self.source = source


class Zeros:
    """`size` zero bytes (written in chunks, not held in memory)."""

    def __init__(self, size):
        self.size = size


class Case:
    def __init__(self, family, name, args, files=None, must_fail=True, must_name=None, timeout=20.0,
                 setup=None, may_change=None, chmod=None, needs_non_root=False, progress_first=False,
                 note=None, files_after_setup=None, outputs=None, must_not_name=None):
        self.family = family
        self.name = name
        self.args = [str(a) for a in args]
        self.files = files or {}
        self.must_fail = must_fail
        if must_name is None:
            must_name = []
        elif isinstance(must_name, str):
            must_name = [must_name]
        self.must_name = list(must_name)
        # Substrings that would make the message wrong: "Missing value" for a negative number
        # given as an option's value (it is a value, to be refused by its range).
        self.must_not_name = list(must_not_name or [])
        for option, value in zip(self.args, self.args[1:]):
            if option.startswith("--") and re.match(r"-[0-9.]", value) and "Missing value" not in self.must_not_name:
                self.must_not_name.append("Missing value")
        self.timeout = timeout
        self.setup = setup or []          # parallax argument lists run in the folder first
        self.may_change = set(may_change or [])  # paths a run that must succeed may rewrite
        self.chmod = chmod or {}          # path -> mode, applied after the setup
        self.needs_non_root = needs_non_root
        # The command prints progress on stderr before it fails (calibrate, stream, capture
        # after they started): then some line, not the first, must start with "Error:".
        self.progress_first = progress_first
        self.note = note
        self.files_after_setup = files_after_setup or {}  # made once the setup commands ran
        # Pre-existing files the command replaces when it succeeds (a must-fail case that
        # exits 0 and rewrites only these is SILENT-WRONG; a failing run must keep them).
        self.outputs = set(outputs or [])


CASES = []


def add(family, name, args, **kw):
    CASES.append(Case(family, name, args, **kw))


# ----------------------------------------------------------------------------------------
# Inputs made from the repository's fixtures.

ROOT = None
DATA = "/usr/share/doc/opencv-doc/examples/data"
L_IMG = DATA + "/left01.jpg"
R_IMG = DATA + "/right01.jpg"
LEFT_GLOB = DATA + "/left[0-9]*.jpg"
RIGHT_GLOB = DATA + "/right[0-9]*.jpg"


def fixture(rel):
    return os.path.join(ROOT, rel)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class Raw(str):
    """JSON text put into a document as is (NaN, 1e400, a 10,000-digit number)."""


RAW_LINES = threading.local()


def dump_json(obj):
    """JSON text of `obj`; the line of each Raw value is kept in RAW_LINES.lines (in order)."""
    raws = []

    def walk(o):
        if isinstance(o, Raw):
            raws.append(str(o))
            return "@@RAW%d@@" % (len(raws) - 1)
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return o

    text = json.dumps(walk(obj), indent=2)
    RAW_LINES.lines = [text[:text.index('"@@RAW%d@@"' % i)].count("\n") + 1 for i in range(len(raws))]
    for i, raw in enumerate(raws):
        text = text.replace('"@@RAW%d@@"' % i, raw)
    return text + "\n"


def parse_path(path):
    """'extrinsics.rotation[0]' -> ['extrinsics', 'rotation', 0]"""
    parts = []
    for piece in path.split("."):
        m = re.fullmatch(r"([^\[]+)((?:\[\d+\])*)", piece)
        parts.append(m.group(1))
        for index in re.findall(r"\[(\d+)\]", m.group(2)):
            parts.append(int(index))
    return parts


def sample():
    with open(fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")) as f:
        return json.load(f)


def with_value(path, value, base=None):
    obj = base if base is not None else sample()
    parts = parse_path(path)
    target = obj
    for p in parts[:-1]:
        target = target[p]
    target[parts[-1]] = value
    return obj


def without(path, base=None):
    obj = base if base is not None else sample()
    parts = parse_path(path)
    target = obj
    for p in parts[:-1]:
        target = target[p]
    del target[parts[-1]]
    return obj


def small_calibration(width, height):
    """The sample rig scaled to a width x height camera (for the tiny image fixtures)."""
    obj = sample()
    scale = width / 640.0
    for side in ("left", "right"):
        cam = obj[side]
        cam["width"], cam["height"] = width, height
        k = cam["intrinsics"]
        k["fx"] *= scale
        k["fy"] *= scale
        k["cx"] = (width - 1) / 2.0
        k["cy"] = (height - 1) / 2.0
        cam["distortion"]["coefficients"] = [0.0] * 5
    return dump_json(obj)


def matrix(key, rows, cols, data, dt="d"):
    if not isinstance(data, str):
        data = ", ".join(repr(float(v)) for v in data)
    return "%s: !!opencv-matrix\n   rows: %s\n   cols: %s\n   dt: %s\n   data: [ %s ]\n" % (key, rows, cols, dt, data)


def opencv_yaml(drop=(), replace=None, extra="", width="640", height="480"):
    """OpenCV FileStorage YAML of the sample rig; `replace` maps a key to its whole text."""
    s = sample()
    replace = replace or {}

    def k(cam):
        i = cam["intrinsics"]
        return [i["fx"], i["skew"], i["cx"], 0.0, i["fy"], i["cy"], 0.0, 0.0, 1.0]

    parts = {
        "image_width": "image_width: %s\n" % width,
        "image_height": "image_height: %s\n" % height,
        "M1": matrix("M1", 3, 3, k(s["left"])),
        "D1": matrix("D1", 1, 8, s["left"]["distortion"]["coefficients"]),
        "M2": matrix("M2", 3, 3, k(s["right"])),
        "D2": matrix("D2", 1, 8, s["right"]["distortion"]["coefficients"]),
        "R": matrix("R", 3, 3, s["extrinsics"]["rotation"]),
        "T": matrix("T", 3, 1, s["extrinsics"]["translation"]),
    }
    text = "%YAML:1.0\n---\n"
    for key, value in parts.items():
        if key in drop:
            continue
        text += replace.get(key, value)
    return text + extra


def ros_pair():
    return (read_bytes(fixture("Calibration/examples/ros/left.yaml")).decode(),
            read_bytes(fixture("Calibration/examples/ros/right.yaml")).decode())


# Images --------------------------------------------------------------------------------


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, color_type=0, bit_depth=8, rows=None, idat=None):
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    if idat is None:
        if rows is None:
            rows = b"".join(b"\x00" + bytes(((x * 7 + y * 3) // 4) & 0xFF for x in range(width * channels))
                            for y in range(height))
        idat = zlib.compress(rows, 6)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def pgm(width, height, maxval=255, data=None):
    header = b"P5\n%d %d\n%d\n" % (width, height, maxval)
    if data is None:
        data = bytes((x + y) & 0xFF for y in range(height) for x in range(width))
    return header + data


# Timestamp logs -------------------------------------------------------------------------

T0 = 1403636579000000000
STEP = 50000000  # 20 fps, as EuRoC's cameras


def log(n=120, start=T0, step=STEP, offset=0, header="#timestamp [ns],filename\n", eol="\n", stamps=None):
    if stamps is None:
        stamps = [start + offset + k * step for k in range(n)]
    lines = [header.rstrip("\n")] if header else []
    lines += ["%d,%d.png" % (t, t) for t in stamps]
    return (eol.join(lines) + eol).encode()


def left_log():
    return log()


def right_log():
    return log(offset=3000000)


def with_line(text_bytes, at, line):
    lines = text_bytes.split(b"\n")
    lines.insert(at, line)
    return b"\n".join(lines)


# ----------------------------------------------------------------------------------------
# The cases.

RECT_OUT = ["--output-left", "l.png", "--output-right", "r.png"]


def rectify_args(calibration, left=None, right=None, out=None):
    return (["rectify", "--calibration", calibration, "--left", left or L_IMG, "--right", right or R_IMG]
            + (out if out is not None else RECT_OUT))


def calibration_cases():
    fam = "calibration"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")

    # Values that are never a usable number, one in each numeric field (rotating through them).
    bad_values = [("NaN", Raw("NaN")), ("Infinity", Raw("Infinity")), ("-Infinity", Raw("-Infinity")),
                  ("1e400", Raw("1e400")), ("-1e400", Raw("-1e400")), ("string", "12"), ("null", None),
                  ("true", True), ("array", []), ("object", {}), ("1e-400", Raw("1e-400")),
                  ("10000-digits", Raw("9" * 10000))]
    fields = ["left.width", "left.height", "left.intrinsics.fx", "left.intrinsics.fy", "left.intrinsics.cx",
              "left.intrinsics.cy", "left.intrinsics.skew", "right.width", "right.intrinsics.fx",
              "left.distortion.coefficients[0]", "extrinsics.rotation[0]", "extrinsics.translation[0]",
              "extrinsics.translation[2]", "version"]
    for fi, field in enumerate(fields):
        for vi in range(1):
            label, value = bad_values[(fi + vi) % len(bad_values)]
            if label == "1e-400" and field in ("extrinsics.translation[0]", "extrinsics.translation[2]",
                                                "left.intrinsics.skew", "left.distortion.coefficients[0]"):
                label, value = bad_values[0]  # 1e-400 underflows to 0, a fine value for these
            text = dump_json(with_value(field, value))
            if label in ("NaN", "Infinity", "-Infinity"):
                # Not JSON at all: a syntax error naming the file, line and column is the message.
                names = ["bad.json:%d:" % RAW_LINES.lines[0]]
            else:
                names = ["bad.json", field.split("[")[0].split(".")[-1]]
            add(fam, "json %s=%s" % (field, label), ["rectification", "--calibration", "bad.json"],
                files={"bad.json": text}, must_name=names)

    # Numbers out of range.
    ranges = [("left.width", 0), ("left.width", 640.5), ("left.width", Raw("9223372036854775807")),
              ("left.height", 0), ("right.height", 480.25), ("left.intrinsics.fx", -500), ("left.intrinsics.fx", Raw("1e-300")),
              ("left.intrinsics.cx", 1e9), ("left.intrinsics.skew", Raw("1e300")), ("version", 2)]
    for field, value in ranges:
        shown = field.split(".")[-1]
        add(fam, "json %s=%s" % (field, value), ["rectification", "--calibration", "bad.json"],
            files={"bad.json": dump_json(with_value(field, value))}, must_name=["bad.json", shown])

    # Keys missing (skew and unit may be missing; those are in the good cases).
    for key in ["format", "right", "left.height", "left.intrinsics.cy", "left.distortion.model",
                "extrinsics.translation", "right.intrinsics"]:
        add(fam, "json missing %s" % key, ["rectification", "--calibration", "bad.json"],
            files={"bad.json": dump_json(without(key))}, must_name=["bad.json", key.split(".")[-1]])

    # Shapes and values of the structure.
    s = sample()
    rot = s["extrinsics"]["rotation"]
    structure = [
        ("rotation 8 numbers", "extrinsics.rotation", rot[:8], "rotation"),
        ("rotation scaled x2", "extrinsics.rotation", [2 * v for v in rot], "rotation"),
        ("rotation a reflection", "extrinsics.rotation", [1, 0, 0, 0, 1, 0, 0, 0, -1], "rotation"),
        ("translation 2 numbers", "extrinsics.translation", [-3.3, 0.0], "translation"),
        ("translation zero (no baseline)", "extrinsics.translation", [0, 0, 0], "bad.json"),
        ("translation along the axis", "extrinsics.translation", [0, 0, -3.3], "bad.json"),
        ("translation 1e300", "extrinsics.translation", [-1e300, 0, 0], "bad.json"),
        ("translation 1e-300", "extrinsics.translation", [-1e-300, 0, 0], "bad.json"),
        ("distortion model foo", "left.distortion.model", "foo", "distortion"),
        ("distortion 100 coefficients", "left.distortion.coefficients", [0.01] * 100, "distortion"),
        ("fisheye with 8 coefficients", "left.distortion.model", "fisheye", "distortion"),
        ("unit furlongs", "unit", "furlongs", "unit"),
        ("format other", "format", "opencv-calibration", "format"),
        ("extrinsics is a string", "extrinsics", "identity", "extrinsics"),
    ]
    for label, field, value, name in structure:
        add(fam, "json %s" % label, ["rectification", "--calibration", "bad.json"],
            files={"bad.json": dump_json(with_value(field, value))}, must_name=["bad.json", name])
    # Coefficient counts that may be fine or refused, as long as nothing breaks.
    for label, value in [("no coefficients", []), ("100 zero coefficients", [0.0] * 100)]:
        add(fam, "json distortion %s" % label, ["rectification", "--calibration", "odd.json"],
            files={"odd.json": dump_json(with_value("left.distortion.coefficients", value))}, must_fail=None,
            must_name=["odd.json"])

    # Text that is not (good) JSON.
    good = dump_json(sample()).encode()
    for cut in [1, len(good) // 2, len(good) - 3]:
        add(fam, "json truncated at %d bytes" % cut, ["rectification", "--calibration", "cut.json"],
            files={"cut.json": good[:cut]}, must_name="cut.json")
    text = good.decode()
    texts = [
        ("duplicate fx", text.replace('"fx": 524.0970745055303,', '"fx": 524.0970745055303, "fx": 900.0,', 1), "fx"),
        ("duplicate left", text.replace('"format"', '"left": {}, "format"', 1), "left"),
        ("trailing comma", text.replace('"skew": 0.0\n', '"skew": 0.0,\n', 1), "bad.json"),
        ("trailing garbage", text + "}}}", "bad.json"),
        ("5 MB string value", text.replace('"brown"', '"' + "b" * 5000000 + '"', 1), "bad.json"),
        ("600 nested arrays", text.replace('"provenance": {', '"deep": ' + "[" * 600 + "]" * 600 + ', "provenance": {', 1),
         "bad.json"),
        ("100000 nested arrays", "[" * 100000 + "]" * 100000, "bad.json"),
        ("100000 nested objects", '{"a":' * 100000 + "1" + "}" * 100000, "bad.json"),
        ("invalid UTF-8 in a string", None, "bad.json"),
        ("number with 1,000,000 digits", text.replace("524.0970745055303", "5" * 1000000, 1), "bad.json"),
    ]
    for label, body, name in texts:
        before, after = text.split('"brown"', 1)
        data = body.encode() if body is not None else before.encode() + b'"br\xff\xfe\xc0own"' + after.encode()
        add(fam, "json %s" % label, ["rectification", "--calibration", "bad.json"], files={"bad.json": data},
            must_name=["bad.json"] + ([name] if name != "bad.json" else []))
    add(fam, "json UTF-16LE without BOM", ["rectification", "--calibration", "bad.json"],
        files={"bad.json": text.encode("utf-16-le")}, must_name="bad.json")
    rng = random.Random(20240611)
    add(fam, "binary junk", ["rectification", "--calibration", "junk.json"],
        files={"junk.json": bytes(rng.randrange(256) for _ in range(4096))}, must_name="junk.json",
        must_not_name=["JPEG"])  # it starts ac 84 4c bb: not a JPEG
    add(fam, "empty file", ["rectification", "--calibration", "empty.json"], files={"empty.json": b""},
        must_name="empty.json")
    add(fam, "17 MiB of zeros", ["rectification", "--calibration", "big.json"], files={"big.json": Zeros(17 << 20)},
        must_name=["big.json", "16 MiB"])
    add(fam, "a folder", ["rectification", "--calibration", "folder"], files={"folder/notes.txt": "mine\n"},
        must_name="folder")
    add(fam, "a missing file", ["rectification", "--calibration", "missing.json"], must_name="missing.json")
    add(fam, "an empty path", ["rectification", "--calibration", ""], must_name="give one calibration file")
    add(fam, "/dev/zero", ["rectification", "--calibration", "/dev/zero"], must_name="/dev/zero")
    add(fam, "/dev/urandom via rectify", rectify_args("/dev/urandom"), must_name="/dev/urandom")
    add(fam, "a symlink loop", ["rectification", "--calibration", "loop.json"],
        files={"loop.json": Link("loop2.json"), "loop2.json": Link("loop.json")}, must_name="loop.json")
    add(fam, "an unreadable file", ["rectification", "--calibration", "secret.json"],
        files={"secret.json": good}, chmod={"secret.json": 0o000}, needs_non_root=True, must_name="secret.json")
    add(fam, "an image", ["rectification", "--calibration", L_IMG], must_name="left01.jpg")
    add(fam, "a Kalibr camchain", ["rectification", "--calibration", fixture("Calibration/examples/kalibr-camchain.yaml")],
        must_name="kalibr-camchain.yaml")
    add(fam, "one-camera JSON", ["rectification", "--calibration", "one.json"],
        files={"one.json": dump_json({"format": "parallax-camera-calibration", "version": 1, "camera": sample()["left"]})},
        must_name="one.json")

    # OpenCV YAML.
    yml = [
        ("M1 2x3", {"M1": matrix("M1", 2, 3, [500.0, 0, 320, 0, 500, 240])}, "M1"),
        ("M1 rows Int64.max", {"M1": matrix("M1", 9223372036854775807, 2, [1.0])}, "M1"),
        ("M1 rows three", {"M1": matrix("M1", "three", 3, [1.0] * 9)}, "rows"),
        ("M1 .nan", {"M1": matrix("M1", 3, 3, "500., 0., .nan, 0., 500., 240., 0., 0., 1.")}, "M1"),
        ("M1 a word", {"M1": matrix("M1", 3, 3, "abc, 0., 320., 0., 500., 240., 0., 0., 1.")}, "abc"),
        ("M1 no data", {"M1": "M1: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n"}, "data"),
        ("D1 1x100", {"D1": matrix("D1", 1, 100, [0.01] * 100)}, "opencv.yml:10"),
        ("D1 1x3", {"D1": matrix("D1", 1, 3, [0.1, 0.01, 0.0])}, "opencv.yml:10"),
        ("R 3x3 scaled", {"R": matrix("R", 3, 3, [2 * v for v in rot])}, "R"),
        ("R a reflection", {"R": matrix("R", 3, 3, [1, 0, 0, 0, 1, 0, 0, 0, -1])}, "R"),
        ("R 1x3 Rodrigues 1e300", {"R": matrix("R", 1, 3, [1e300, 0, 0])}, "R"),
        ("T 1x2", {"T": matrix("T", 1, 2, [-3.3, 0])}, "T"),
        ("T zeros", {"T": matrix("T", 3, 1, [0, 0, 0])}, "opencv.yml"),
        ("image_width 0", {"image_width": "image_width: 0\n"}, "image_width"),
        ("image_width Int64.max+1", {"image_width": "image_width: 9223372036854775808\n"}, "image_width"),
    ]
    for label, replace, name in yml:
        add(fam, "opencv %s" % label, ["rectification", "--calibration", "opencv.yml"],
            files={"opencv.yml": opencv_yaml(replace=replace)}, must_name=["opencv.yml", name])
    for key in ["M1", "T"]:
        add(fam, "opencv missing %s" % key, ["rectification", "--calibration", "opencv.yml"],
            files={"opencv.yml": opencv_yaml(drop=(key,))}, must_name=["opencv.yml", key])
    add(fam, "opencv missing image size", ["rectification", "--calibration", "opencv.yml"],
        files={"opencv.yml": opencv_yaml(drop=("image_width", "image_height"))}, must_name=["opencv.yml", "image_width"])
    for label, unit in [("furlongs", '"furlongs"'), ("a list", "[mm]")]:
        add(fam, "opencv translation_unit %s" % label, ["rectification", "--calibration", "opencv.yml"],
            files={"opencv.yml": opencv_yaml(extra="translation_unit: %s\n" % unit)},
            must_name=["opencv.yml", "translation_unit"])
    add(fam, "opencv duplicate M1", ["rectification", "--calibration", "opencv.yml"],
        files={"opencv.yml": opencv_yaml(extra=matrix("M1", 3, 3, [900.0, 0, 320, 0, 900, 240, 0, 0, 1]))},
        must_name=["opencv.yml", "M1"])
    # Alias bombs: a billion "x" from a kilobyte, as an extra key and as M1's data.
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi"):
        bomb += "%s: &%s [%s]\n" % (name, name, ",".join(["*" + prev] * 10))
    add(fam, "opencv billion laughs beside the keys", ["rectification", "--calibration", "bomb.yml"],
        files={"bomb.yml": opencv_yaml(extra=bomb)}, must_name="bomb.yml", timeout=10)
    numeric_bomb = bomb.replace('"x"', "1.0")
    add(fam, "opencv billion laughs as M1 data", ["rectification", "--calibration", "bomb.yml"],
        files={"bomb.yml": numeric_bomb + opencv_yaml(replace={
            "M1": "M1: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: *i\n"}).replace("%YAML:1.0\n---\n", "")},
        must_name="bomb.yml", timeout=10)
    mapping_bomb = "a: &a {k0: x, k1: x, k2: x, k3: x, k4: x, k5: x, k6: x, k7: x, k8: x, k9: x}\n"
    for prev, name in zip("abcdefgh", "bcdefghi"):
        mapping_bomb += "%s: &%s [%s]\n" % (name, name, ",".join(["*" + prev] * 10))
    add(fam, "opencv billion laughs of mappings", ["rectification", "--calibration", "bomb.yml"],
        files={"bomb.yml": opencv_yaml(extra=mapping_bomb)}, must_name="bomb.yml", timeout=10)
    chain = "".join("c%d: &c%d\n  - %s\n" % (i, i, "*c%d" % (i - 1) if i else "1") for i in range(100000))
    add(fam, "opencv alias chain 100000 deep", ["rectification", "--calibration", "chain.yml"],
        files={"chain.yml": opencv_yaml(extra=chain)}, must_fail=None, must_name="chain.yml")
    add(fam, "opencv undefined alias", ["rectification", "--calibration", "opencv.yml"],
        files={"opencv.yml": opencv_yaml(extra="X: *nowhere\n")}, must_name="opencv.yml")
    add(fam, "opencv merge key into M1", ["rectification", "--calibration", "opencv.yml"],
        files={"opencv.yml": opencv_yaml(replace={"M1": "base: &base {rows: 3, cols: 3, dt: d}\nM1:\n   <<: *base\n"
                                                        "   data: [ 500., 0., 320., 0., 500., 240., 0., 0., 1. ]\n"})},
        must_fail=None, must_name="opencv.yml")
    yaml_texts = [
        ("tab indentation", opencv_yaml().replace("   rows: 3\n", "\trows: 3\n", 1)),
        ("unterminated flow sequence", opencv_yaml().replace("0.0, 1.0 ]", "0.0, 1.0", 1)),
        ("unterminated quote", opencv_yaml(extra='translation_unit: "mm\n')),
        ("100000 nested flow lists", "%YAML:1.0\n---\nx: " + "[" * 100000 + "]" * 100000 + "\n"),
        ("200 nested block mappings", "%YAML:1.0\n---\n" + "".join(" " * i + "k%d:\n" % i for i in range(200)) + " " * 200 + "v: 1\n"),
        ("binary after the directive", "%YAML:1.0\n---\n" + "".join(chr(c) for c in range(1, 32) if c not in (9, 10, 13)) + "\n"),
        ("UTF-16LE without BOM", None),
    ]
    for label, body in yaml_texts:
        data = body.encode() if body is not None else opencv_yaml().encode("utf-16-le")
        add(fam, "opencv %s" % label, ["rectification", "--calibration", "bad.yml"], files={"bad.yml": data},
            must_name="bad.yml")
    # intrinsics + extrinsics pairs.
    intr = read_bytes(fixture("Calibration/examples/opencv-intrinsics.yml")).decode()
    extr = read_bytes(fixture("Calibration/examples/opencv-extrinsics.yml")).decode()
    add(fam, "opencv intrinsics+extrinsics without a size", ["rectification", "--calibration", "intr.yml,extr.yml"],
        files={"intr.yml": intr, "extr.yml": extr}, must_name=["intr.yml", "image_width"])
    add(fam, "opencv intrinsics+extrinsics the same file twice", ["rectification", "--calibration", "intr.yml,intr.yml"],
        files={"intr.yml": intr.replace("---\n", "---\nimage_width: 640\nimage_height: 480\n", 1)},
        must_name="intr.yml")
    add(fam, "opencv intrinsics+extrinsics sizes disagree", ["rectification", "--calibration", "intr.yml,extr.yml"],
        files={"intr.yml": intr.replace("---\n", "---\nimage_width: 640\nimage_height: 480\n", 1),
               "extr.yml": extr.replace("---\n", "---\nimage_width: 320\nimage_height: 240\n", 1)},
        must_name=["extr.yml", "image size"])

    # ROS camera_info pairs.
    left, right = ros_pair()
    ros = [
        ("sizes differ", left, right.replace("image_width: 640", "image_width: 320"), "320x480"),
        ("camera_matrix 2 rows", left.replace("camera_matrix:\n  rows: 3", "camera_matrix:\n  rows: 2"), right,
         "camera_matrix"),
        ("no projection_matrix", left, right.split("projection_matrix:")[0], "right.yaml"),
        ("distortion_model foo", left.replace("plumb_bob", "foo"), right, "left.yaml:8"),
        ("projection .nan", left, right.replace("-1780.2023259140021", ".nan"), "projection_matrix"),
        ("no baseline", left, right.replace("-1780.2023259140021", "0.0"), "right.yaml"),
        ("left is OpenCV YAML", opencv_yaml(), right, "ros"),
    ]
    for label, l_text, r_text, name in ros:
        add(fam, "ros folder %s" % label, ["rectification", "--calibration", "ros"],
            files={"ros/left.yaml": l_text, "ros/right.yaml": r_text}, must_name=name)
    add(fam, "ros pair sizes differ", ["rectification", "--calibration", "l.yaml,r.yaml"],
        files={"l.yaml": left, "r.yaml": right.replace("image_height: 480", "image_height: 400")},
        must_name="640x400")
    add(fam, "ros pair left twice", ["rectification", "--calibration", "l.yaml,l.yaml"], files={"l.yaml": left},
        must_name="l.yaml")
    add(fam, "ros folder with left.yaml only", ["rectification", "--calibration", "ros"],
        files={"ros/left.yaml": left}, must_name=["ros", "right.yaml"])
    add(fam, "ros three files", ["rectification", "--calibration", "l.yaml,r.yaml,l.yaml"],
        files={"l.yaml": left, "r.yaml": right}, must_name="l.yaml,r.yaml,l.yaml")
    add(fam, "one camera_info alone", ["rectification", "--calibration", "l.yaml"], files={"l.yaml": left},
        must_name="l.yaml")

    # The same loader behind rectify, stream, capture and calibrate --intrinsics/--against.
    add(fam, "rectify json NaN fx", rectify_args("bad.json"),
        files={"bad.json": dump_json(with_value("left.intrinsics.fx", Raw("NaN")))}, must_name=["bad.json:8:"])
    add(fam, "rectify json huge width", rectify_args("bad.json"),
        files={"bad.json": dump_json(with_value("left.width", 999999))}, must_name=["bad.json"])
    add(fam, "rectify opencv M1 2x3", rectify_args("opencv.yml"),
        files={"opencv.yml": opencv_yaml(replace={"M1": matrix("M1", 2, 3, [500.0, 0, 320, 0, 500, 240])})},
        must_name=["opencv.yml", "M1"])
    add(fam, "rectify ros sizes differ", rectify_args("ros"),
        files={"ros/left.yaml": left, "ros/right.yaml": right.replace("image_width: 640", "image_width: 320")},
        must_name="320x480")
    add(fam, "rectify calibration for other image sizes", rectify_args("small.json"),
        files={"small.json": small_calibration(320, 240)}, must_name=["left01.jpg", "small.json"])
    add(fam, "rectify json 1x1 cameras", rectify_args("tiny.json"),
        files={"tiny.json": small_calibration(1, 1)}, must_name="tiny.json")
    add(fam, "stream --calibration truncated", ["stream", "--simulated", "--size", "64x48", "--frames", "3",
                                                "--timeout", "10s", "--calibration", "bad.json"],
        files={"bad.json": good[:300]}, must_name="bad.json")
    add(fam, "capture --calibration of other cameras (good: scaled to the rig's size)",
        ["capture", "--simulated", "--size", "64x48", "--frames", "3", "--timeout", "10s", "--calibration", sample_path,
         "--output", "rec"], must_fail=False)
    add(fam, "calibrate --intrinsics truncated", ["calibrate", "--left", LEFT_GLOB, "--right", RIGHT_GLOB, "--board", "9x6",
                                                  "--square", "25mm", "--intrinsics", "bad.json", "--output", "rig.json"],
        files={"bad.json": good[:300]}, must_name="bad.json")


def image_cases():
    fam = "images"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")
    jpeg = read_bytes(L_IMG)
    good_png = png(640, 480)

    def rect(left_name, files, name=None, must_fail=True, right=None, note=None):
        add(fam, name or left_name, rectify_args(sample_path, left=left_name, right=right),
            files=files, must_fail=must_fail, must_name=left_name if must_fail else None, note=note)

    for cut in [2, len(jpeg) // 2, len(jpeg) - 200]:
        rect("cut.jpg", {"cut.jpg": jpeg[:cut]}, name="jpeg truncated at %d of %d bytes" % (cut, len(jpeg)))
    for cut in [8, 33, 60, len(good_png) // 2]:
        rect("cut.png", {"cut.png": good_png[:cut]}, name="png truncated at %d of %d bytes" % (cut, len(good_png)))
    rect("noend.png", {"noend.png": good_png[:-12]}, name="png without IEND", must_fail=None)
    flipped = bytearray(good_png)
    flipped[60] ^= 0xFF
    rect("crc.png", {"crc.png": bytes(flipped)}, name="png with a damaged IDAT")
    corrupt_jpeg = bytearray(jpeg)
    for i in range(len(jpeg) // 2, len(jpeg) // 2 + 400):
        corrupt_jpeg[i] = 0xFF
    rect("stray.jpg", {"stray.jpg": bytes(corrupt_jpeg)}, name="jpeg with 400 bytes of 0xFF inside", must_fail=None)
    rect("one.png", {"one.png": png(1, 1)}, name="a 1x1 png")
    rect("huge.png", {"huge.png": png(100000, 100000, idat=zlib.compress(b"\0" * 1000))}, name="png declaring 100000x100000")
    rect("max.png", {"max.png": png(0x7FFFFFFF, 0x7FFFFFFF, idat=zlib.compress(b"\0" * 100))}, name="png declaring 2^31-1 squared")
    rect("zero.png", {"zero.png": png(0, 480, idat=zlib.compress(b""))}, name="png declaring width 0")
    rect("text.png", {"text.png": "this is not an image\n"}, name="a text file named .png")
    rect("empty.png", {"empty.png": b""}, name="an empty .png")
    rect("cut.pgm", {"cut.pgm": pgm(640, 480)[:5000]}, name="pgm truncated")
    rect("max0.pgm", {"max0.pgm": pgm(640, 480, maxval=0)}, name="pgm with maxval 0")
    rect("huge.pgm", {"huge.pgm": b"P5\n99999999 99999999\n255\n" + b"\0" * 100}, name="pgm declaring 99999999 squared")
    rect("comment.pgm", {"comment.pgm": b"P5\n#" + b"c" * 5000000 + b"\n640 480\n255\n"}, name="pgm with a 5 MB comment")
    rect("folder", {"folder": Folder()}, name="left image is a folder")
    rect("missing.png", {}, name="left image missing")
    add(fam, "left image /dev/zero", rectify_args(sample_path, left="/dev/zero"), must_name="/dev/zero")
    add(fam, "right image truncated", rectify_args(sample_path, right="cut.jpg"),
        files={"cut.jpg": read_bytes(R_IMG)[:3000]}, must_fail=True, must_name="cut.jpg")
    add(fam, "cmyk jpeg at the wrong size", rectify_args(sample_path, left=fixture("Tests/Fixtures/images/cmyk.jpg")),
        must_name="cmyk.jpg")
    add(fam, "16-bit png at the wrong size", rectify_args(sample_path, left=fixture("Tests/Fixtures/images/gray16.png")),
        must_name="gray16.png")
    # Images that are fine even though their names say otherwise.
    add(fam, "a jpeg named .png (good)", rectify_args(sample_path, left="left.png"),
        files={"left.png": Copy(L_IMG)}, must_fail=False)
    add(fam, "a png named .jpg (good)", rectify_args(sample_path, left="left.jpg", right="right.jpg"),
        files={"left.jpg": good_png, "right.jpg": good_png}, must_fail=False)
    add(fam, "cmyk jpeg pair with a 16x16 calibration (read or refused)",
        rectify_args("small.json", left=fixture("Tests/Fixtures/images/cmyk.jpg"), right=fixture("Tests/Fixtures/images/cmyk.jpg")),
        files={"small.json": small_calibration(16, 16)}, must_fail=None, must_name="cmyk.jpg")
    add(fam, "gray and colour png pair (good)", rectify_args(sample_path, left="gray.png", right="rgb.png"),
        files={"gray.png": good_png, "rgb.png": png(640, 480, color_type=2)}, must_fail=False)


def log_cases():
    fam = "pair"
    earlier = b"an earlier output\n"
    good_l, good_r = left_log(), right_log()

    def pair(name, left_bytes, right_bytes=None, must_fail=True, must_name="left.csv", extra=(), files=None,
             output=True, **kw):
        f = {"left.csv": left_bytes, "right.csv": right_bytes if right_bytes is not None else good_r}
        if output:
            f["out.csv"] = earlier
        f.update(files or {})
        args = ["pair", "--left", "left.csv", "--right", "right.csv"] + (["--output", "out.csv"] if output else []) + list(extra)
        add(fam, name, args, files=f, must_fail=must_fail, must_name=must_name if must_fail is not False else None,
            may_change=["out.csv"] if must_fail is not True else None, outputs=["out.csv"] if output else None, **kw)

    bad_lines = [
        ("one field", b"1403636579123456789"), ("empty file name", b"1403636579123456789,"),
        ("three fields", b"1403636579123456789,x.png,extra"), 
        ("float", b"1.4036365791e18,x.png"), ("negative", b"-5,x.png"),
        ("20 digits", b"99999999999999999999,x.png"), ("Int64.max+1", b"9223372036854775808,x.png"),
        ("NUL bytes", b"\0\0\0,\0.png"), ("5 MB line", b"zz" + b"x" * 5000000 + b",a.png"),
        ("a lone carriage return", b"1403636579123456789,x.png\r1403636579223456789"),
    ]
    for label, line in bad_lines:
        pair("malformed line: %s" % label, with_line(good_l, 40, line), must_name=["left.csv"])
    pair("5 MB file name", with_line(good_l, 40, b"1403636581010000000," + b"n" * 5000000), must_fail=None)
    pair("invalid UTF-8 file name", with_line(good_l, 40, b"1403636581010000000,\xff\xfe.png"), must_fail=None)
    pair("empty log", b"")
    pair("header only", b"#timestamp [ns],filename\n")
    pair("one frame", log(n=1), must_fail=None)
    pair("two frames", log(n=2), log(n=2, offset=3000000), must_fail=None)
    pair("all timestamps equal", log(stamps=[T0] * 120))
    # Both in microseconds look like a 20 kHz rig in nanoseconds: nothing tells them apart.
    pair("both logs in microseconds", log(start=T0 // 1000, step=STEP // 1000),
         log(start=T0 // 1000, step=STEP // 1000, offset=3000), must_fail=None)
    pair("both logs in milliseconds", log(start=T0 // 10 ** 6, step=STEP // 10 ** 6),
         log(start=T0 // 10 ** 6, step=STEP // 10 ** 6, offset=3), must_name=["left.csv"])
    pair("left in microseconds only", log(start=T0 // 1000, step=STEP // 1000), must_name=["left.csv"])
    pair("log in seconds with decimals", "\n".join("%.6f,%d.png" % ((T0 + k * STEP) / 1e9, k) for k in range(120)).encode())
    pair("logs do not overlap", good_l, log(start=T0 + 3600 * 10 ** 9), must_name="left.csv")
    pair("timestamps near Int64.max", log(start=9223372036854775807 - 130 * STEP),
         log(start=9223372036854775807 - 130 * STEP, offset=3000000), must_fail=None)
    pair("Int64.max exactly", log(stamps=[9223372036854775807 - (119 - k) * STEP for k in range(119)] + [9223372036854775807]),
         log(stamps=[9223372036854775807 - (119 - k) * STEP - 3000000 for k in range(120)]), must_fail=None)
    pair("left at 0, right at Int64.max", log(start=0), log(start=9223372036854775807 - 130 * STEP), must_name="left.csv")
    pair("a one-hour gap", log(stamps=[T0 + k * STEP for k in range(60)] + [T0 + 3600 * 10 ** 9 + k * STEP for k in range(60)]),
         log(stamps=[T0 + 3000000 + k * STEP for k in range(60)] + [T0 + 3600 * 10 ** 9 + 3000000 + k * STEP for k in range(60)]),
         must_fail=None)
    pair("duplicate timestamps", with_line(good_l, 41, b"%d,%d-again.png" % (T0 + 39 * STEP, T0 + 39 * STEP)), must_fail=None)
    pair("left is a folder", None, files={"left.csv": Folder()}, must_name="left.csv")
    pair("left is a dangling link", None, files={"left.csv": Link("nowhere.csv")}, must_name="left.csv")
    add(fam, "left is /dev/null", ["pair", "--left", "/dev/null", "--right", "right.csv", "--output", "out.csv"],
        files={"right.csv": good_r, "out.csv": earlier}, must_name="/dev/null")
    add(fam, "left is /dev/zero", ["pair", "--left", "/dev/zero", "--right", "right.csv", "--output", "out.csv"],
        files={"right.csv": good_r, "out.csv": earlier}, must_name="/dev/zero")
    add(fam, "right is /dev/urandom", ["pair", "--left", "left.csv", "--right", "/dev/urandom", "--output", "out.csv"],
        files={"left.csv": good_l, "out.csv": earlier}, must_name="/dev/urandom")
    pair("binary junk", bytes(random.Random(7).randrange(256) for _ in range(20000)))

    # Options with durations and policies.
    for option, value in [("--max-skew", "-5ms"), ("--max-skew", "nanms"), ("--max-skew", "1e308s"),
                          ("--max-skew", "5furlongs"), ("--max-skew", "5"), ("--max-skew", "9223372036854775808ns"),
                          ("--max-skew", "0x10ms"), ("--frame-interval", "0ns"), ("--frame-interval", "1e308s"),
                          ("--frame-interval", "0.1ns"), ("--policy", "nearest")]:
        pair("%s %r" % (option, value), good_l, extra=[option, value], must_name=option)
    for option, value in [("--max-skew", "9223372036854775807ns"), ("--frame-interval", "1ns"), ("--frame-interval", "2h")]:
        pair("%s %s (odd but not wrong)" % (option, value), good_l, extra=[option, value], must_fail=None, must_name=option)

    # Outputs.
    add(fam, "--output is --left", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "left.csv"],
        files={"left.csv": good_l, "right.csv": good_r}, must_name="--output")
    add(fam, "--output is --right through ./", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "./sub/../right.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "sub": Folder()}, must_name="--output")
    add(fam, "--output is a link to --left", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "link.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "link.csv": Link("left.csv")}, must_name="--output")
    add(fam, "--output is a folder", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "folder"],
        files={"left.csv": good_l, "right.csv": good_r, "folder/keep.txt": "mine\n"}, must_name="folder")
    add(fam, "--output is a FIFO", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "fifo.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "fifo.csv": Fifo()}, must_name="fifo.csv", timeout=15)
    add(fam, "--output's parent is a file", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "file/out.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "file": "a file\n"}, must_name="file")
    add(fam, "--output in a read-only folder", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "ro/out.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "ro/out.csv": earlier}, chmod={"ro": 0o555}, needs_non_root=True,
        must_name="ro/out.csv")
    add(fam, "--output empty", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", ""],
        files={"left.csv": good_l, "right.csv": good_r}, must_name="--output")
    add(fam, "--output is a link to a FIFO", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "link.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "fifo": Fifo(), "link.csv": Link("fifo")}, must_name="link.csv",
        timeout=15)

    # Logs that are fine.
    pair("good logs (good)", good_l, must_fail=False)
    pair("good logs to stdout as JSON (good)", good_l, must_fail=False, extra=["--json"], output=False)
    pair("out of order, sorted (good)", log(stamps=[T0 + k * STEP for k in range(60, 120)] + [T0 + k * STEP for k in range(60)]),
         must_fail=False)
    pair("CRLF line ends (good)", log(eol="\r\n"), log(offset=3000000, eol="\r\n"), must_fail=False)
    pair("UTF-8 BOM before the header (good)", b"\xef\xbb\xbf" + good_l, must_fail=False)
    pair("no header (good)", log(header=None), must_fail=False)
    pair("blank lines and spaces (good)", with_line(with_line(good_l, 10, b""), 20, b"   "), must_fail=False)
    pair("timestamps from 0 (good)", log(start=0), log(start=0, offset=3000000), must_fail=False)
    pair("exact policy (good)", good_l, good_l, must_fail=False, extra=["--policy", "exact"])
    pair("epsilon policy (good)", good_l, must_fail=False, extra=["--policy", "epsilon", "--max-skew", "5ms"])
    pair("frame interval given (good)", good_l, must_fail=False, extra=["--frame-interval", "50ms"])
    add(fam, "--output through a dangling link (good)", ["pair", "--left", "left.csv", "--right", "right.csv", "--output", "link.csv"],
        files={"left.csv": good_l, "right.csv": good_r, "link.csv": Link("made.csv")}, must_fail=False)


def option_cases():
    fam = "options"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")

    # cost
    bad_formats = ["0x0@30", "640x480@-30", "640x480@nan", "640x480@1e308", "99999999999x1@30", "9223372036854775807x1@30",
                   "640x480@30:ZZZZ", ":YUYV", "", "640.5x480@30", "65536x65536@30:YUYV", "0x10x480@30"]
    for f in bad_formats:
        add(fam, "cost --left %r" % f, ["cost", "--left", f, "--right", "640x480@30"], must_name="--left")
    for v in ["-1", "0", "nan", "1e308", "9223372036854775807", ""]:
        add(fam, "cost --max-fps %r" % v, ["cost", "--left", "640x480@30", "--right", "640x480@30", "--max-fps", v],
            must_name="--max-fps")
    add(fam, "cost --usb 4", ["cost", "--left", "640x480@30", "--right", "640x480@30", "--usb", "4"], must_name="--usb")

    # target: the message quotes the square or the board as typed
    for v in ["-25mm", "nanmm", "25furlongs", "25", "1e-320mm", "0x19mm"]:
        add(fam, "target --square %r" % v, ["target", "--board", "9x6", "--square", v, "--output", "board.svg"],
            must_name="square")
    for v in ["1x1", "9x6x3", "chessboard:99999999999x6", "hexagons:9x6"]:
        add(fam, "target --board %r" % v, ["target", "--board", v, "--square", "25mm", "--output", "board.svg"],
            must_name="target '%s'" % v)
    add(fam, "target --board 3000x3000 (over the 200 cap)", ["target", "--board", "3000x3000", "--square", "25mm",
                                                            "--output", "board.svg"], must_name="200")
    add(fam, "target --paper a3", ["target", "--board", "9x6", "--square", "25mm", "--paper", "a3", "--output", "b.svg"],
        must_name="--paper")

    # One option of a command line that works replaced by a bad value.
    def replaced(command, option, value, name=None, must_fail=True, **kw):
        args = list(command)
        if option in args:
            args[args.index(option) + 1] = value
        else:
            args += [option, value]
        add(fam, "%s %s %r" % (command[0], option, value), args, must_fail=must_fail, must_name=name or option, **kw)

    # stream --simulated
    base = ["stream", "--simulated", "--size", "64x48", "--frames", "3", "--timeout", "10s"]
    for v in ["0", "3.5"]:
        replaced(base, "--frames", v)
    for v in ["nan", "1e308"]:
        replaced(base, "--max-fps", v)
    for v in ["-64x48", "64x48x3", "99999999999x1", "100000x100000", "9223372036854775807x2"]:
        replaced(base, "--size", v)
    replaced(base, "--size", "1x1", must_fail=None)
    for v in ["0x0@30:YUYV", ":ZZZZ", "64x48@nan", "64x48@2000000000:GREY"]:
        replaced(base, "--format", v)
    for v in ["101", "nan"]:
        replaced(base + ["--format", "64x48@30:MJPG"], "--corrupt-frames", v)
    for v in ["-1ms", "1e308s"]:
        replaced(base, "--consumer-delay", v)
    for v in ["-1m", "5furlongs", "1e-300m"]:
        replaced(base, "--convergence", v)
    for v in ["0s", "nans", "1e308s", "5"]:
        replaced(base, "--timeout", v)
    vbase = ["stream", "--virtual", "--frames", "3", "--timeout", "10s"]
    for option, v in [("--unplug", "middle@1s"), ("--unplug", "left@-1s"), ("--unplug", "left@1e308s"),
                      ("--replug", "right@1s"), ("--fault", "left@1s:bogus"), ("--fault", "right@1s:stall=nans"),
                      ("--fault", "right@1s:sequence-gap=99999999999999999999")]:
        replaced(vbase, option, v)

    # view --simulated (a bounded run: a case wrongly taken ends after --duration, exit 0)
    wbase = ["view", "--simulated", "--size", "64x48", "--port", "0", "--duration", "3s", "--save-to", "view-pairs"]
    for v in ["70000", "-1", "abc", "1e3"]:
        replaced(wbase, "--port", v)
    for v in ["0", "101", "nan"]:
        replaced(wbase, "--quality", v)
    for v in ["localhost; rm -rf /", "", "example.com"]:
        replaced(wbase, "--listen", v)
    replaced(wbase, "--listen", "203.0.113.7", name="cannot serve", progress_first=True)
    for v in ["-1s", "nans", "1e308s"]:
        replaced(wbase, "--duration", v)
    for v in ["-1m", "0.001m"]:
        replaced(wbase, "--convergence", v)
    add(fam, "view --time-compressed with cameras", ["view", "--virtual", "--port", "0", "--duration", "3s", "--time-compressed"],
        must_fail=True, must_name="--time-compressed")

    # capture --simulated
    cbase = ["capture", "--simulated", "--size", "64x48", "--frames", "3", "--timeout", "10s", "--output", "rec"]
    for v in ["0", "-5", "nan"]:
        replaced(cbase, "--frames", v)
    # A count it cannot reach: the run ends at --timeout, saying so.
    replaced(cbase, "--frames", "9223372036854775807", name="timed out", progress_first=True)
    for v in ["0x0", "99999999999x1"]:
        replaced(cbase, "--size", v)
    replaced(cbase, "--timeout", "nans")
    for v in [":ZZZZ", "64x48@30:UYVY"]:
        replaced(cbase, "--format", v, name=v)
    replaced(cbase + ["--format", "64x48@30:MJPG"], "--corrupt-frames", "200")

    # rectification and rectify
    rbase = ["rectification", "--calibration", sample_path]
    for v in ["nan", "2", "-2", "1.0000001"]:
        replaced(rbase, "--alpha", v)
    for v in ["0", "inf", "1e-300", "5furlongs", "0x10"]:
        replaced(rbase, "--convergence", v)
    replaced(rbase, "--convergence", "1e308", must_fail=None)
    replaced(rbase, "--convergence", "1.5m", must_fail=None)
    for v in ["0x0", "99999999999x1", "100000x100000"]:
        replaced(rbase, "--size", v)
    replaced(rbase, "--size", "1x1", must_fail=None)
    rect_base = rectify_args(sample_path)
    for v in ["0", "-1", "99999999999999999999"]:
        replaced(rect_base, "--threads", v)
    replaced(rect_base, "--threads", "100000", must_fail=None)
    replaced(rect_base, "--interpolation", "lanczos")
    replaced(rect_base, "--alpha", "nan")

    # calibrate (refused before any detection, naming the square or board as typed)
    kbase = ["calibrate", "--left", LEFT_GLOB, "--right", RIGHT_GLOB, "--board", "9x6", "--square", "25mm", "--output", "rig.json"]
    for v in ["-25mm", "0", "nan", "25furlongs", ""]:
        replaced(kbase, "--square", v, name="square size '%s'" % v)
    # Absurd but positive: refused before any work (a printed square is 0.1 mm to 10 m).
    for v in ["1e-320mm", "1000000mm", "1e308mm"]:
        replaced(kbase, "--square", v, name="square size '%s'" % v)
    for v in ["-1", "nan"]:
        replaced(kbase, "--max-rms", v)
    for v in ["0s", "1e18s"]:
        replaced(kbase, "--time-budget", v)
    for v in ["0x0", "99999999999x6", "circles:0x4"]:
        replaced(kbase, "--board", v, name="target '%s'" % v)
    replaced(kbase, "--model", "brown3")
    lbase = ["calibrate", "--live", "--simulated", "--size", "320x240", "--output", "rig.json"]
    for v in ["2", "99999999999999999999"]:
        replaced(lbase, "--pairs", v)
    for v in ["-1", "nan"]:
        replaced(lbase, "--uncertainty-target", v)
    replaced(kbase, "--max-rms", "-0.5")
    for v in ["nans", "5"]:
        replaced(lbase, "--time-limit", v)
    replaced(lbase, "--size", "0x0")


def output_cases():
    fam = "outputs"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")
    earlier = b"an earlier image, not really\n"
    imgs = {"left.jpg": Copy(L_IMG), "right.jpg": Copy(R_IMG)}

    def rect(name, out, files=None, must_name=None, must_fail=True, extra=(), **kw):
        f = dict(imgs)
        f.update(files or {})
        add(fam, "rectify " + name, rectify_args(sample_path, left="left.jpg", right="right.jpg", out=out) + list(extra),
            files=f, must_fail=must_fail, must_name=must_name, **kw)

    rect("--output-left is --left", ["--output-left", "left.jpg", "--output-right", "r.png"], must_name="--output-left")
    rect("--output-right is --left via ./", ["--output-left", "l.png", "--output-right", "./left.jpg"], must_name="--output-right")
    rect("--output-left is a link to --right", ["--output-left", "link.jpg", "--output-right", "r.png"],
         files={"link.jpg": Link("right.jpg")}, must_name="--output-left")
    rect("--output-left is --calibration (png copy)", ["--output-left", "rig.png", "--output-right", "r.png"],
         files={"rig.png": Copy(sample_path)}, must_name="rig.png",
         note="rig.png holds the calibration; rectify reads it as --calibration below")
    CASES[-1].args[CASES[-1].args.index("--calibration") + 1] = "rig.png"
    rect("both outputs the same", ["--output-left", "o.png", "--output-right", "o.png"], files={"o.png": earlier},
         must_name="o.png")
    rect("--preview is --output-left", ["--output-left", "o.png", "--output-right", "r.png"], files={"o.png": earlier},
         extra=["--preview", "o.png"], must_name="o.png")
    rect("--anaglyph is --left", ["--output-left", "l.png", "--output-right", "r.png"], extra=["--anaglyph", "left.jpg"],
         must_name="--anaglyph")
    rect("--output-left is a folder", ["--output-left", "folder.png", "--output-right", "r.png"],
         files={"folder.png/keep.txt": "mine\n"}, must_name="folder.png")
    rect("--output-left is a FIFO", ["--output-left", "fifo.png", "--output-right", "r.png"], files={"fifo.png": Fifo()},
         must_name="fifo.png", timeout=15)
    rect("--output-right is a link to a FIFO", ["--output-left", "l.png", "--output-right", "link.png"],
         files={"fifo.png": Fifo(), "link.png": Link("fifo.png")}, must_name="link.png", timeout=15)
    rect("--output-left's parent is a file", ["--output-left", "file/l.png", "--output-right", "r.png"],
         files={"file": "a file\n", "r.png": earlier}, must_name="file")
    rect("--output-left in a read-only folder", ["--output-left", "ro/l.png", "--output-right", "r.png"],
         files={"ro/l.png": earlier, "r.png": earlier}, chmod={"ro": 0o555}, needs_non_root=True, must_name="ro")
    rect("--output-left .bmp", ["--output-left", "l.bmp", "--output-right", "r.png"], must_name="l.bmp")
    rect("--output-left without an extension", ["--output-left", "left", "--output-right", "r.png"], must_name="left")
    rect("--output-left empty", ["--output-left", "", "--output-right", "r.png"], must_name="--output-left")
    rect("--output-left .PNG (good)", ["--output-left", "L.PNG", "--output-right", "r.png"], must_fail=None,
         must_name="L.PNG")
    rect("--output-left a symlink loop", ["--output-left", "loop.png", "--output-right", "r.png"],
         files={"loop.png": Link("loop2.png"), "loop2.png": Link("loop.png")}, must_name="loop.png")

    # target
    for label, out, files, name in [("a FIFO", "fifo.svg", {"fifo.svg": Fifo()}, "fifo.svg"),
                                    ("a folder", "folder.svg", {"folder.svg/keep.txt": "mine\n"}, "folder.svg"),
                                    ("parent is a file", "file/b.svg", {"file": "a file\n"}, "file"),
                                    ("not .svg", "board.png", {}, "board.png"),
                                    ("empty", "", {}, "--output")]:
        add(fam, "target --output %s" % label, ["target", "--board", "9x6", "--square", "25mm", "--output", out],
            files=files, must_name=name, timeout=15)

    # calibrate (inputs copied in, so a wrong write would hit the copy)
    pairs = {}
    for k in [1, 2, 3, 4, 5, 6]:
        pairs["img/left%02d.jpg" % k] = Copy(DATA + "/left%02d.jpg" % k)
        pairs["img/right%02d.jpg" % k] = Copy(DATA + "/right%02d.jpg" % k)
    kb = ["calibrate", "--left", "img/left*.jpg", "--right", "img/right*.jpg", "--board", "9x6", "--square", "1"]
    left_ros, right_ros = ros_pair()
    intr = read_bytes(fixture("Calibration/examples/opencv-intrinsics.yml")).decode()
    intr = intr.replace("---\n", "---\nimage_width: 640\nimage_height: 480\n", 1)
    extr = read_bytes(fixture("Calibration/examples/opencv-extrinsics.yml")).decode()
    kcases = [
        ("--output is a --left image", ["--output", "img/left01.jpg"], {}, "--output"),
        ("--opencv-yaml is --output", ["--output", "rig.json", "--opencv-yaml", "rig.json"], {}, "rig.json"),
        ("--ros-dir is a file", ["--output", "rig.json", "--ros-dir", "ros"], {"ros": "a file\n"}, "ros"),
        ("--report is a file", ["--output", "rig.json", "--report", "report"], {"report": "a file\n"}, "report"),
        ("--corners-out is a FIFO", ["--output", "rig.json", "--corners-out", "c.fifo"], {"c.fifo": Fifo()}, "c.fifo"),
        ("--kalibr is --against", ["--output", "rig.json", "--against", "old.json", "--kalibr", "old.json"],
         {"old.json": Copy(sample_path)}, "--kalibr"),
        ("--output is --intrinsics", ["--output", "old.json", "--intrinsics", "old.json"], {"old.json": Copy(sample_path)}, "--output"),
        ("--output is a file inside the --intrinsics ROS folder", ["--output", "ros/left.yaml", "--intrinsics", "ros"],
         {"ros/left.yaml": left_ros, "ros/right.yaml": right_ros}, "--output"),
        ("--opencv-yaml is the first of --intrinsics a,b", ["--output", "rig.json", "--opencv-yaml", "intr.yml",
                                                            "--intrinsics", "intr.yml,extr.yml"],
         {"intr.yml": intr, "extr.yml": extr}, "--opencv-yaml"),
        ("--ros-dir holds the --against ROS pair", ["--output", "rig.json", "--ros-dir", "ros", "--against", "ros"],
         {"ros/left.yaml": left_ros, "ros/right.yaml": right_ros}, "--ros-dir"),
        ("--output's parent is a file", ["--output", "file/rig.json"], {"file": "a file\n"}, "file"),
        ("--output is a folder", ["--output", "folder"], {"folder/keep.txt": "mine\n"}, "folder"),
    ]
    for label, extra, files, name in kcases:
        f = dict(pairs)
        f.update(files)
        add(fam, "calibrate " + label, kb + extra, files=f, must_name=name, progress_first=True)

    # capture
    rec = ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"]
    make_rec = [["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"]]
    add(fam, "capture into a non-empty folder", rec, files={"rec/mine.txt": "mine\n"}, must_name="rec")
    add(fam, "capture into an older recording without --overwrite", rec, setup=make_rec, must_name="rec")
    add(fam, "capture --overwrite, calibration does not load", rec + ["--overwrite", "--calibration", "bad.json"],
        setup=make_rec, outputs=["rec/cam0", "rec/cam1"], files={"bad.json": "{ \"left\": 1 }"}, must_name="bad.json")
    add(fam, "capture --overwrite, calibration is a YAML bomb", rec + ["--overwrite", "--calibration", "bomb.yml"],
        setup=make_rec, timeout=10, outputs=["rec/cam0", "rec/cam1"], files={"bomb.yml": opencv_yaml(extra='a: &a ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
            "%s: &%s [%s]\n" % (n, n, ",".join(["*" + p] * 10)) for p, n in zip("abcdefgh", "bcdefghi")))},
        must_name="bomb.yml")
    add(fam, "capture --overwrite, calibration with a NaN", rec + ["--overwrite", "--calibration", "nan.json"],
        setup=make_rec, outputs=["rec/cam0", "rec/cam1"], files={"nan.json": dump_json(with_value("right.intrinsics.cy", Raw("NaN")))}, must_name="nan.json")
    add(fam, "capture --overwrite, a format the rig cannot make", rec + ["--overwrite", "--format", "32x24@30:UYVY"],
        setup=make_rec, outputs=["rec/cam0", "rec/cam1"], must_name="UYVY")
    add(fam, "capture --overwrite, out of time", ["capture", "--simulated", "--output", "rec", "--overwrite", "--size",
                                                   "1920x1080", "--frames", "500", "--timeout", "1s"],
        setup=make_rec, outputs=["rec/cam0", "rec/cam1"], must_name="rec", progress_first=True)
    add(fam, "capture --overwrite, calibration inside the older cam0", rec + ["--overwrite", "--calibration", "rec/cam0/rig.json"],
        setup=make_rec, files_after_setup={"rec/cam0/rig.json": Copy(sample_path)}, must_fail=None,
        may_change=["rec/cam0/data", "rec/cam0/data.csv", "rec/cam1"], must_name="rig.json",
        note="the calibration the user keeps in rec/cam0 is an input of the run")
    add(fam, "capture --output is a file", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "file"],
        files={"file": "a file\n"}, must_name="file")
    add(fam, "capture --output's parent is a file", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output",
                                                     "file/rec"], files={"file": "a file\n"}, must_name="file")
    add(fam, "capture --output is a FIFO", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "fifo"],
        files={"fifo": Fifo()}, must_name="fifo", timeout=15)
    add(fam, "capture --output is a link to a file", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output",
                                                      "link"], files={"target.txt": "mine\n", "link": Link("target.txt")},
        must_name="link")
    add(fam, "capture into a read-only folder", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output",
                                                 "ro/rec"], files={"ro": Folder()}, chmod={"ro": 0o555}, needs_non_root=True,
        must_name="ro")


def dataset_cases():
    """rectify-dataset, bags as outputs and sensor.yaml: refused with the name, nothing of the user's lost."""
    fam = "datasets"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")
    make_rec = [["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"]]
    rig = {"rig.json": Copy(sample_path)}
    rd = ["rectify-dataset", "--calibration", "rig.json"]
    add(fam, "rectify-dataset --input missing", rd + ["--input", "nothing", "--output", "out"], files=rig, must_name="nothing")
    add(fam, "rectify-dataset --input with a broken data.csv", rd + ["--input", "rec", "--output", "out"], files=rig,
        setup=make_rec, files_after_setup={"rec/cam0/data.csv": "#timestamp [ns],filename\nnot a number,x.png\n"},
        must_name="data.csv")
    add(fam, "rectify-dataset --output inside --input", rd + ["--input", "rec", "--output", "rec/out"], files=rig,
        setup=make_rec, must_name="--output")
    add(fam, "rectify-dataset --output is the user's folder", rd + ["--input", "rec", "--output", "mine"],
        files=dict(rig, **{"mine/notes.txt": "mine\n"}), setup=make_rec, must_name="mine")
    add(fam, "rectify-dataset --output is a file", rd + ["--input", "rec", "--output", "file"],
        files=dict(rig, file="a file\n"), setup=make_rec, must_name="file")
    add(fam, "rectify-dataset --shard 5/4", rd + ["--input", "rec", "--output", "out", "--shard", "5/4"], files=rig,
        setup=make_rec, must_name="--shard")
    add(fam, "rectify-dataset --shard @UNSET/4", rd + ["--input", "rec", "--output", "out", "--shard", "@PARALLAX_NO_SUCH_VAR/4"],
        files=rig, setup=make_rec, must_name="PARALLAX_NO_SUCH_VAR")
    add(fam, "rectify-dataset --input is a text file", rd + ["--input", "notes.mcap", "--output", "out"],
        files=dict(rig, **{"notes.mcap": "not a bag\n"}), must_name="notes.mcap")
    add(fam, "capture --bag over the user's folder", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--bag",
                                                      "--overwrite", "--output", "mine"],
        files={"mine/notes.txt": "mine\n"}, must_name="mine")
    add(fam, "capture --bag onto a file", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--bag", "--output",
                                           "file"], files={"file": "a file\n"}, must_name="file")
    add(fam, "stream --record onto an existing bag", ["stream", "--simulated", "--frames", "3", "--size", "32x24", "--record",
                                                      "old.mcap"], files={"old.mcap": "an older bag\n"}, must_name="old.mcap")
    # Bags that lie: rosbag2 metadata is what a folder holds (rosbag2 reads it so); one topic
    # cannot be both cameras; image topics must be ROS 2's CDR.
    make_bag = [["capture", "--simulated", "--frames", "3", "--size", "32x24", "--bag", "--output", "bag"]]
    meta = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: {storage}\n  relative_file_paths:\n{files}"
    play = ["stream", "--raw", "--frames", "2", "--recording", "bag"]
    add(fam, "stream --recording a sqlite3 rosbag2 folder", play,
        files={"bag/metadata.yaml": meta.format(storage="sqlite3", files="    - bag_0.db3\n"), "bag/bag_0.db3": "SQLite format 3\0"},
        must_name=["sqlite3", "ros2 bag convert"])
    add(fam, "stream --recording a split rosbag2 bag", play, setup=make_bag,
        files_after_setup={"bag/metadata.yaml": meta.format(storage="mcap", files="    - bag_0.mcap\n    - bag_1.mcap\n")},
        must_name=["2 files", "bag_1.mcap"])
    add(fam, "stream --recording: metadata.yaml names a file that is not there", play, setup=make_bag,
        files_after_setup={"bag/metadata.yaml": meta.format(storage="mcap", files="    - other_0.mcap\n")}, must_name="other_0.mcap")
    add(fam, "stream --recording: metadata.yaml that is not rosbag2's", play, setup=make_bag,
        files_after_setup={"bag/metadata.yaml": "topics: [a, b\n"}, must_name="metadata.yaml")
    add(fam, "stream --recording a FIFO named .mcap", ["stream", "--raw", "--frames", "2", "--recording", "fifo.mcap"],
        files={"fifo.mcap": Fifo()}, must_name=["fifo.mcap", "not a regular file"], timeout=15)
    add(fam, "stream --recording: one topic for both cameras", ["stream", "--raw", "--frames", "2", "--recording", "bag",
                                                               "--left-topic", "/stereo/left/image_raw", "--right-topic",
                                                               "/stereo/left/image_raw"],
        setup=make_bag, must_name="/stereo/left/image_raw")
    add(fam, "rectify-dataset: one topic for both cameras", rd + ["--input", "bag", "--output", "out", "--left-topic",
                                                                  "/stereo/right/image_raw", "--right-topic", "/stereo/right/image_raw"],
        files=rig, setup=make_bag, must_name="/stereo/right/image_raw")
    add(fam, "--calibration with a broken sensor.yaml", ["rectification", "--calibration", "rec"], setup=make_rec,
        files_after_setup={"rec/cam0/sensor.yaml": "sensor_type: camera\nresolution: [32, 24]\ncamera_model: pinhole\n"},
        must_name="sensor.yaml")


def disparity_cases():
    """parallax disparity: bad images, ranges and outputs refused with the value or file named, nothing lost."""
    fam = "disparity"
    good = png(640, 480)
    pair = {"l.png": good, "r.png": good}

    def disparity(extra, **kw):
        return ["disparity", "--left", "l.png", "--right", "r.png"] + extra

    add(fam, "disparity --disparities 24", disparity(["--disparities", "24", "--output", "d.pfm"]), files=pair,
        must_name="--disparities")
    add(fam, "disparity --disparities 0", disparity(["--disparities", "0", "--output", "d.pfm"]), files=pair,
        must_name="--disparities")
    add(fam, "disparity --disparities 99999999999", disparity(["--disparities", "99999999999", "--output", "d.pfm"]),
        files=pair, must_name="--disparities")
    add(fam, "disparity range past the width", disparity(["--disparities", "256", "--min-disparity", "500", "--output", "d.pfm"]),
        files=pair, must_name="640 pixels wide")
    add(fam, "disparity --p2 above 255 - the census bits", disparity(["--p2", "250", "--output", "d.pfm"]), files=pair,
        must_name="--p2")
    add(fam, "disparity --census 4x4", disparity(["--census", "4x4", "--output", "d.pfm"]), files=pair, must_name="census")
    add(fam, "disparity --census nonsense", disparity(["--census", "big", "--output", "d.pfm"]), files=pair, must_name="--census")
    add(fam, "disparity --threads 3", disparity(["--threads", "3", "--output", "d.pfm"]), files=pair, must_name="--threads")
    add(fam, "disparity pair of two sizes", ["disparity", "--left", "l.png", "--right", "small.png", "--output", "d.pfm"],
        files={"l.png": good, "small.png": png(320, 240)}, must_name="small.png")
    add(fam, "disparity right image truncated", ["disparity", "--left", "l.png", "--right", "cut.png", "--output", "d.pfm"],
        files={"l.png": good, "cut.png": good[:len(good) // 2]}, must_name="cut.png")
    add(fam, "disparity 1x1 images", ["disparity", "--left", "one.png", "--right", "one.png", "--output", "d.pfm"],
        files={"one.png": png(1, 1)}, must_name="1 pixels wide")
    add(fam, "disparity --output .tiff", disparity(["--output", "d.tiff"]), files=pair, must_name="d.tiff")
    add(fam, "disparity --output is an input", disparity(["--output", "l.png"]), files=pair, must_name="--output")
    add(fam, "disparity --output into a missing folder (made, as every command's outputs)", disparity(["--output", "no/such/d.pfm"]),
        files=pair, must_fail=False)
    add(fam, "disparity --output is a FIFO", disparity(["--output", "fifo.pfm"]), files=dict(pair, **{"fifo.pfm": Fifo()}),
        must_name="fifo.pfm", timeout=15)
    add(fam, "disparity negative range as 16-bit PNG", disparity(["--min-disparity", "-16", "--output", "d.png"]), files=pair,
        must_name="d.png")
    add(fam, "disparity --color is a folder", disparity(["--output", "d.pfm", "--color", "pics.png"]),
        files=dict(pair, **{"pics.png": Folder()}), must_name="pics.png")


def good_cases():
    fam = "good"
    sample_path = fixture("Tests/Fixtures/opencv/opencv-sample-calibration.json")
    calibrations = [
        sample_path,
        fixture("Calibration/examples/parallax-calibration.json"),
        fixture("Calibration/examples/opencv-stereo.yml"),
        fixture("Calibration/examples/opencv-stereo-written-by-parallax.yml"),
        fixture("Calibration/examples/ros"),
        fixture("Calibration/examples/ros/left.yaml") + "," + fixture("Calibration/examples/ros/right.yaml"),
        fixture("Tests/Fixtures/exchange/opencv/stereo.yml"),
        fixture("Tests/Fixtures/exchange/opencv/stereo-rodrigues.yml"),
        fixture("Tests/Fixtures/exchange/opencv/intrinsics-with-size.yml") + "," + fixture("Tests/Fixtures/exchange/opencv/extrinsics.yml"),
        fixture("Tests/Fixtures/exchange/ros-camera_calibration"),
        fixture("Tests/Fixtures/exchange/ros-camera_info_manager"),
    ]
    for c in calibrations:
        add(fam, "rectification " + os.path.relpath(c.split(",")[0], ROOT) + (" (pair)" if "," in c else ""),
            ["rectification", "--calibration", c, "--json"], must_fail=False)
    add(fam, "rectify with opencv-stereo.yml", rectify_args(fixture("Calibration/examples/opencv-stereo.yml")), must_fail=False)
    add(fam, "rectify with the ros folder", rectify_args(fixture("Calibration/examples/ros")), must_fail=False)
    text = dump_json(sample())
    add(fam, "rectification UTF-8 BOM", ["rectification", "--calibration", "bom.json"],
        files={"bom.json": b"\xef\xbb\xbf" + text.encode()}, must_fail=False)
    add(fam, "rectification UTF-16LE with BOM", ["rectification", "--calibration", "u16.json"],
        files={"u16.json": text.encode("utf-16")}, must_fail=False)
    add(fam, "rectification UTF-16BE with BOM", ["rectification", "--calibration", "u16.json"],
        files={"u16.json": b"\xfe\xff" + text.encode("utf-16-be")}, must_fail=False)
    add(fam, "rectification CRLF JSON", ["rectification", "--calibration", "crlf.json"],
        files={"crlf.json": text.replace("\n", "\r\n")}, must_fail=False)
    add(fam, "rectification JSON without skew", ["rectification", "--calibration", "noskew.json"],
        files={"noskew.json": dump_json(without("right.intrinsics.skew", without("left.intrinsics.skew")))}, must_fail=False)
    add(fam, "rectification JSON with an unknown key", ["rectification", "--calibration", "extra.json"],
        files={"extra.json": dump_json(with_value("comment", "rig on the bench"))}, must_fail=False)
    add(fam, "rectification JSON in mm with --convergence 1.5m", ["rectification", "--calibration", "mm.json", "--convergence", "1.5m"],
        files={"mm.json": dump_json(with_value("unit", "cm"))}, must_fail=False)
    add(fam, "rectification OpenCV YAML written here", ["rectification", "--calibration", "opencv.yml"],
        files={"opencv.yml": opencv_yaml(extra='translation_unit: "mm"\n')}, must_fail=False)
    add(fam, "rectification intrinsics+extrinsics with a size", ["rectification", "--calibration", "intr.yml,extr.yml"],
        files={"intr.yml": read_bytes(fixture("Calibration/examples/opencv-intrinsics.yml")).decode().replace(
            "---\n", "---\nimage_width: 640\nimage_height: 480\n", 1),
               "extr.yml": Copy(fixture("Calibration/examples/opencv-extrinsics.yml"))}, must_fail=False)
    for alpha in ["-1", "1"]:
        add(fam, "rectification --alpha %s" % alpha, ["rectification", "--calibration", sample_path, "--alpha", alpha],
            must_fail=False)
    add(fam, "rectification --size 320x240", ["rectification", "--calibration", sample_path, "--size", "320x240"], must_fail=False)
    add(fam, "rectification --convergence 100", ["rectification", "--calibration", sample_path, "--convergence", "100"],
        must_fail=False)
    add(fam, "rectify the sample pair", rectify_args(sample_path), must_fail=False)
    add(fam, "rectify to jpg, pgm, ppm with preview and anaglyph",
        rectify_args(sample_path, out=["--output-left", "l.jpg", "--output-right", "r.pgm", "--preview", "p.ppm",
                                       "--anaglyph", "a.png"]), must_fail=False)
    add(fam, "rectify over earlier outputs", rectify_args(sample_path), files={"l.png": "old\n", "r.png": "old\n"},
        may_change=["l.png", "r.png"], must_fail=False)
    add(fam, "rectify through a link", rectify_args(sample_path, out=["--output-left", "link.png", "--output-right", "r.png"]),
        files={"link.png": Link("target.png"), "target.png": "old\n"}, may_change=["target.png"], must_fail=False)
    add(fam, "rectify bicubic, 1 thread", rectify_args(sample_path) + ["--interpolation", "bicubic", "--threads", "1"],
        must_fail=False)
    for l, r in [("640x480@30", "640x480@30"), ("320x240@30:YUYV", "320x240@30:YUYV"), ("640x480@30:MJPG", "640x480@30:YUYV")]:
        add(fam, "cost %s + %s" % (l, r), ["cost", "--left", l, "--right", r], must_fail=False)
    add(fam, "cost on separate buses", ["cost", "--left", "800x600@25", "--right", "800x600@25", "--bus", "separate", "--json"],
        must_fail=False)
    add(fam, "cost USB 3", ["cost", "--left", "1280x720@30", "--right", "1280x720@30", "--usb", "3"], must_fail=False)
    add(fam, "cost with --max-fps", ["cost", "--left", "1280x720@30", "--right", "1280x720@30", "--max-fps", "5"], must_fail=False)
    add(fam, "target 9x6 25mm", ["target", "--board", "9x6", "--square", "25mm", "--output", "b.svg"], must_fail=False)
    add(fam, "target circles letter", ["target", "--board", "circles:4x11", "--square", "20mm", "--paper", "letter",
                                       "--output", "c.svg"], must_fail=False)
    add(fam, "target acircles 1in", ["target", "--board", "acircles:4x11", "--square", "0.5in", "--output", "a.svg"],
        must_fail=False)
    add(fam, "stream simulated small", ["stream", "--simulated", "--size", "64x48", "--frames", "3", "--timeout", "10s"],
        must_fail=False)
    add(fam, "stream simulated MJPG json", ["stream", "--simulated", "--format", "64x48@30:MJPG", "--frames", "3", "--timeout",
                                            "10s", "--json"], must_fail=False)
    # Long enough for the simulated rig's 40 ppm drift to add up (20,000 pairs take about a second).
    add(fam, "stream simulated 20000 pairs", ["stream", "--simulated", "--size", "64x48", "--frames", "20000", "--timeout",
                                              "60s"], must_fail=False, timeout=60)
    add(fam, "stream virtual", ["stream", "--virtual", "--frames", "3", "--timeout", "10s"], must_fail=False)
    add(fam, "capture simulated small", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"],
        must_fail=False)
    add(fam, "capture --overwrite replaces an older recording",
        ["capture", "--simulated", "--frames", "4", "--size", "32x24", "--output", "rec", "--overwrite"],
        setup=[["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"]],
        files_after_setup={"rec/notes.txt": "mine\n"}, may_change=["rec/cam0", "rec/cam1"], must_fail=False)
    add(fam, "rectify-dataset of a recording, sharded", ["rectify-dataset", "--input", "rec", "--calibration", "rec",
                                                        "--output", "out", "--shard", "2/2"],
        setup=[["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", "rec"]], must_fail=False)
    add(fam, "capture --bag", ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--bag", "--output", "rec_bag"],
        must_fail=False)
    add(fam, "capture --independent", ["capture", "--simulated", "--independent", "--frames", "3", "--size", "32x24",
                                       "--output", "rec"], must_fail=False)
    add(fam, "calibrate the sample images", ["calibrate", "--left", LEFT_GLOB, "--right", RIGHT_GLOB, "--board", "9x6",
                                             "--square", "25mm", "--output", "rig.json", "--opencv-yaml", "rig.yml",
                                             "--ros-dir", "ros", "--kalibr", "camchain.yaml"], must_fail=False)
    add(fam, "calibrate one camera", ["calibrate", "--images", LEFT_GLOB, "--board", "9x6", "--square", "25mm",
                                      "--output", "cam.json"], must_fail=False)


# ----------------------------------------------------------------------------------------
# Running a case.

TEMP_MARKERS = (".partial-", ".parallax-staging-", ".tmp")
CRASH_TEXTS = ("Fatal error", "Segmentation", "Illegal instruction", "Stack dump", "Swift runtime failure")


def make_files(folder, files):
    # Parents before children; links and FIFOs last among siblings does not matter.
    for rel in sorted(files, key=lambda p: (p.count("/"), p)):
        spec = files[rel]
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(spec, Folder):
            os.makedirs(path, exist_ok=True)
        elif isinstance(spec, Fifo):
            os.mkfifo(path, 0o644)
        elif isinstance(spec, Link):
            os.symlink(spec.target, path)
        elif isinstance(spec, Copy):
            with open(spec.source, "rb") as src, open(path, "wb") as dst:
                dst.write(src.read())
        elif isinstance(spec, Zeros):
            with open(path, "wb") as f:
                chunk = b"\0" * (1 << 20)
                left = spec.size
                while left > 0:
                    f.write(chunk[:min(left, len(chunk))])
                    left -= len(chunk)
        else:
            data = spec.encode() if isinstance(spec, str) else spec
            with open(path, "wb") as f:
                f.write(data)


def describe(path):
    """What is at `path`, without following a final link or opening a FIFO or device."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    except OSError as e:
        return ("unreadable", e.errno)
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(mode):
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except PermissionError:
            return ("file", st.st_size, "unreadable")
        return ("file", st.st_size, h.hexdigest())
    if stat.S_ISDIR(mode):
        return ("folder",)
    if stat.S_ISFIFO(mode):
        return ("fifo",)
    return ("other", stat.S_IFMT(mode))


def snapshot(folder, skip):
    """Every entry under `folder` (relative path -> describe()), except those under `skip`."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                continue
            result[rel] = describe(path)
    return result


def external_inputs(args):
    """Absolute paths of the repository's and OpenCV's files the command names (comma lists too)."""
    paths = []
    for arg in args:
        for part in arg.split(","):
            if part.startswith(ROOT + "/") or part.startswith(DATA + "/"):
                if os.path.isdir(part):
                    for dirpath, _, filenames in os.walk(part):
                        paths += [os.path.join(dirpath, n) for n in filenames]
                elif os.path.exists(part):
                    paths.append(part)
    return sorted(set(paths))


def leftovers(folder):
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            if any(marker in name for marker in TEMP_MARKERS):
                found.append(os.path.relpath(os.path.join(dirpath, name), folder))
    return sorted(found)


def seconds_of(duration):
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)(ns|us|µs|ms|s|min|h)", duration or "")
    if not m:
        return None
    factor = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}[m.group(2)]
    value = float(m.group(1)) * factor
    return value if math.isfinite(value) else None


class Result:
    def __init__(self, case, index):
        self.case = case
        self.index = index
        self.verdict = None
        self.details = []
        self.status = None
        self.elapsed = 0.0
        self.stderr = b""


RUNNING = set()  # process groups of the runs in progress (ended on Ctrl-C)
RUNNING_LOCK = threading.Lock()
STOPPING = threading.Event()


def run_parallax(parallax, args, cwd, timeout, out_path, err_path):
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        with RUNNING_LOCK:
            if STOPPING.is_set():
                raise KeyboardInterrupt
            proc = subprocess.Popen([parallax] + args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            RUNNING.add(proc.pid)
        timed_out = False
        try:
            status = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            status = proc.wait()
    elapsed = time.monotonic() - started
    with RUNNING_LOCK:
        RUNNING.discard(proc.pid)
    # A child the CLI left running in its group (it should leave none).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    with open(err_path, "rb") as f:
        stderr = f.read()
    return status, timed_out, elapsed, stderr


def run_case(parallax, work, index, case, is_root):
    result = Result(case, index)
    if case.needs_non_root and is_root:
        result.verdict = "SKIPPED"
        return result
    folder = os.path.join(work, "cases", "%03d" % index)
    os.makedirs(folder)
    logs = os.path.join(work, "logs")
    make_files(folder, case.files)
    for step, setup in enumerate(case.setup):
        status, timed_out, _, err = run_parallax(parallax, setup, folder, 60,
                                                 os.path.join(logs, "%03d-setup%d.out" % (index, step)),
                                                 os.path.join(logs, "%03d-setup%d.err" % (index, step)))
        if status != 0 or timed_out:
            result.verdict = "REFUSED"
            result.details.append("setup `parallax %s` failed (status %s): %s" % (
                " ".join(shlex.quote(a) for a in setup), status, first_line(err)))
            return result
    make_files(folder, case.files_after_setup)
    for rel, mode in case.chmod.items():
        os.chmod(os.path.join(folder, rel), mode)
    before = snapshot(folder, case.may_change)
    external = {p: describe(p) for p in external_inputs(case.args)}

    status, timed_out, elapsed, stderr = run_parallax(parallax, case.args, folder, case.timeout,
                                                      os.path.join(logs, "%03d.out" % index),
                                                      os.path.join(logs, "%03d.err" % index))
    result.status, result.elapsed, result.stderr = status, elapsed, stderr
    for rel in case.chmod:
        os.chmod(os.path.join(folder, rel), 0o755)
    after = snapshot(folder, case.may_change)
    lost, rewritten = [], []
    for rel, was in before.items():
        now = after.get(rel, ("missing",))
        if now != was:
            change = "%s: %s -> %s" % (rel, short(was), short(now))
            if status == 0 and any(rel == o or rel.startswith(o + "/") for o in case.outputs):
                rewritten.append(change)  # the output of a run that succeeded
            else:
                lost.append(change)
    for path, was in external.items():
        now = describe(path)
        if now != was:
            lost.append("%s: %s -> %s" % (path, short(was), short(now)))
    temps = leftovers(folder)
    text = stderr.decode("utf-8", "replace")

    declared_timeout = None
    if "--timeout" in case.args:
        declared_timeout = seconds_of(case.args[case.args.index("--timeout") + 1])
    losses = ["changed: " + x for x in lost] + ["left behind: " + x for x in temps]
    if timed_out:
        result.verdict = "HANG"
        result.details += ["killed after %.1f s" % elapsed] + losses
    elif status < 0 or status in (132, 134, 139) or any(t in text for t in CRASH_TEXTS):
        result.verdict = "CRASH"
        result.details += ["status %d%s" % (status, " (signal %s)" % signal.Signals(-status).name if status < 0 else "")]
        result.details += losses
    elif declared_timeout is not None and elapsed > declared_timeout + 1:
        result.verdict = "HANG"
        result.details += ["took %.1f s with --timeout %s" % (elapsed, case.args[case.args.index("--timeout") + 1])] + losses
    elif losses:
        result.verdict = "LOSS"
        result.details += losses
    elif case.must_fail is True and status == 0:
        result.verdict = "SILENT-WRONG"
        result.details.append("exit 0" + (" and rewrote " + "; ".join(rewritten) if rewritten else ""))
    elif case.must_fail is False and status != 0:
        result.verdict = "REFUSED"
        result.details.append("status %d" % status)
    elif status != 0:
        problems = message_problems(case, text, stderr)
        result.verdict = "MESSAGE" if problems else "OK"
        result.details += problems
    else:
        result.verdict = "OK"
    return result


def message_problems(case, text, raw):
    problems = []
    if not text.strip():
        return ["stderr is empty"]
    lines = text.splitlines()
    if case.progress_first:
        if not any(line.startswith("Error:") for line in lines):
            problems.append("no line of stderr starts with 'Error:'")
    else:
        # Warnings about the input may come first ("warning: ..."); then the error.
        while lines and lines[0].startswith("warning:"):
            lines.pop(0)
        if not lines or not lines[0].startswith("Error:"):
            problems.append("stderr does not start with 'Error:'")
    if len(raw) > 4000:
        problems.append("stderr is %d bytes" % len(raw))
    wrong = [n for n in case.must_not_name if n in text]
    if wrong:
        problems.append("says %s" % ", ".join(repr(n) for n in wrong))
    missing = [n for n in case.must_name if n not in text]
    if missing:
        problems.append("does not name %s" % ", ".join(repr(n) for n in missing))
    return problems


def short(description):
    if description[0] == "file":
        return "file of %d bytes" % description[1]
    if description[0] == "link":
        return "link to %s" % description[1]
    return description[0]


def first_line(stderr, limit=240):
    text = stderr.decode("utf-8", "replace").strip()
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return "(no stderr)"
    # The line that says most: the first error line, else the first line.
    line = next((l for l in lines if l.startswith("Error:") or "Fatal error" in l), lines[0])
    return line if len(line) <= limit else line[:limit] + "…"


def command_line(case):
    shown = []
    for a in case.args:
        if len(a) > 80:
            a = a[:60] + "…"
        a = a.replace(ROOT + "/", "")
        shown.append(shlex.quote(a))
    return "parallax " + " ".join(shown)


# ----------------------------------------------------------------------------------------


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parallax", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--only", help="run only the cases whose family/name matches this regular expression")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="print every case, not only the failing ones")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    options = parser.parse_args()
    ROOT = os.path.realpath(options.root)

    # A run that reads without bound (a device as input) ends at 3 GiB rather than taking the
    # machine's memory: it shows as a crash ("failed to allocate"), not a hang of the machine.
    limit = 3 << 30
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

    calibration_cases()
    image_cases()
    log_cases()
    option_cases()
    output_cases()
    dataset_cases()
    disparity_cases()
    good_cases()
    names = set()
    for case in CASES:
        key = "%s/%s" % (case.family, case.name)
        assert key not in names, "two cases are named %s" % key
        names.add(key)
    cases = [c for c in CASES if not options.only or re.search(options.only, "%s/%s" % (c.family, c.name))]
    if options.list:
        for i, c in enumerate(cases):
            print("%3d %-12s %-5s %s" % (i, c.family, {True: "fail", False: "pass", None: "any"}[c.must_fail], c.name))
        return 0

    os.makedirs(os.path.join(options.work, "cases"))
    os.makedirs(os.path.join(options.work, "logs"))
    is_root = os.geteuid() == 0
    started = time.monotonic()
    results = [None] * len(cases)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs))
    try:
        futures = {pool.submit(run_case, options.parallax, options.work, i, c, is_root): i for i, c in enumerate(cases)}
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except KeyboardInterrupt:
                raise
            except Exception as e:  # a bug of this script: say so, count it as failing
                r = Result(cases[i], i)
                r.verdict = "REFUSED"
                r.details.append("the harness itself failed on this case: %r" % e)
                results[i] = r
            # The case's folder can go now; what it says is in the result.
            folder = os.path.join(options.work, "cases", "%03d" % i)
            if os.path.isdir(folder):
                subprocess.run(["chmod", "-R", "u+rwX", folder], stderr=subprocess.DEVNULL)
                subprocess.run(["rm", "-rf", folder])
    except KeyboardInterrupt:
        # Ctrl-C: no new run starts, the ones in progress are ended (their own process groups).
        with RUNNING_LOCK:
            STOPPING.set()
            for pid in RUNNING:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        pool.shutdown(wait=True, cancel_futures=True)
        print("interrupted", file=sys.stderr)
        return 130
    pool.shutdown(wait=True)
    wall = time.monotonic() - started

    order = ["OK", "LOSS", "CRASH", "HANG", "SILENT-WRONG", "MESSAGE", "REFUSED"]
    counts = {v: 0 for v in order}
    skipped = 0
    for r in results:
        if r.verdict == "SKIPPED":
            skipped += 1
            continue
        counts[r.verdict] += 1
        if r.verdict != "OK" or options.verbose:
            detail = "; ".join(r.details)
            said = first_line(r.stderr) if r.stderr else ""
            print("%-12s %s/%s: `%s` -> status %s in %.1f s%s%s" % (
                r.verdict, r.case.family, r.case.name, command_line(r.case), r.status, r.elapsed,
                (": " + detail) if detail else "", (" | stderr: " + said) if said else ""))
    # Notes go to stderr: standard output is the failing cases and the two summary lines.
    if skipped:
        print("skipped %d case(s) that need a non-root user (read-only folders do not stop root)" % skipped, file=sys.stderr)
    passed = counts["OK"]
    failed = sum(counts.values()) - passed
    print("wall time %.1f s, %d cases" % (wall, len(results) - skipped), file=sys.stderr)
    sys.stdout.flush()
    print("bad inputs: %d passed, %d failed" % (passed, failed))
    print("verdicts: " + ", ".join("%s %d" % (v, counts[v]) for v in order))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
