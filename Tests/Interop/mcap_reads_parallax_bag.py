"""PyPI's MCAP readers (mcap, mcap-ros2-support) read the ROS 2 bags `parallax capture
--output NAME.mcap` writes, independently of Parallax's own reader.

    mcap_reads_parallax_bag.py RAW.mcap EUROC_DIR RECT.mcap RIG.json MJPEG.mcap FRAMES ZSTD.mcap

RAW.mcap and EUROC_DIR are the simulated rig recorded twice, as a bag and as an EuRoC
folder (the rig renders the same views at every frame number, so each image in the bag is
one of the folder's PNGs); ZSTD.mcap the same pairs with zstd chunks; RECT.mcap is the rig rectified with RIG.json (a Parallax JSON
calibration, in millimetres); MJPEG.mcap the virtual webcams in MJPG. Each bag holds FRAMES
pairs. Checks: CRCs (chunks, data section, summary), the summary's topics, types, encodings
and counts; every message decodes; images equal the recorded frames; CameraInfo K and D
are the calibration's, R1/R2 OpenCV's stereoRectify's, P's baseline in metres; JPEG bytes
decode to the format asked for. Exits 1 with the reasons on any mismatch.
"""
import json
import os
import sys

import cv2
import numpy as np
from mcap.reader import make_reader
from mcap.stream_reader import StreamReader
from mcap_ros2.decoder import DecoderFactory

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def read_bag(path):
    """Validates every CRC on a full pass, then returns (summary, decoded messages)."""
    with open(path, "rb") as f:
        for _ in StreamReader(f, validate_crcs=True).records:
            pass
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
        summary = reader.get_summary()
        header = reader.get_header()
        check(header.profile == "ros2", f"{path}: profile {header.profile!r}, not 'ros2'")
        messages = [(channel.topic, schema.name, message, ros)
                    for schema, channel, message, ros in reader.iter_decoded_messages(log_time_order=False)]
    return summary, messages


def topics(summary):
    """topic -> (type, schema encoding, message encoding, message count)."""
    counts = summary.statistics.channel_message_counts
    return {c.topic: (summary.schemas[c.schema_id].name, summary.schemas[c.schema_id].encoding, c.message_encoding,
                      counts.get(c.id, 0)) for c in summary.channels.values()}


