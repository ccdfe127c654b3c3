#!/usr/bin/env python3
"""Disparity, Parallax's semi-global matcher vs OpenCV's stereo matchers: speed and accuracy.

SPEED. For 640x480 with 64 and 128 disparities and 1280x720 with 128, each on 1 and 2
threads, `parallax bench disparity --export DIR --json` times Parallax (five paths by
default) and writes the pair it timed; OpenCV is then timed on exactly that pair with
cv2.setNumThreads(threads): StereoSGBM in MODE_SGBM_3WAY, MODE_SGBM, MODE_HH4 and MODE_HH,
and StereoBM with the block-matching defaults of ROS 2's stereo_image_proc. OpenCV's times
are medians of --iterations runs after warm-up (5 runs where one takes more than 0.25 s).
The ratio is Parallax / MODE_SGBM_3WAY, the goal at most 0.30; speed is reported only and
never changes the exit status.

ACCURACY. Middlebury-style figures on pixels of known truth: bad-1.0 and bad-2.0 (% of
known pixels whose estimate is missing or off by more than 1 or 2 px), avgerr (mean
absolute error of the estimates given) and density (% of known pixels given an estimate),
over all known pixels and, where the dataset marks occlusions, over the non-occluded ones.
Datasets: OpenCV's aloe pair (Debian's opencv-doc, Middlebury 2006) at half size;
Middlebury 2014's Motorcycle as scikit-image ships it (installed into this virtualenv with
pip when missing; its data comes inside the wheel); the three scenes `parallax bench
disparity-scenes` renders with exact truth and occlusion masks. Methods: Parallax with its
default paths and with eight, OpenCV MODE_SGBM_3WAY, MODE_HH4, MODE_HH and StereoBM, all on
the same disparity range. The check, per dataset: Parallax's default bad-2.0 (all known
pixels) at most MODE_HH's and its density at least MODE_HH's; and on the rendered wall the
median of Parallax's disparities within 0.1 px of the truth's median. Any failed check
makes the exit status 1 (2 for an error on the way).

Usage: compare_disparity.py --parallax PATH [--speed-only | --accuracy-only] [--paths five]
       [--iterations 11] [--threads 1,2] [--keep DIR] [--json FILE]
  e.g. Benchmarks/compare-opencv/.venv/bin/python Benchmarks/compare-opencv/compare_disparity.py \\
           --parallax .build/release/parallax
  --keep DIR keeps the exported pairs, the datasets' images and every disparity map (PFM) there.
"""
import argparse, importlib, json, os, shutil, subprocess, sys, tempfile, time
from statistics import median

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_rectify import cpu_model, opencv_simd  # noqa: E402  (the same header as the other comparisons)

OPENCV_DATA = "/usr/share/doc/opencv-doc/examples/data"
SKIMAGE = "scikit-image==0.26.0"  # its wheel holds Motorcycle's images and truth (no download at run time)
SPEED_ROWS = [("640x480", 64), ("640x480", 128), ("1280x720", 128)]
RATIO_GOAL = 0.30
SLOW_RUN_SECONDS = 0.25   # an OpenCV mode slower than this per pair is timed on 5 runs, not --iterations
SLOW_RUNS = 5

# StereoSGBM: the values OpenCV's documentation and samples give for gray images (P1 and P2
# with one channel: 8·blockSize² and 32·blockSize²; speckleRange 2 as the documentation's
# "1 or 2 is good enough" -- the C++ and Python samples pass 32, and the C++ sample also
# preFilterCap 63, which is left at OpenCV's default here (0, which OpenCV raises to 15)).
SGBM_BLOCK_SIZE = 5
SGBM_P1 = 8 * SGBM_BLOCK_SIZE ** 2
SGBM_P2 = 32 * SGBM_BLOCK_SIZE ** 2
SGBM_UNIQUENESS_RATIO = 10
SGBM_DISP12_MAX_DIFF = 1
SGBM_SPECKLE_WINDOW = 100
SGBM_SPECKLE_RANGE = 2
SGBM_MODES = {"SGBM_3WAY": cv2.STEREO_SGBM_MODE_SGBM_3WAY, "SGBM": cv2.STEREO_SGBM_MODE_SGBM,
              "HH4": cv2.STEREO_SGBM_MODE_HH4, "HH": cv2.STEREO_SGBM_MODE_HH}

