#!/usr/bin/env python3
"""Rectification speed, Parallax vs OpenCV, on identical maps and images.

For each size, format and thread count, `parallax bench rectify --export DIR`
times Parallax and writes the benchmark rig, its float maps and the source
images; this script then gives OpenCV exactly those maps (converted with
cv2.convertMaps to CV_16SC2, OpenCV's fast path) and images, and times
cv2.remap (INTER_LINEAR, BORDER_CONSTANT) on both images of the pair with
cv2.setNumThreads(threads). Times are per pair (left + right), median of
--iterations runs after warm-up. The table's ratio is Parallax / OpenCV:
below 1 means Parallax is faster. The minimum times are printed too: on a
busy machine they are the steadier figure.

Building maps takes milliseconds, so a stretch of a few seconds in which the
machine runs slower (common on virtual machines) can fall on one side only.
The maps rows therefore alternate: --rounds rounds, each timing Parallax
(21 builds in one process) and then OpenCV (21 builds of each kind), and the ratio is the
median of the rounds' ratios (each round's medians, Parallax / OpenCV, taken
seconds apart); the times are the medians of the rounds' medians, and the
rounds' ratios are printed beneath.

Formats: gray8, rgb8 (OpenCV CV_8UC3), bgra8 (CV_8UC4); yuyv and nv12 are
compared with what an OpenCV user must do for camera frames (cvtColor to
BGR, then remap).

MJPEG rows time the job of a webcam rig's consumer: two JPEGs of a real textured scene
(the Middlebury "aloe" stereo pair that Debian's opencv-doc ships, cropped to the size's
aspect ratio, resized, and encoded by OpenCV at quality 90, 4:2:0) decoded and the pair
rectified. OpenCV does cv2.imdecode of both (IMREAD_GRAYSCALE or IMREAD_COLOR) and
cv2.remap of both; Parallax (`bench rectify --format mjpeg --jpeg L,R --output KIND`)
decodes with libjpeg-turbo into gray8, its I420 planes (colour without colour
conversion) or BGR, and rectifies. The gray rows compare gray with gray; the i420 and
bgr8 rows both compare with OpenCV's colour job. Beneath each row: Parallax's decoding
alone, its rectifying alone, and the overhead of the whole above their sum.

Usage: compare_rectify.py --parallax PATH [--sizes 1920x1080,...]
       [--formats gray8,bgra8] [--threads 1,2] [--iterations 40] [--json FILE]
       [--no-maps]             (skip comparing the building of both maps, per thread count: Parallax's
                                rectifier from a calibration to its fixed-point maps, against
                                OpenCV's stereoRectify + initUndistortRectifyMap with float maps
                                + convertMaps ("maps") and with CV_16SC2 maps directly ("maps16"))
       [--simd baseline|avx2|avx512]  (Parallax's kernels at a lower level than the CPU's widest)
       [--avx2-only]           (both sides at most AVX2, as on a CPU without AVX-512 (AMD Zen 1-3,
                                Intel client cores): Parallax --simd avx2, OpenCV's dispatch with
                                OPENCV_CPU_DISABLE=AVX512F,AVX512-SKX,AVX512-COMMON)
       [--calibration FILE]    (time this calibration at its image size instead of the rig)
       [--rounds 5]            (alternating rounds of the maps comparison; see above)
       [--mjpeg gray8,i420,bgr8] (MJPEG rows to time, by Parallax's output; --mjpeg none skips them)
       [--jpeg-scene DIR]      (where aloeL.jpg and aloeR.jpg are; default Debian's opencv-doc data)
"""
import argparse, json, os, platform, subprocess, sys, tempfile, time
from statistics import median

# OpenCV reads OPENCV_CPU_DISABLE once, when it loads: --avx2-only must set it before the import
# (and main() accepts no abbreviation of it, which this test would miss).
AVX2_ONLY = "--avx2-only" in sys.argv
if AVX2_ONLY:
    os.environ["OPENCV_CPU_DISABLE"] = "AVX512F,AVX512-SKX,AVX512-COMMON"
import cv2
import numpy as np


def workload(size, calibration):
    """The bench options naming what to time: a calibration file, or the rig at a size."""
    return ["--calibration", calibration] if calibration else ["--size", size]