def stamp_ns(header):
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def main():
    raw_path, euroc, rect_path, rig_path, mjpeg_path, frames = sys.argv[1:7]
    zstd_path = sys.argv[7]
    n = int(frames)

    # The raw bag: two Image topics, n each, the EuRoC recording's pixels, each with the
    # simulated rig's camera info (its calibration is known).
    summary, messages = read_bag(raw_path)
    expected = {f"/stereo/{side}/image_raw": ("sensor_msgs/msg/Image", "ros2msg", "cdr", n) for side in ("left", "right")}
    expected.update({f"/stereo/{side}/camera_info": ("sensor_msgs/msg/CameraInfo", "ros2msg", "cdr", n) for side in ("left", "right")})
    check(topics(summary) == expected, f"{raw_path}: topics {topics(summary)}, expected {expected}")
    check(summary.statistics.message_count == 4 * n, f"{raw_path}: {summary.statistics.message_count} messages")
    for side, camera in (("left", "cam0"), ("right", "cam1")):
        folder = os.path.join(euroc, camera, "data")
        pngs = [cv2.imread(os.path.join(folder, name), cv2.IMREAD_UNCHANGED) for name in sorted(os.listdir(folder))]
        images = [(m, ros) for topic, _, m, ros in messages if topic == f"/stereo/{side}/image_raw"]
        # Frame for frame: the bag's k-th image is the folder's k-th. The simulated views are
        # alike from frame to frame, so the order is proven by the stamps below (rising, all
        # different: the same message twice, or the first each time, fails).
        check(len(images) == len(pngs) == n, f"{raw_path}: {len(images)} {side} images, {len(pngs)} in {folder}")
        for k, ((m, ros), png) in enumerate(zip(images, pngs)):
            check(ros.encoding == "mono8" and ros.step == ros.width and len(ros.data) == ros.height * ros.step,
                  f"{raw_path}: {side} image {ros.encoding} {ros.width}x{ros.height} step {ros.step}, {len(ros.data)} bytes")
            pixels = np.frombuffer(bytes(ros.data), dtype=np.uint8).reshape(ros.height, ros.width)
            check(png.shape == pixels.shape and np.array_equal(png, pixels),
                  f"{raw_path}: {side} image {k} is not {folder}'s frame {k}")
            check(stamp_ns(ros.header) == m.log_time == m.publish_time, f"{raw_path}: stamp {stamp_ns(ros.header)}, log time {m.log_time}")
        stamps = [m.log_time for m, _ in images]
        check(stamps == sorted(stamps) and len(set(stamps)) == len(stamps), f"{raw_path}: {side} stamps not rising")

    # The raw bag again with zstd chunks (--bag-compression zstd): the same messages.
    summary, zstd_messages = read_bag(zstd_path)
    check(topics(summary) == expected, f"{zstd_path}: topics {topics(summary)}")
    check({c.compression for c in summary.chunk_indexes} == {"zstd"}, f"{zstd_path}: chunks {[c.compression for c in summary.chunk_indexes]}")
    plain = [(t, m.log_time, bytes(r.data)) for t, _, m, r in messages if t.endswith("image_raw")]
    packed = [(t, m.log_time, bytes(r.data)) for t, _, m, r in zstd_messages if t.endswith("image_raw")]
    check(len(plain) == len(packed) and [p[2] for p in plain if p[0].endswith("left/image_raw")]
          == [p[2] for p in packed if p[0].endswith("left/image_raw")]
          and [p[2] for p in plain if p[0].endswith("right/image_raw")] == [p[2] for p in packed if p[0].endswith("right/image_raw")],
          f"{zstd_path}: its images, topic by topic in order, differ from {raw_path}'s")

    # The rectified bag: image_rect and camera_info, K and D the calibration's.
    rig = json.load(open(rig_path))
    summary, messages = read_bag(rect_path)
    got = topics(summary)
    for side in ("left", "right"):
        check(got.get(f"/stereo/{side}/image_rect") == ("sensor_msgs/msg/Image", "ros2msg", "cdr", n), f"{rect_path}: {got}")
        check(got.get(f"/stereo/{side}/camera_info") == ("sensor_msgs/msg/CameraInfo", "ros2msg", "cdr", n), f"{rect_path}: {got}")
    infos = {side: [ros for topic, _, _, ros in messages if topic == f"/stereo/{side}/camera_info"] for side in ("left", "right")}
    rects = {side: [ros for topic, _, _, ros in messages if topic == f"/stereo/{side}/image_rect"] for side in ("left", "right")}
    cameras = {}
    for side in ("left", "right"):
        camera = rig[side]
        k = camera["intrinsics"]
        K = [k["fx"], k.get("skew", 0), k["cx"], 0, k["fy"], k["cy"], 0, 0, 1]
        D = camera["distortion"]["coefficients"]
        cameras[side] = (np.array(K, dtype=np.float64).reshape(3, 3), np.array(D, dtype=np.float64).reshape(1, -1))
        for info, image in zip(infos[side], rects[side]):
            check(list(info.k) == K, f"{rect_path}: {side} K {list(info.k)}, the calibration's {K}")
            check(list(info.d)[:len(D)] == D and info.distortion_model == "plumb_bob", f"{rect_path}: {side} D {list(info.d)}")
            check((info.width, info.height) == (camera["width"], camera["height"]), f"{rect_path}: {side} size")
            check(stamp_ns(info.header) == stamp_ns(image.header), f"{rect_path}: {side} camera_info stamped unlike its image")
    # R1 and R2 depend only on the extrinsics: OpenCV's stereoRectify gives them too.
    R = np.array(rig["extrinsics"]["rotation"], dtype=np.float64).reshape(3, 3)
    T = np.array(rig["extrinsics"]["translation"], dtype=np.float64).reshape(3, 1)
    R1, R2, P1, P2, _, _, _ = cv2.stereoRectify(cameras["left"][0], cameras["left"][1], cameras["right"][0], cameras["right"][1],
                                                (rig["left"]["width"], rig["left"]["height"]), R, T, flags=cv2.CALIB_ZERO_DISPARITY)
    left, right = infos["left"][0], infos["right"][0]
    # Rotations agree to rounding: each entry is a few products of unit-norm quantities, so
    # 1e-9 leaves six orders of magnitude above double rounding (1e-15) for the solver paths.
    check(np.abs(np.array(left.r).reshape(3, 3) - R1).max() < 1e-9, f"{rect_path}: left R {list(left.r)}, OpenCV's R1 {R1.ravel()}")
    check(np.abs(np.array(right.r).reshape(3, 3) - R2).max() < 1e-9, f"{rect_path}: right R {list(right.r)}, OpenCV's R2 {R2.ravel()}")
    # P2[0][3] = -f'·baseline, ROS's unit (metres); the calibration's is millimetres.
    p2 = np.array(right.p).reshape(3, 4)
    baseline_m = np.linalg.norm(T) / 1000
    check(abs(-p2[0, 3] / p2[0, 0] - baseline_m) < 1e-9 * baseline_m, f"{rect_path}: P2 baseline {-p2[0, 3] / p2[0, 0]} m, {baseline_m} m")
    check(np.array(left.p).reshape(3, 4)[0, 3] == 0, f"{rect_path}: P1's last column is not zero")

    # The MJPEG bag: CompressedImage, the JPEG bytes decode at the format's size.
    summary, messages = read_bag(mjpeg_path)
    expected = {f"/stereo/{side}/image_raw/compressed": ("sensor_msgs/msg/CompressedImage", "ros2msg", "cdr", n)
                for side in ("left", "right")}
    # The virtual webcams show the simulated rig's views: its calibration is known.
    expected.update({f"/stereo/{side}/camera_info": ("sensor_msgs/msg/CameraInfo", "ros2msg", "cdr", n) for side in ("left", "right")})
    check(topics(summary) == expected, f"{mjpeg_path}: topics {topics(summary)}")
    for topic, _, _, ros in messages:
        if topic.endswith("camera_info"):
            continue
        image = cv2.imdecode(np.frombuffer(bytes(ros.data), dtype=np.uint8), cv2.IMREAD_UNCHANGED)
        check(ros.format == "jpeg" and image is not None and image.shape[:2] == (480, 640), f"{mjpeg_path}: {topic} does not decode")

    if failures:
        for failure in failures[:20]:
            print("FAIL", failure)
        sys.exit(1)
    print(f"mcap {__import__('mcap').__version__} and mcap-ros2-support read Parallax's bags: 4 bags (one zstd), CRCs valid, "
          f"{n} pairs each, images equal the recorded frames, CameraInfo K/D the calibration's, R1/R2 OpenCV's")


if __name__ == "__main__":
    main()