# StereoBM: the defaults of ROS 2 stereo_image_proc's disparity_node (stereo_algorithm 0, block
# matching), as its parameter declarations give them: prefilter_size 9, prefilter_cap 31,
# correlation_window_size 15, min_disparity 0, disparity_range 64 (here: the row's or the
# dataset's range instead), texture_threshold 10, uniqueness_ratio 15, speckle_size 100,
# speckle_range 4. The node leaves the prefilter type and disp12MaxDiff at cv::StereoBM's
# defaults (PREFILTER_XSOBEL; -1, no left-right check), and so does this script.
BM_PREFILTER_SIZE = 9
BM_PREFILTER_CAP = 31
BM_WINDOW = 15
BM_TEXTURE_THRESHOLD = 10
BM_UNIQUENESS_RATIO = 15
BM_SPECKLE_WINDOW = 100
BM_SPECKLE_RANGE = 4

OPENCV_METHODS = ["SGBM_3WAY", "SGBM", "HH4", "HH", "BM"]        # timed
OPENCV_ACCURACY_METHODS = ["SGBM_3WAY", "HH4", "HH", "BM"]       # measured for accuracy


class Failure(Exception):
    """An error on the way (a command that failed, a file that is not what it should be)."""


# ---------------------------------------------------------------------------------------------
# Running Parallax


