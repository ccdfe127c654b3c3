#!/usr/bin/env python3
"""How far a compact map (source positions on a sparse grid, bilinear in between) lands from
the exact map: the design input for issue 13's compact map, which does not exist yet.

    parallax bench rectify --size 1920x1080 --format gray8 --iterations 1 --export DIR
    python3 Benchmarks/compact-map/grid_error.py DIR [--spacings 4,8,16,32]

Reads the float maps `parallax bench rectify --export` writes (left-x.f32 … right-y.f32 and
meta.json), keeps every s-th row and column (plus the last), interpolates them back
bilinearly, and prints per side the largest and the 99.9th-percentile distance from the
exact positions, over output pixels whose exact position lies inside the source, and the
table's size against the full map's 4 bytes per pixel. Needs numpy.
"""
import argparse, json, os
import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export")
    p.add_argument("--spacings", default="4,8,16,32")
    a = p.parse_args()
    meta = json.load(open(os.path.join(a.export, "meta.json")))
    w, h = meta["output_width"], meta["output_height"]
    sw, sh = meta["width"], meta["height"]
    for side in ("left", "right"):
        x = np.fromfile(os.path.join(a.export, f"{side}-x.f32"), np.float32).reshape(h, w).astype(np.float64)
        y = np.fromfile(os.path.join(a.export, f"{side}-y.f32"), np.float32).reshape(h, w).astype(np.float64)
        inside = np.isfinite(x) & np.isfinite(y) & (x >= 0) & (x <= sw - 1) & (y >= 0) & (y <= sh - 1)
        for s in (int(v) for v in a.spacings.split(",")):
            gx = np.unique(np.r_[np.arange(0, w, s), w - 1])
            gy = np.unique(np.r_[np.arange(0, h, s), h - 1])
            u, v = np.arange(w), np.arange(h)
            errors = []
            for m in (x, y):
                nodes = np.nan_to_num(m[np.ix_(gy, gx)])
                rows = np.stack([np.interp(u, gx, nodes[j]) for j in range(len(gy))])
                full = np.stack([np.interp(v, gy, rows[:, i]) for i in range(w)], axis=1)
                errors.append(np.abs(full - m))
            err = np.hypot(errors[0], errors[1])[inside]
            print(f"{side} grid {s:2d} px: largest {err.max():.5f} px, 99.9 % {np.quantile(err, 0.999):.5f} px; "
                  f"table {len(gx) * len(gy) * 8 / 1024:.0f} KiB (two floats per node) against "
                  f"{w * h * 4 / 2**20:.1f} MiB of entries")


if __name__ == "__main__":
    main()
