#!/usr/bin/env python3
"""Writes two EuRoC timestamp logs (`#timestamp [ns],filename`) of a simulated stereo rig,
for measuring `parallax pair` on big inputs.

    make_logs.py --frames 10000000 --output /tmp/pair-logs

The left camera runs at --fps with 0.2 ms of timestamp jitter and drops 0.1 % of its
frames; the right camera starts 3 ms later, runs 20 ppm fast, jitters and drops the same
way. Deterministic for a given --seed.
"""
import argparse
import os
import random


def write_log(path, frames, start_ns, interval_ns, drift_ppm, rng):
    scale = 1.0 + drift_ppm * 1e-6
    with open(path, "w", buffering=1 << 22) as f:
        f.write("#timestamp [ns],filename\n")
        lines = []
        for i in range(frames):
            if rng.random() < 0.001:
                continue
            t = start_ns + int(i * interval_ns * scale) + rng.randint(-200_000, 200_000)
            lines.append(f"{t},{t}.png\n")
            if len(lines) >= 100_000:
                f.write("".join(lines))
                lines.clear()
        f.write("".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=10_000_000, help="frames per camera before drops")
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--output", required=True, help="folder for cam0.csv and cam1.csv")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.output, exist_ok=True)
    interval = 1e9 / args.fps
    start = 1_403_636_579_763_555_584
    write_log(os.path.join(args.output, "cam0.csv"), args.frames, start, interval, 0.0, random.Random(args.seed))
    write_log(os.path.join(args.output, "cam1.csv"), args.frames, start + 3_000_000, interval, 20.0,
              random.Random(args.seed + 1))


if __name__ == "__main__":
    main()
