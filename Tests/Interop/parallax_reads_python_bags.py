"""Parallax reads bags that other tools wrote: an MCAP file from mcap-ros2-support's writer
(sensor_msgs/msg/Image, mono8) and a rosbag2 folder from rosbags (MCAP storage,
sensor_msgs/msg/CompressedImage with JPEG from OpenCV), and `parallax stream --recording`
pairs every frame of each.

    parallax_reads_python_bags.py PARALLAX WORK_DIR

Each bag holds FRAMES stereo frames 1/30 s apart, the right camera 2 ms after the left
(well within half a frame interval, so every frame pairs). mcap-ros2-support writes one
bag with its default zstd chunks and one uncompressed; an lz4 bag, which Parallax does not
read, must be refused by name.
"""
import json
import os
import subprocess
import sys

import cv2
import numpy as np
from mcap_ros2.writer import Writer as McapRos2Writer
from mcap.writer import CompressionType
from rosbags.rosbag2 import StoragePlugin, Writer as Rosbag2Writer
from rosbags.typesys import Stores, get_typestore

FRAMES = 12
START = 1_700_000_000_000_000_000
INTERVAL = 33_333_333
SKEW = 2_000_000
W, H = 64, 48

# The message definitions, written for this test from the ROS 2 field lists.
TIME = "int32 sec\nuint32 nanosec"
HEADER = "builtin_interfaces/Time stamp\nstring frame_id"
IMAGE = ("std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n"
         + "=" * 80 + "\nMSG: std_msgs/Header\n" + HEADER + "\n" + "=" * 80 + "\nMSG: builtin_interfaces/Time\n" + TIME)


def picture(n, side):
    """A frame that differs from frame to frame and side to side."""
    y, x = np.mgrid[0:H, 0:W]
    return ((x * 3 + y * 5 + n * 7 + (40 if side == "right" else 0)) % 256).astype(np.uint8)


def stamp(n, side):
    return START + n * INTERVAL + (SKEW if side == "right" else 0)


def write_mcap(path, compression):
    with open(path, "wb") as f:
        writer = McapRos2Writer(f, compression=compression)
        schema = writer.register_msgdef("sensor_msgs/msg/Image", IMAGE)
        for n in range(FRAMES):
            for side in ("left", "right"):
                t = stamp(n, side)
                message = {"header": {"stamp": {"sec": t // 1_000_000_000, "nanosec": t % 1_000_000_000}, "frame_id": side},
                           "height": H, "width": W, "encoding": "mono8", "is_bigendian": 0, "step": W,
                           "data": picture(n, side).tobytes()}
                writer.write_message(f"/cam_{side}/image_raw", schema, message, log_time=t, publish_time=t, sequence=n)
        writer.finish()


def write_rosbag2(path):
    store = get_typestore(Stores.ROS2_HUMBLE)
    CompressedImage = store.types["sensor_msgs/msg/CompressedImage"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    with Rosbag2Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {side: writer.add_connection(f"/stereo/{side}/image_raw/compressed", CompressedImage.__msgtype__,
                                                   typestore=store) for side in ("left", "right")}
        for n in range(FRAMES):
            for side in ("left", "right"):
                t = stamp(n, side)
                ok, jpeg = cv2.imencode(".jpg", picture(n, side))
                assert ok
                message = CompressedImage(header=Header(stamp=Time(sec=t // 1_000_000_000, nanosec=t % 1_000_000_000), frame_id=side),
                                          format="jpeg", data=np.frombuffer(jpeg.tobytes(), dtype=np.uint8))
                writer.write(connections[side], t, store.serialize_cdr(message, CompressedImage.__msgtype__))


def stream(parallax, recording, *topics):
    arguments = [parallax, "stream", "--recording", recording, "--raw", "--json"]
    if topics:
        arguments += ["--left-topic", topics[0], "--right-topic", topics[1]]
    return subprocess.run(arguments, capture_output=True, text=True)


def main():
    parallax, work = sys.argv[1:3]
    failures = []
    plain_path = os.path.join(work, "python-writer.mcap")
    write_mcap(plain_path, CompressionType.NONE)
    zstd_path = os.path.join(work, "python-writer-zstd.mcap")
    write_mcap(zstd_path, CompressionType.ZSTD)
    bag_folder = os.path.join(work, "rosbags-writer")
    write_rosbag2(bag_folder)
    topics = ("/cam_left/image_raw", "/cam_right/image_raw")
    for recording, topics in ((plain_path, topics), (zstd_path, topics), (bag_folder, ())):
        run = stream(parallax, recording, *topics)
        if run.returncode != 0:
            failures.append(f"{recording}: parallax stream exited {run.returncode}: {run.stderr.strip()[-400:]}")
            continue
        report = json.loads(run.stdout.strip().splitlines()[-1])
        if (report["pairs"], report["left_frames"], report["right_frames"]) != (FRAMES, FRAMES, FRAMES):
            failures.append(f"{recording}: {report['pairs']} pairs of {report['left_frames']} + {report['right_frames']} frames, "
                            f"expected {FRAMES} of {FRAMES} + {FRAMES}")
        if not (1_900_000 <= report["skew_ns_p50"] <= 2_100_000):
            failures.append(f"{recording}: skew p50 {report['skew_ns_p50']} ns, the bag's is {SKEW} ns")
        if report["format"].split("@")[0] != f"{W}x{H}":
            failures.append(f"{recording}: format {report['format']}")
    # Frame for frame: converted into an EuRoC folder (`capture --recording`), each raw bag's
    # k-th image a side is the picture written as frame k (every frame differs, so any other
    # frame, or the same one each time, fails).
    for recording in (plain_path, zstd_path):
        folder = recording + "-euroc"
        run = subprocess.run([parallax, "capture", "--recording", recording, "--left-topic", "/cam_left/image_raw", "--right-topic", "/cam_right/image_raw",
                              "--frames", str(FRAMES), "--output", folder], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{recording}: parallax capture --recording exited {run.returncode}: {run.stderr.strip()[-400:]}")
            continue
        for side, camera in (("left", "cam0"), ("right", "cam1")):
            data = os.path.join(folder, camera, "data")
            names = sorted(os.listdir(data))
            played = [cv2.imread(os.path.join(data, name), cv2.IMREAD_UNCHANGED) for name in names]
            wrong = [k for k, image in enumerate(played) if image is None or not np.array_equal(image, picture(k, side))]
            if len(played) != FRAMES or wrong:
                failures.append(f"{recording}: {side}: {len(played)} frames played, frames {wrong[:10]} not the pictures written")
    # lz4 chunks are refused by name, never misread.
    lz4_path = os.path.join(work, "python-writer-lz4.mcap")
    write_mcap(lz4_path, CompressionType.LZ4)
    run = stream(parallax, lz4_path, "/cam_left/image_raw", "/cam_right/image_raw")
    if run.returncode == 0 or '"lz4"' not in run.stderr:
        failures.append(f"{lz4_path}: an lz4 bag was not refused by name (exit {run.returncode}): {run.stderr.strip()[-300:]}")
    if failures:
        for failure in failures:
            print("FAIL", failure)
        sys.exit(1)
    print(f"parallax stream --recording paired every frame of MCAPs from mcap-ros2-support (uncompressed and zstd) and a rosbag2 "
          f"folder from rosbags ({FRAMES} pairs each, skew 2 ms), played the MCAPs' frames back frame for frame, "
          f"and refused an lz4 bag by name")


if __name__ == "__main__":
    main()
