"""PyPI's MCAP reader reads a bag Parallax recovered from a recording killed with SIGKILL
(the next `capture` at that path finishes it as NAME.recovered-PID.mcap).

    mcap_reads_recovered_bag.py BAG PAIRS

PAIRS is the count the recovering run printed. Checks, with Parallax's reader out of the
way: every CRC (chunks, data section, summary) on a full pass; the summary's statistics
and chunk indexes; the messages read through the indexes (the seeking reader follows the
chunk indexes and message indexes recovery wrote) decode, each side's images number PAIRS
(or one more: a chunk can end between the two sides of a pair) with rising stamps, and each
camera info is stamped like its image (the last one can be cut off with its chunk). Exits 1 with the reasons on any mismatch.
"""
import sys

from mcap.reader import make_reader
from mcap.stream_reader import StreamReader
from mcap_ros2.decoder import DecoderFactory


def main():
    path, pairs = sys.argv[1], int(sys.argv[2])
    failures = []
    with open(path, "rb") as f:
        records = sum(1 for _ in StreamReader(f, validate_crcs=True).records)
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
        summary = reader.get_summary()
        if summary is None or summary.statistics is None or not summary.chunk_indexes:
            print(f"{path}: no summary, statistics or chunk indexes", file=sys.stderr)
            return 1
        images, infos = {}, {}
        for _, channel, message, ros in reader.iter_decoded_messages(log_time_order=True):
            side = "left" if channel.topic.startswith("/stereo/left/") else "right"
            stamp = ros.header.stamp.sec * 1_000_000_000 + ros.header.stamp.nanosec
            (infos if channel.topic.endswith("camera_info") else images).setdefault(side, []).append(stamp)
            if stamp != message.log_time:
                failures.append(f"{channel.topic}: stamp {stamp}, log time {message.log_time}")
    counted = sum(summary.statistics.channel_message_counts.values())
    read = sum(len(v) for v in images.values()) + sum(len(v) for v in infos.values())
    if counted != read or summary.statistics.message_count != read:
        failures.append(f"the statistics count {summary.statistics.message_count} ({counted} by channel), {read} read")
    for side in ("left", "right"):
        stamps = images.get(side, [])
        if not pairs <= len(stamps) <= pairs + 1:
            failures.append(f"{len(stamps)} {side} images, {pairs} pairs said")
        if stamps != sorted(set(stamps)):
            failures.append(f"{side} image stamps not rising")
        # A chunk can also end between an image and its camera info.
        if infos.get(side, []) != stamps[:len(infos.get(side, []))] or len(infos.get(side, [])) < pairs - 1:
            failures.append(f"{side} camera info not stamped like its images ({len(infos.get(side, []))} of them)")
    if failures:
        print(f"{path}:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print(f"{path}: {records} records, {len(summary.chunk_indexes)} chunks, {pairs} pairs read through the indexes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
