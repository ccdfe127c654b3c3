"""PyPI's rosbags reads the rosbag2 folder `parallax capture --bag` writes, independently of
Parallax's own reader and of the mcap packages.

    rosbags_reads_parallax_bag.py BAG_DIR RECT.mcap RIG.json FRAMES

BAG_DIR is the simulated rig rectified with RIG.json and recorded with --bag; RECT.mcap the
same capture as one MCAP file (its images and CameraInfo are checked against the recorded
frames, the calibration and OpenCV by mcap_reads_parallax_bag.py). Checks: rosbags accepts
metadata.yaml (version, MCAP storage, CDR) and its topics, types and counts agree with the
MCAP file's messages; every message deserializes with rosbags' own ROS 2 Humble types; each
image is one of RECT.mcap's (the rig renders the same views at every frame number) and each
CameraInfo's K, D, R and P equal RECT.mcap's and the calibration's K and D. Exits 1 with the
reasons on any mismatch.
"""
import json
import sys
from importlib.metadata import version

import numpy as np
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def main():
    bag_dir, rect_path, rig_path, frames = sys.argv[1:5]
    n = int(frames)
    store = get_typestore(Stores.ROS2_HUMBLE)
    rig = json.load(open(rig_path))

    # What mcap-ros2-support decodes from the single-file capture of the same frames.
    reference = {}
    with open(rect_path, "rb") as f:
        for _, channel, _, ros in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            reference.setdefault(channel.topic, []).append(ros)

    with Reader(bag_dir) as reader:
        topics = {c.topic: (c.msgtype, c.msgcount, c.ext.serialization_format) for c in reader.connections}
        expected = {}
        for side in ("left", "right"):
            expected[f"/stereo/{side}/image_rect"] = ("sensor_msgs/msg/Image", n, "cdr")
            expected[f"/stereo/{side}/camera_info"] = ("sensor_msgs/msg/CameraInfo", n, "cdr")
        check(topics == expected, f"{bag_dir}: rosbags lists {topics}, expected {expected}")
        check(reader.message_count == 4 * n, f"{bag_dir}: metadata message_count {reader.message_count}, expected {4 * n}")
        qos = [c.ext.offered_qos_profiles for c in reader.connections]
        check(all(len(q) == 1 and q[0].depth == 10 for q in qos), f"{bag_dir}: offered QoS {qos}")
        decoded = {}
        for connection, timestamp, raw in reader.messages():
            message = store.deserialize_cdr(raw, connection.msgtype)
            stamp = message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec
            check(stamp == timestamp, f"{bag_dir}: {connection.topic} stamped {stamp}, logged at {timestamp}")
            decoded.setdefault(connection.topic, []).append(message)
        check(reader.start_time <= min(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for ms in decoded.values() for m in ms),
              f"{bag_dir}: metadata starting_time {reader.start_time} after the first message")

    for side in ("left", "right"):
        images = decoded.get(f"/stereo/{side}/image_rect", [])
        known = [bytes(r.data) for r in reference.get(f"/stereo/{side}/image_rect", [])]
        check(len(images) == n == len(known), f"{bag_dir}: {len(images)} {side} images, {len(known)} in {rect_path}")
        for k, (image, same) in enumerate(zip(images, known)):
            check(image.encoding in ("mono8", "rgb8") and len(image.data) == image.height * image.step,
                  f"{bag_dir}: {side} image {image.encoding} {image.width}x{image.height} step {image.step}")
            check(bytes(image.data) == same, f"{bag_dir}: {side} image {k} is not {rect_path}'s image {k}")
        infos = decoded.get(f"/stereo/{side}/camera_info", [])
        ref = reference.get(f"/stereo/{side}/camera_info", [None])[0]
        k = rig[side]["intrinsics"]
        K = [k["fx"], k.get("skew", 0), k["cx"], 0, k["fy"], k["cy"], 0, 0, 1]
        D = rig[side]["distortion"]["coefficients"]
        check(len(infos) == n and ref is not None, f"{bag_dir}: {len(infos)} {side} camera_info")
        for info in infos:
            check(list(info.k) == K and list(info.d)[:len(D)] == D, f"{bag_dir}: {side} K {list(info.k)} D {list(info.d)}")
            for field in ("k", "d", "r", "p"):
                check(np.array_equal(np.asarray(getattr(info, field)), np.asarray(getattr(ref, field))),
                      f"{bag_dir}: {side} {field.upper()} differs from {rect_path}'s")

    if failures:
        for failure in failures[:20]:
            print("FAIL", failure)
        sys.exit(1)
    print(f"rosbags {version('rosbags')} read Parallax's "
          f"rosbag2 folder: 4 topics, {n} messages each, every message deserialized, images and CameraInfo K/D/R/P "
          f"equal the single-file bag's and the calibration's")


if __name__ == "__main__":
    main()