def parallax_bench(binary, size, fmt, threads, iterations, export, simd=None, calibration=None):
    args = [binary, "bench", "rectify", *workload(size, calibration), "--format", fmt, "--threads", str(threads),
            "--iterations", str(iterations), "--json"]
    if export:
        args += ["--export", export]
    if simd:
        args += ["--simd", simd]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def load(export):
    meta = json.load(open(os.path.join(export, "meta.json")))
    w, h = meta["width"], meta["height"]
    maps = load_maps(export)
    images = {}
    fmt = meta["format"]
    for side in ("left", "right"):
        raw = np.fromfile(os.path.join(export, f"{side}.raw"), dtype=np.uint8)
        if fmt == "gray8":
            images[side] = raw.reshape(h, w)
        elif fmt in ("rgb8", "bgr8"):
            images[side] = raw.reshape(h, w, 3)
        elif fmt in ("rgba8", "bgra8"):
            images[side] = raw.reshape(h, w, 4)
        elif fmt in ("yuyv", "uyvy"):
            images[side] = raw.reshape(h, w, 2)
        elif fmt == "nv12":
            images[side] = raw.reshape(h * 3 // 2, w)
    return fmt, maps, images


def opencv_pair(fmt, maps, images):
    def one(side):
        img = images[side]
        if fmt == "yuyv":
            img = cv2.cvtColor(img, cv2.COLOR_YUV2BGR_YUYV)
        elif fmt == "uyvy":
            img = cv2.cvtColor(img, cv2.COLOR_YUV2BGR_UYVY)
        elif fmt == "nv12":
            img = cv2.cvtColor(img, cv2.COLOR_YUV2BGR_NV12)
        m1, m2 = maps[side]
        return cv2.remap(img, m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return lambda: (one("left"), one("right"))


def time_opencv(run, threads, iterations):
    cv2.setNumThreads(threads)
    for _ in range(3):
        run()
    samples = []
    for _ in range(iterations):
        t = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return 1000 * samples[len(samples) // 2], 1000 * samples[0]


def opencv_maps(export, threads, iterations, direct=False):
    """cv2.stereoRectify + initUndistortRectifyMap (both sides) + convertMaps, on the same rig;
    with `direct`, initUndistortRectifyMap writes CV_16SC2 maps itself (no float maps), which
    is what Parallax's rectifier does too."""
    cal = json.load(open(os.path.join(export, "calibration.json")))
    def camera(c):
        i = c["intrinsics"]
        K = np.array([[i["fx"], i["skew"], i["cx"]], [0, i["fy"], i["cy"]], [0, 0, 1]], float)
        return K, np.array(c["distortion"]["coefficients"], float)
    K1, D1 = camera(cal["left"]); K2, D2 = camera(cal["right"])
    R = np.array(cal["extrinsics"]["rotation"], float).reshape(3, 3)
    T = np.array(cal["extrinsics"]["translation"], float).reshape(3, 1)
    size = (cal["left"]["width"], cal["left"]["height"])
    def build():
        R1, R2, P1, P2, Q, _, _ = cv2.stereoRectify(K1, D1, K2, D2, size, R, T, flags=cv2.CALIB_ZERO_DISPARITY, alpha=-1)
        for K, D, Rr, P in ((K1, D1, R1, P1), (K2, D2, R2, P2)):
            if direct:
                cv2.initUndistortRectifyMap(K, D, Rr, P, size, cv2.CV_16SC2)
            else:
                mx, my = cv2.initUndistortRectifyMap(K, D, Rr, P, size, cv2.CV_32FC1)
                cv2.convertMaps(mx, my, cv2.CV_16SC2)
    return time_opencv(build, threads, iterations)


OPENCV_DATA = "/usr/share/doc/opencv-doc/examples/data"


def scene_jpegs(folder, size, scene_dir):
    """The aloe pair cropped to the aspect ratio of `size` (centre), resized to it, encoded by
    OpenCV at quality 90 (4:2:0); returns the two file paths and their bytes."""
    w, h = (int(v) for v in size.split("x"))
    paths, blobs = [], []
    for name in ("aloeL.jpg", "aloeR.jpg"):
        image = cv2.imread(os.path.join(scene_dir, name), cv2.IMREAD_COLOR)
        if image is None:
            sys.exit(f"{os.path.join(scene_dir, name)}: cannot read it (install opencv-doc, or pass --jpeg-scene)")
        ih, iw = image.shape[:2]
        if iw * h > ih * w:  # wider than the target: crop the sides
            cw = ih * w // h
            image = image[:, (iw - cw) // 2:(iw - cw) // 2 + cw]
        else:
            ch = iw * h // w
            image = image[(ih - ch) // 2:(ih - ch) // 2 + ch, :]
        shrink = image.shape[1] > w
        image = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC)
        ok, blob = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90,
                                                cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420])
        assert ok
        path = os.path.join(folder, name)
        blob.tofile(path)
        paths.append(path)
        blobs.append(blob)
    return paths, blobs


def load_maps(export):
    meta = json.load(open(os.path.join(export, "meta.json")))
    ow, oh = meta["output_width"], meta["output_height"]
    maps = {}
    for side in ("left", "right"):
        x = np.fromfile(os.path.join(export, f"{side}-x.f32"), dtype="<f4").reshape(oh, ow)
        y = np.fromfile(os.path.join(export, f"{side}-y.f32"), dtype="<f4").reshape(oh, ow)
        maps[side] = cv2.convertMaps(x, y, cv2.CV_16SC2)
    return maps


def opencv_mjpeg_pair(blobs, maps, gray):
    """cv2.imdecode of both JPEGs, then cv2.remap of both: what an OpenCV user does per pair."""
    mode = cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR
    def one(blob, side):
        m1, m2 = maps[side]
        return cv2.remap(cv2.imdecode(blob, mode), m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return lambda: (one(blobs[0], "left"), one(blobs[1], "right"))


def cpu_model():
    """The CPU's model name as the kernel reports it (x86 `model name`; arm `Model` or `Hardware`)."""
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def opencv_simd():
    """The widest instruction set OpenCV's run-time dispatch picks on this CPU: the last of
    its build's dispatched levels whose features this CPU has, else its baseline."""
    info = cv2.getBuildInformation()
    supported = {cv2.getHardwareFeatureName(i) for i in range(1, 512)
                 if cv2.getHardwareFeatureName(i) and cv2.checkHardwareSupport(i)}
    def has(level):
        # Build information says AVX512_SKX and SSE4_1; the feature names are AVX512-SKX and SSE4.1.
        return level in supported or level.replace("_", ".") in supported or level.replace("_", "-") in supported
    baseline, dispatched = "", []
    for line in info.splitlines():
        line = line.strip()
        if line.startswith("Baseline:"):
            baseline = line.split(":", 1)[1].split()[-1] if line.split(":", 1)[1].split() else ""
        elif line.startswith("Dispatched code generation:"):
            dispatched = line.split(":", 1)[1].split()
    usable = [level for level in dispatched if has(level)]
    return usable[-1] if usable else (baseline or "baseline")


def parallax_simd(binary, simd):
    """The level Parallax's kernels run at and its name for people (which also says how the
    AVX2 kernels fetch taps), as `parallax bench` reports them: its run-time dispatch picks
    the widest level the CPU has unless --simd lowers it."""
    result = parallax_bench(binary, "64x48", "gray8", 1, 1, None, simd)
    return result["simd"], result["simd_description"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--parallax", required=True)
    p.add_argument("--sizes", default="640x480,1280x720,1920x1080")
    p.add_argument("--formats", default="gray8,rgb8,bgra8,yuyv,nv12")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--json", help="also write the rows to this file")
    p.add_argument("--no-maps", action="store_true", help="skip comparing the building of both maps")
    p.add_argument("--maps", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old scripts
    p.add_argument("--simd", help="Parallax's kernel level (default: the widest this CPU has)")
    p.add_argument("--avx2-only", action="store_true",
                   help="both sides at most AVX2 (Parallax --simd avx2; OpenCV's AVX-512 dispatch disabled)")
    p.add_argument("--calibration", help="time this calibration (at its image size) instead of the benchmark rig")
    p.add_argument("--rounds", type=int, default=5,
                   help="alternating rounds of Parallax and OpenCV building maps (the ratio is their median)")
    p.add_argument("--mjpeg", default="gray8,i420,bgr8",
                   help="MJPEG rows by Parallax's output (gray8, i420, bgr8, rgb8), or none")
    p.add_argument("--jpeg-scene", default=OPENCV_DATA, help="folder holding aloeL.jpg and aloeR.jpg")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    if a.avx2_only:
        if a.simd not in (None, "avx2"):
            p.error("--avx2-only runs Parallax at --simd avx2")
        if parallax_simd(a.parallax, None)[0] == "baseline":
            p.error("--avx2-only: this CPU has no AVX2 (Parallax runs its baseline kernels)")
        a.simd = "avx2"
        if opencv_simd().startswith("AVX512"):
            p.error("OPENCV_CPU_DISABLE did not lower OpenCV's dispatch below AVX-512")
    sizes = ["calibration"] if a.calibration else a.sizes.split(",")

    print(f"CPU: {cpu_model()}, {os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.2f}")
    print(f"SIMD: Parallax {parallax_simd(a.parallax, a.simd)[1]} (run-time dispatch); "
          f"OpenCV {cv2.__version__} {opencv_simd()} (run-time dispatch)")
    rows = []
    header = (f"{'size':>10} {'format':>6} {'threads':>7} {'Parallax ms':>12} {'OpenCV ms':>10} {'ratio':>6}"
              f" {'(min: Parallax':>15} {'OpenCV':>7} {'ratio)':>7}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="parallax-compare-") as tmp:
        for size in sizes:
            for fmt in a.formats.split(","):
                for threads in [int(t) for t in a.threads.split(",")]:
                    export = os.path.join(tmp, f"{size}-{fmt}")
                    ours = parallax_bench(a.parallax, size, fmt, threads, a.iterations, export, a.simd, a.calibration)
                    label = ours["size"]
                    kind, maps, images = load(export)
                    theirs, theirs_min = time_opencv(opencv_pair(kind, maps, images), threads, a.iterations)
                    ratio = ours["ms_per_pair_median"] / theirs
                    rows.append({"size": label, "format": fmt, "threads": threads,
                                 "parallax_ms_median": ours["ms_per_pair_median"], "parallax_ms_min": ours["ms_per_pair_min"],
                                 "opencv_ms_median": theirs, "opencv_ms_min": theirs_min, "ratio": ratio})
                    print(f"{label:>10} {fmt:>6} {threads:>7} {ours['ms_per_pair_median']:>12.2f} {theirs:>10.2f} {ratio:>6.2f}"
                          f" {ours['ms_per_pair_min']:>15.2f} {theirs_min:>7.2f} {ours['ms_per_pair_min'] / theirs_min:>7.2f}",
                          flush=True)
            mjpeg_outputs = [] if a.mjpeg == "none" or a.calibration else a.mjpeg.split(",")
            for output in mjpeg_outputs:
                folder = os.path.join(tmp, f"{size}-mjpeg-{output}")
                os.makedirs(folder, exist_ok=True)
                paths, blobs = scene_jpegs(folder, size, a.jpeg_scene)
                for threads in [int(t) for t in a.threads.split(",")]:
                    export = os.path.join(folder, f"export-{threads}")
                    args = [a.parallax, "bench", "rectify", "--size", size, "--format", "mjpeg", "--jpeg", ",".join(paths),
                            "--output", output, "--threads", str(threads), "--iterations", str(a.iterations), "--json",
                            "--export", export, *(["--simd", a.simd] if a.simd else [])]
                    ours = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
                    label = ours["size"]
                    theirs, theirs_min = time_opencv(opencv_mjpeg_pair(blobs, load_maps(export), output == "gray8"),
                                                     threads, a.iterations)
                    ratio = ours["ms_per_pair_median"] / theirs
                    name = f"mjpeg>{output}"
                    rows.append({"size": label, "format": name, "threads": threads,
                                 "parallax_ms_median": ours["ms_per_pair_median"], "opencv_ms_median": theirs,
                                 "opencv_ms_min": theirs_min, "ratio": ratio, "jpeg_bytes": ours["jpeg_bytes"],
                                 "parallax_decode_ms": ours["decode_ms_median"],
                                 "parallax_rectify_ms": ours["rectify_ms_median"], "overhead": ours["overhead"]})
                    print(f"{label:>10} {name:>12} {threads:>3} {ours['ms_per_pair_median']:>10.2f} {theirs:>10.2f} {ratio:>6.2f}"
                          f"   (OpenCV min {theirs_min:.2f}; {'gray' if output == 'gray8' else 'BGR'} on OpenCV's side)",
                          flush=True)
                    print(f"{'':>10} {'':>12} {'':>3} Parallax: decoding {ours['decode_ms_median']:.2f} ms + rectifying "
                          f"{ours['rectify_ms_median']:.2f} ms; overhead above their sum {100 * ours['overhead']:.1f} % "
                          f"({ours['jpeg_bytes']} JPEG bytes)", flush=True)
            if not a.no_maps:
                fmt = a.formats.split(',')[0]
                export = os.path.join(tmp, f"{size}-{fmt}")
                for threads in [int(t) for t in a.threads.split(",")]:
                    # "maps": OpenCV's float maps, then convertMaps; "maps16": its CV_16SC2 maps
                    # written directly (Parallax compiles from the lens model, without float maps).
                    # Rounds alternate the two sides (see the module's doc).
                    rounds = {"maps": [], "maps16": []}
                    for _ in range(a.rounds):
                        out = subprocess.run([a.parallax, "bench", "maps", *workload(size, a.calibration), "--format", fmt,
                                              "--threads", str(threads), "--iterations", "21", "--json",
                                              *(["--simd", a.simd] if a.simd else [])],
                                             check=True, capture_output=True, text=True).stdout
                        ours = json.loads(out)
                        for name, direct in (("maps", False), ("maps16", True)):
                            theirs, theirs_min = opencv_maps(export, threads, 21, direct)
                            rounds[name].append((ours["ms_median"], ours["ms_min"], theirs, theirs_min))
                    for name, results in rounds.items():
                        ours_median = median([r[0] for r in results])
                        ours_min = min(r[1] for r in results)
                        theirs = median([r[2] for r in results])
                        theirs_min = min(r[3] for r in results)
                        ratios = [r[0] / r[2] for r in results]
                        ratio = median(ratios)
                        print(f"{label:>10} {name:>6} {threads:>7} {ours_median:>12.2f} {theirs:>10.2f} "
                              f"{ratio:>6.2f} {ours_min:>15.2f} {theirs_min:>7.2f} "
                              f"{ours_min / theirs_min:>7.2f}", flush=True)
                        print(f"{'':>10} {'':>6} {'':>7} rounds' ratios: {' '.join(f'{r:.2f}' for r in ratios)}",
                              flush=True)
                        rows.append({"size": label, "format": "build-" + name, "threads": threads,
                                     "parallax_ms_median": ours_median, "parallax_ms_min": ours_min,
                                     "opencv_ms_median": theirs, "opencv_ms_min": theirs_min,
                                     "ratio": ratio, "round_ratios": ratios})
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    # The slowest ratio of each kind, per size and thread count (the goal is 0.5 or less).
    print("summary (worst ratio; goal ≤ 0.5):")
    for label in dict.fromkeys(r["size"] for r in rows):
        for threads in dict.fromkeys(r["threads"] for r in rows):
            mine = [r for r in rows if r["size"] == label and r["threads"] == threads]
            formats = [r for r in mine if not r["format"].startswith("build-") and not r["format"].startswith("mjpeg")]
            for r in mine:
                if r["format"].startswith("mjpeg"):
                    print(f"  {label} {threads} thread(s): {r['format']} {r['ratio']:.2f} "
                          f"(overhead above decoding + rectifying {100 * r['overhead']:.1f} %)")
            maps = [r for r in mine if r["format"].startswith("build-")]
            parts = []
            if formats:
                worst = max(formats, key=lambda r: r["ratio"])
                parts.append(f"formats {worst['ratio']:.2f} ({worst['format']})")
            for r in maps:
                parts.append(f"{r['format'][6:]} {r['ratio']:.2f}")
            print(f"  {label} {threads} thread(s): " + ", ".join(parts))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