def run(cmd):
    """Runs a command and returns its stdout; a failure raises with the command and its stderr."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise Failure(f"cannot run {' '.join(cmd)}: {e}")
    if p.returncode != 0:
        raise Failure(f"command failed (exit status {p.returncode}):\n  {' '.join(cmd)}\n"
                      f"its stderr:\n{p.stderr.rstrip() or '(empty)'}")
    return p.stdout


def run_json(cmd, keys=()):
    """The one JSON object a command prints, which must hold `keys`."""
    out = run(cmd)
    try:
        result = json.loads(out)
    except json.JSONDecodeError as e:
        raise Failure(f"not one JSON object ({e}) from:\n  {' '.join(cmd)}\nits stdout:\n{out[:2000]}")
    missing = [k for k in keys if not isinstance(result, dict) or k not in result]
    if missing:
        raise Failure(f"no {', '.join(missing)} in the JSON of:\n  {' '.join(cmd)}\nits stdout:\n{out[:2000]}")
    return result


BENCH_KEYS = ("size", "disparities", "threads", "paths", "ms_per_pair_median", "ms_per_pair_min",
              "pairs_per_second", "working_memory_bytes", "simd_description")
DISPARITY_KEYS = ("size", "min_disparity", "disparities", "paths", "density", "valid", "invalid", "ms", "output")


def parallax_bench(binary, size, disparities, threads, iterations=None, paths=None, export=None):
    cmd = [binary, "bench", "disparity", "--size", size, "--disparities", str(disparities),
           "--threads", str(threads), "--json"]
    if paths:
        cmd += ["--paths", paths]
    if iterations:
        cmd += ["--iterations", str(iterations)]
    if export:
        cmd += ["--export", export]
    return run_json(cmd, BENCH_KEYS)


def parallax_disparity(binary, left, right, min_disparity, disparities, output, paths=None):
    """One `parallax disparity` run: its JSON and the map (float px, NaN where invalid)."""
    cmd = [binary, "disparity", "--left", left, "--right", right, "--min-disparity", str(min_disparity),
           "--disparities", str(disparities), "--output", output, "--json"]
    if paths:
        cmd += ["--paths", paths]
    info = run_json(cmd, DISPARITY_KEYS)
    disparity = read_pfm(output)
    disparity[~np.isfinite(disparity)] = np.nan
    valid = int(np.count_nonzero(np.isfinite(disparity)))
    if info["valid"] != valid:
        raise Failure(f"{output}: {valid} valid pixels in the PFM, the JSON says {info['valid']}\n  {' '.join(cmd)}")
    return info, disparity


# ---------------------------------------------------------------------------------------------
# Files


def read_pfm(path):
    """A one-channel PFM ("Pf") as float32 rows top first (the file stores them bottom first).
    A three-channel one ("PF") gives its first channel."""
    data = open(path, "rb").read()
    tokens, pos = [], 0
    while len(tokens) < 4:  # magic, width, height, scale; each ends at whitespace
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while end < len(data) and not data[end:end + 1].isspace():
            end += 1
        if end == pos:
            raise Failure(f"{path}: a PFM header cut short")
        tokens.append(data[pos:end].decode("ascii", "replace"))
        pos = end
    pos += 1  # the single whitespace byte after the scale
    magic, width, height, scale = tokens
    if magic not in ("Pf", "PF"):
        raise Failure(f"{path}: not a PFM (starts {magic!r})")
    channels = 1 if magic == "Pf" else 3
    try:
        width, height, scale = int(width), int(height), float(scale)
    except ValueError:
        raise Failure(f"{path}: a bad PFM header {tokens}")
    count = width * height * channels
    dtype = "<f4" if scale < 0 else ">f4"
    if len(data) - pos < 4 * count:
        raise Failure(f"{path}: {len(data) - pos} bytes of pixels, a {width}x{height} PFM needs {4 * count}")
    values = np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(height, width, channels)
    return np.ascontiguousarray(values[::-1, :, 0]).astype(np.float32)


def write_pfm(path, values):
    """float32 rows, bottom first, little-endian; NaN (no value) written as +inf."""
    values = np.where(np.isfinite(values), values, np.inf).astype("<f4")
    with open(path, "wb") as f:
        f.write(f"Pf\n{values.shape[1]} {values.shape[0]}\n-1.0\n".encode("ascii"))
        f.write(np.ascontiguousarray(values[::-1]).tobytes())


def read_gray(path):
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise Failure(f"{path}: cannot read it")
    if image.ndim != 2 or image.dtype != np.uint8:
        raise Failure(f"{path}: {image.dtype} with shape {image.shape}, expected 8-bit gray")
    return image


def write_png(path, image):
    if not cv2.imwrite(path, image):
        raise Failure(f"{path}: cannot write it")


# ---------------------------------------------------------------------------------------------
# OpenCV


def opencv_matcher(method, min_disparity, disparities):
    if method == "BM":
        m = cv2.StereoBM.create(disparities, BM_WINDOW)
        m.setMinDisparity(min_disparity)
        m.setPreFilterSize(BM_PREFILTER_SIZE)
        m.setPreFilterCap(BM_PREFILTER_CAP)
        m.setTextureThreshold(BM_TEXTURE_THRESHOLD)
        m.setUniquenessRatio(BM_UNIQUENESS_RATIO)
        m.setSpeckleWindowSize(BM_SPECKLE_WINDOW)
        m.setSpeckleRange(BM_SPECKLE_RANGE)
        return m
    return cv2.StereoSGBM.create(minDisparity=min_disparity, numDisparities=disparities, blockSize=SGBM_BLOCK_SIZE,
                                 P1=SGBM_P1, P2=SGBM_P2, disp12MaxDiff=SGBM_DISP12_MAX_DIFF,
                                 uniquenessRatio=SGBM_UNIQUENESS_RATIO, speckleWindowSize=SGBM_SPECKLE_WINDOW,
                                 speckleRange=SGBM_SPECKLE_RANGE, mode=SGBM_MODES[method])


def opencv_disparity(method, left, right, min_disparity, disparities):
    """OpenCV's map in px, NaN where invalid. OpenCV writes 16 x disparity in Int16 and marks
    invalid pixels (minDisparity - 1) x 16; anything below minDisparity x 16 counts as invalid."""
    raw = opencv_matcher(method, min_disparity, disparities).compute(left, right)
    disparity = raw.astype(np.float32) / 16
    disparity[raw < min_disparity * 16] = np.nan
    return disparity


def time_opencv(method, left, right, disparities, threads, iterations):
    """Median and minimum ms per pair, and the number of timed runs."""
    cv2.setNumThreads(threads)
    matcher = opencv_matcher(method, 0, disparities)
    t = time.perf_counter()
    matcher.compute(left, right)
    first = time.perf_counter() - t
    runs = iterations
    if first > SLOW_RUN_SECONDS:
        runs = min(iterations, SLOW_RUNS)
    else:
        matcher.compute(left, right)  # a second warm-up run
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        matcher.compute(left, right)
        samples.append(1000 * (time.perf_counter() - t))
    return median(samples), min(samples), runs


# ---------------------------------------------------------------------------------------------
# Speed


def speed(binary, iterations, threads_list, paths, work):
    rows = []
    print(f"\nSPEED: ms per pair, median (Parallax: `bench disparity --paths {paths}`; OpenCV: median of "
          f"{iterations} runs after warm-up, {SLOW_RUNS} for modes slower than {1000 * SLOW_RUN_SECONDS:.0f} ms);")
    print(f"the ratio is Parallax / MODE_SGBM_3WAY. ratio goal: at most {RATIO_GOAL:.2f} of MODE_SGBM_3WAY "
          f"(rows above it are marked *)")
    header = (f"{'size':>9} {'disp':>4} {'thr':>3} | {'Parallax':>8} {'pairs/s':>7} {'MiB':>6} | "
              + " ".join(f"{m:>9}" for m in OPENCV_METHODS) + f" | {'ratio':>5}")
    print(header)
    print("-" * len(header))
    for size, disparities in SPEED_ROWS:
        for threads in threads_list:
            export = os.path.join(work, "speed", f"{size}-{disparities}-t{threads}")
            os.makedirs(export, exist_ok=True)
            ours = parallax_bench(binary, size, disparities, threads, iterations, paths, export)
            left = read_gray(os.path.join(export, "left.png"))
            right = read_gray(os.path.join(export, "right.png"))
            w, h = (int(v) for v in size.split("x"))
            if left.shape != (h, w) or right.shape != (h, w):
                raise Failure(f"{export}: the exported pair is {left.shape[::-1]} and {right.shape[::-1]}, not {size}")
            theirs = {m: time_opencv(m, left, right, disparities, threads, iterations) for m in OPENCV_METHODS}
            ratio = ours["ms_per_pair_median"] / theirs["SGBM_3WAY"][0]
            mark = "*" if ratio > RATIO_GOAL else " "
            print(f"{size:>9} {disparities:>4} {threads:>3} | {ours['ms_per_pair_median']:>8.2f} "
                  f"{ours['pairs_per_second']:>7.1f} {ours['working_memory_bytes'] / 2 ** 20:>6.1f} | "
                  + " ".join(f"{theirs[m][0]:>9.2f}" for m in OPENCV_METHODS) + f" | {ratio:>5.2f}{mark}", flush=True)
            rows.append({"size": size, "disparities": disparities, "threads": threads, "parallax": ours,
                         "opencv_ms_median": {m: theirs[m][0] for m in OPENCV_METHODS},
                         "opencv_ms_min": {m: theirs[m][1] for m in OPENCV_METHODS},
                         "opencv_runs": {m: theirs[m][2] for m in OPENCV_METHODS}, "ratio": ratio})
    print("(Parallax pairs/s and MiB of working memory as `bench disparity` reports them; "
          "OpenCV's MODE_SGBM and MODE_HH run on one thread whatever cv2.setNumThreads says)")
    return rows


# ---------------------------------------------------------------------------------------------
# Datasets: left and right (uint8 gray), truth (float px, NaN unknown), nonoccluded (bool or None)


def range_covering(max_disparity):
    """The smallest count of disparities from 0, a multiple of 16, whose last (count - 1) is at
    least max_disparity."""
    return max(16, 16 * int(np.ceil((max_disparity + 1) / 16)))


def aloe_dataset(data_dir):
    paths = [os.path.join(data_dir, n) for n in ("aloeL.jpg", "aloeR.jpg", "aloeGT.png")]
    for path in paths:
        if not os.path.exists(path):
            raise Failure(f"{path}: missing (apt-get install opencv-doc)")
    full_left = cv2.imread(paths[0], cv2.IMREAD_GRAYSCALE)
    full_right = cv2.imread(paths[1], cv2.IMREAD_GRAYSCALE)
    gt = cv2.imread(paths[2], cv2.IMREAD_UNCHANGED)
    if full_left is None or full_right is None or gt is None or gt.ndim != 2:
        raise Failure(f"cannot read the aloe pair in {data_dir}")
    fh, fw = gt.shape
    w, h = fw // 2, fh // 2
    left = cv2.resize(full_left, (w, h), interpolation=cv2.INTER_AREA)
    right = cv2.resize(full_right, (w, h), interpolation=cv2.INTER_AREA)
    # The truth at half size, to match INTER_AREA's 2x2 averages of the images: a half-size
    # pixel's truth is the mean of its 2x2 block's full-size disparities, halved, when all four
    # are known (GT 0 = unknown) and lie within 2 full-size px (1 px at half size) of each
    # other; a block that straddles a depth edge or an unknown pixel mixes surfaces in the
    # averaged image too, and stays unknown.
    blocks = gt[:2 * h, :2 * w].astype(np.float32).reshape(h, 2, w, 2).transpose(0, 2, 1, 3).reshape(h, w, 4)
    known = (blocks > 0).all(axis=2) & (blocks.max(axis=2) - blocks.min(axis=2) <= 2)
    truth = np.where(known, blocks.mean(axis=2) / 2, np.nan).astype(np.float32)
    full_known = np.count_nonzero(gt > 0) / gt.size
    disparities = range_covering(np.nanmax(truth))
    if disparities < 128:  # the range asked for (0..127) when it covers the truth
        disparities = 128
    note = (f"Middlebury 2006 aloe from opencv-doc, {fw}x{fh} halved to {w}x{h} (INTER_AREA); GT {gt[gt > 0].min()}.."
            f"{gt.max()} px at full size, known {100 * full_known:.1f} %; at half size {np.nanmin(truth):.2f}.."
            f"{np.nanmax(truth):.2f} px, known {100 * np.mean(known):.1f} % (2x2 blocks within 1 px)")
    return {"name": "aloe", "left": left, "right": right, "truth": truth, "nonoccluded": None,
            "min_disparity": 0, "disparities": disparities, "note": note}


def ensure_skimage():
    try:
        import skimage.data  # noqa: F401
    except ImportError:
        print(f"== scikit-image is missing: pip install {SKIMAGE} into {sys.prefix}", flush=True)
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", SKIMAGE],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"pip install scikit-image failed:\n{p.stderr.rstrip()}")
        importlib.invalidate_caches()
    import skimage.data
    return skimage


def motorcycle_dataset():
    skimage = ensure_skimage()
    try:
        rgb_left, rgb_right, gt = skimage.data.stereo_motorcycle()
    except Exception as e:  # the data ships in scikit-image's wheel; a fetch from the network would fail here
        raise Failure(f"skimage.data.stereo_motorcycle() failed: {type(e).__name__}: {e}")
    left = cv2.cvtColor(rgb_left, cv2.COLOR_RGB2GRAY)
    right = cv2.cvtColor(rgb_right, cv2.COLOR_RGB2GRAY)
    # Unknown truth: inf in scikit-image 0.26 (its documentation says NaN); both count as unknown.
    truth = np.where(np.isfinite(gt), gt, np.nan).astype(np.float32)
    disparities = range_covering(np.nanmax(truth))
    note = (f"Middlebury 2014 Motorcycle from scikit-image {skimage.__version__}, {left.shape[1]}x{left.shape[0]}; "
            f"truth {np.nanmin(truth):.2f}..{np.nanmax(truth):.2f} px, known {100 * np.mean(np.isfinite(truth)):.1f} %; "
            f"no occlusion mask")
    return {"name": "motorcycle", "left": left, "right": right, "truth": truth, "nonoccluded": None,
            "min_disparity": 0, "disparities": disparities, "note": note}


def rendered_datasets(binary, folder):
    run([binary, "bench", "disparity-scenes", "--output", folder])
    datasets = []
    for name in ("wall", "tilted", "occlusion"):
        scene_dir = os.path.join(folder, name)
        try:
            scene = json.load(open(os.path.join(scene_dir, "scene.json")))
        except (OSError, json.JSONDecodeError) as e:
            raise Failure(f"{scene_dir}/scene.json: {e}")
        left = read_gray(os.path.join(scene_dir, "left.png"))
        right = read_gray(os.path.join(scene_dir, "right.png"))
        truth = read_pfm(os.path.join(scene_dir, "truth.pfm"))
        truth[~np.isfinite(truth)] = np.nan
        nonoccluded = read_gray(os.path.join(scene_dir, "nonoccluded.png")) > 127
        if not (left.shape == right.shape == truth.shape == nonoccluded.shape):
            raise Failure(f"{scene_dir}: left {left.shape}, right {right.shape}, truth {truth.shape} and "
                          f"nonoccluded {nonoccluded.shape} differ in size")
        lo, count = int(scene["min_disparity"]), int(scene["disparities"])
        known = np.isfinite(truth)
        note = (f"rendered by `parallax bench disparity-scenes`, {left.shape[1]}x{left.shape[0]}; truth "
                f"{np.nanmin(truth):.2f}..{np.nanmax(truth):.2f} px, known {100 * np.mean(known):.1f} %, "
                f"non-occluded {100 * np.mean(known & nonoccluded):.1f} %")
        datasets.append({"name": scene.get("name", name), "left": left, "right": right, "truth": truth,
                         "nonoccluded": nonoccluded, "min_disparity": lo, "disparities": count, "note": note,
                         "left_path": os.path.join(scene_dir, "left.png"),
                         "right_path": os.path.join(scene_dir, "right.png")})
    return datasets


# ---------------------------------------------------------------------------------------------
# Accuracy


def metrics(estimate, truth, region=None):
    """bad-1.0 and bad-2.0 (% of known pixels without an estimate or off by more than 1 or 2 px),
    avgerr (mean |error| over the estimates given, px) and density (% of known pixels estimated)."""
    known = np.isfinite(truth)
    if region is not None:
        known &= region
    n = np.count_nonzero(known)
    if n == 0:
        return None
    given = known & np.isfinite(estimate)
    error = np.abs(np.where(given, estimate, 0) - np.where(known, truth, 0))
    bad = lambda t: 100 * np.count_nonzero(known & (~given | (error > t))) / n
    return {"bad1": bad(1.0), "bad2": bad(2.0),
            "avgerr": float(error[given].mean()) if given.any() else float("nan"),
            "density": 100 * np.count_nonzero(given) / n, "pixels": n}


def accuracy(binary, work, keep):
    datasets = [aloe_dataset(OPENCV_DATA), motorcycle_dataset(),
                *rendered_datasets(binary, os.path.join(work, "scenes"))]
    cv2.setNumThreads(os.cpu_count() or 1)
    results = []
    print("\nACCURACY: % of known pixels (bad-1.0, bad-2.0: missing or off by more than 1 or 2 px; density: "
          "estimated), avgerr in px over the estimates given")
    header = (f"{'dataset':<11} {'method':<20} | {'bad-1':>6} {'bad-2':>6} {'avgerr':>6} {'dens':>6} | "
              f"{'nonocc:':>7} {'bad-1':>6} {'bad-2':>6} {'avgerr':>6} {'dens':>6}")
    checks = []
    for data in datasets:
        name, lo, count = data["name"], data["min_disparity"], data["disparities"]
        folder = os.path.join(work, "accuracy", name)
        os.makedirs(folder, exist_ok=True)
        left_path, right_path = data.get("left_path"), data.get("right_path")
        if not left_path:
            left_path, right_path = os.path.join(folder, "left.png"), os.path.join(folder, "right.png")
            write_png(left_path, data["left"])
            write_png(right_path, data["right"])
        # StereoSGBM leaves the first minDisparity + numDisparities columns invalid (a match there
        # could fall outside the right image): the share of known pixels there says how much of
        # OpenCV's bad-x that band is.
        band = np.zeros(data["truth"].shape, bool)
        band[:, :max(0, lo + count)] = True
        known = np.isfinite(data["truth"])
        print(f"\n{name}: {data['note']}; range {lo}..{lo + count - 1}; StereoSGBM's invalid left band (x < {lo + count}) "
              f"holds {100 * np.count_nonzero(band & known) / np.count_nonzero(known):.1f} % of the known pixels")
        print(header)
        print("-" * len(header))
        maps = {}
        for label, paths in (("default", None), ("eight", "eight")):
            info, disparity = parallax_disparity(binary, left_path, right_path, lo, count,
                                                 os.path.join(folder, f"parallax-{label}.pfm"), paths)
            if disparity.shape != data["truth"].shape:
                raise Failure(f"{name}: Parallax's map is {disparity.shape[::-1]}, the truth {data['truth'].shape[::-1]}")
            shown = f"Parallax {info['paths']}" + (" (def.)" if label == "default" else "")
            maps[shown] = disparity
            if label == "default":
                default_label, default_info = shown, info
        for method in OPENCV_ACCURACY_METHODS:
            disparity = opencv_disparity(method, data["left"], data["right"], lo, count)
            maps[f"OpenCV {method}"] = disparity
            if keep:
                write_pfm(os.path.join(folder, f"opencv-{method}.pfm"), disparity)
        rows = {}
        for label, disparity in maps.items():
            every = metrics(disparity, data["truth"])
            if every is None:
                raise Failure(f"{name}: no pixel of known truth")
            nonocc = metrics(disparity, data["truth"], data["nonoccluded"]) if data["nonoccluded"] is not None else None
            rows[label] = (every, nonocc)
            cells = f"{every['bad1']:>6.2f} {every['bad2']:>6.2f} {every['avgerr']:>6.3f} {every['density']:>6.2f}"
            if nonocc:
                cells += (f" | {'':>7} {nonocc['bad1']:>6.2f} {nonocc['bad2']:>6.2f} {nonocc['avgerr']:>6.3f} "
                          f"{nonocc['density']:>6.2f}")
            print(f"{name:<11} {label:<20} | {cells}", flush=True)
            results.append({"dataset": name, "method": label, "all": every, "nonoccluded": nonocc,
                            "min_disparity": lo, "disparities": count})
        invalid = default_info["invalid"]
        print(f"({default_label}: {default_info['valid']} valid pixels; invalid: "
              + ", ".join(f"{k} {v}" for k, v in invalid.items()) + f"; {default_info['ms']:.1f} ms)")
        ours, hh = rows[default_label][0], rows["OpenCV HH"][0]
        ok = ours["bad2"] <= hh["bad2"] and ours["density"] >= hh["density"]
        checks.append((name, ok, f"bad-2.0 {ours['bad2']:.2f} % vs HH {hh['bad2']:.2f} % (at most); "
                                 f"density {ours['density']:.2f} % vs HH {hh['density']:.2f} % (at least)"))
        if name == "wall":
            known = np.isfinite(data["truth"])
            estimates = maps[default_label][known & np.isfinite(maps[default_label])]
            truth_median = float(np.median(data["truth"][known]))
            ours_median = float(np.median(estimates)) if estimates.size else float("nan")
            ok = abs(ours_median - truth_median) <= 0.1
            checks.append(("wall median", ok, f"Parallax's median {ours_median:.3f} px, the truth's "
                                              f"{truth_median:.3f} px (within 0.1 px)"))
    print("\nCHECKS (Parallax default against OpenCV MODE_HH on all known pixels; the rendered wall's median):")
    for name, ok, text in checks:
        print(f"  {'PASS' if ok else 'FAIL'} {name}: {text}")
    return results, all(ok for _, ok, _ in checks)


# ---------------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--parallax", required=True, help="the parallax binary")
    part = p.add_mutually_exclusive_group()
    part.add_argument("--speed-only", action="store_true", help="only the speed table")
    part.add_argument("--accuracy-only", action="store_true", help="only the accuracy table and its checks")
    p.add_argument("--iterations", type=int, default=11, help="timed runs per row and method (at least 10)")
    p.add_argument("--threads", default="1,2", help="thread counts of the speed rows")
    p.add_argument("--paths", default="five", help="Parallax's paths in the speed rows")
    p.add_argument("--keep", metavar="DIR", help="keep the pairs, images and disparity maps (PFM) in DIR")
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    a = p.parse_args()
    if a.iterations < 1:
        p.error("--iterations must be at least 1")
    if not os.access(a.parallax, os.X_OK):
        p.error(f"{a.parallax}: no such executable (swift build -c release --product parallax)")
    threads_list = [int(t) for t in a.threads.split(",")]

    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        work = os.path.abspath(a.keep)
    else:
        work = tempfile.mkdtemp(prefix="parallax-disparity-")
    ok = True
    report = {}
    try:
        probe = parallax_bench(a.parallax, "320x240", 16, 1, iterations=1)
        print(f"CPU: {cpu_model()}, {os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.2f}")
        print(f"SIMD: Parallax {probe['simd_description']} (run-time dispatch); "
              f"OpenCV {cv2.__version__} {opencv_simd()} (run-time dispatch)")
        print(f"OpenCV StereoSGBM: blockSize {SGBM_BLOCK_SIZE}, P1 {SGBM_P1}, P2 {SGBM_P2}, uniquenessRatio "
              f"{SGBM_UNIQUENESS_RATIO}, disp12MaxDiff {SGBM_DISP12_MAX_DIFF}, speckleWindowSize {SGBM_SPECKLE_WINDOW}, "
              f"speckleRange {SGBM_SPECKLE_RANGE}; StereoBM (ROS 2 stereo_image_proc defaults): preFilterSize "
              f"{BM_PREFILTER_SIZE}, preFilterCap {BM_PREFILTER_CAP}, blockSize {BM_WINDOW}, textureThreshold "
              f"{BM_TEXTURE_THRESHOLD}, uniquenessRatio {BM_UNIQUENESS_RATIO}, speckleWindowSize {BM_SPECKLE_WINDOW}, "
              f"speckleRange {BM_SPECKLE_RANGE}")
        if not a.accuracy_only:
            report["speed"] = speed(a.parallax, a.iterations, threads_list, a.paths, work)
        if not a.speed_only:
            report["accuracy"], ok = accuracy(a.parallax, work, a.keep)
        print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    except Failure as e:
        print(f"\nerror: {e}", file=sys.stderr)
        if not a.keep:
            print("(--keep DIR keeps the files the commands read and wrote)", file=sys.stderr)
        return 2
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1, default=float)
    if a.keep:
        print(f"kept the files in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
