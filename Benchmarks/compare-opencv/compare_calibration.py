#!/usr/bin/env python3
"""Parallax vs OpenCV on chessboard detection and stereo calibration, same images, same machine.

Two image sets:
  * OpenCV's stereo sample (Debian opencv-doc: left01..right14.jpg, 13 pairs, 9x6, square 1);
  * rendered 640x480 stereo pairs of a 9x6 board (exact plane-to-image homographies of a
    pinhole rig, 8x supersampled, then Gaussian blur sigma 1 px and noise sigma 2 levels),
    which also give the true corners, so both detectors' corner errors are measured.

OpenCV: findChessboardCorners(ADAPTIVE_THRESH | NORMALIZE_IMAGE) + cornerSubPix(11x11) per
image, then stereoCalibrate (its stereo_calib sample's flags, and with every parameter free).
Parallax: `parallax calibrate --json --corners-out` for corners and the solve time, and
`parallax bench detect` for the detection time per image, measured as OpenCV's is (decoding
excluded, fastest of --repeat rounds per image, median and mean over images; the rounds
alternate between OpenCV and Parallax, so both meet the same moments of a drifting machine).

Usage: compare_calibration.py [--parallax PATH] [--repeat N]
  (default binary: .build/release/parallax from the package root; build it with
   `swift build -c release --product parallax`).
"""
import argparse, json, os, subprocess, sys, tempfile, time
import numpy as np
import cv2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = "/usr/share/doc/opencv-doc/examples/data"
NUMBERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
BOARD = (9, 6)


def opencv_detect(path):
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    t0 = time.perf_counter()
    ok, c = cv2.findChessboardCorners(img, BOARD, cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE)
    if ok:
        c = cv2.cornerSubPix(img, c, (11, 11), (-1, -1), (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 30, 0.01))
    return (c.reshape(-1, 2) if ok else None), time.perf_counter() - t0, img.shape[::-1]


def opencv_calibrate(lefts, rights, size, square):
    obj = np.zeros((BOARD[0] * BOARD[1], 3), np.float32)
    obj[:, :2] = np.mgrid[0:BOARD[0], 0:BOARD[1]].T.reshape(-1, 2) * square
    objs = [obj] * len(lefts)
    lp = [l.reshape(-1, 1, 2).astype(np.float32) for l in lefts]
    rp = [r.reshape(-1, 1, 2).astype(np.float32) for r in rights]
    out = {}
    t0 = time.perf_counter()
    K1 = cv2.initCameraMatrix2D(objs, lp, size, 0)
    K2 = cv2.initCameraMatrix2D(objs, rp, size, 0)
    flags = (cv2.CALIB_FIX_ASPECT_RATIO | cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_USE_INTRINSIC_GUESS |
             cv2.CALIB_SAME_FOCAL_LENGTH | cv2.CALIB_RATIONAL_MODEL | cv2.CALIB_FIX_K3 | cv2.CALIB_FIX_K4 | cv2.CALIB_FIX_K5)
    rms = cv2.stereoCalibrate(objs, lp, rp, K1, None, K2, None, size, flags=flags,
                              criteria=(cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-5))[0]
    out["sample_flags"] = {"rms": rms, "seconds": time.perf_counter() - t0}
    t0 = time.perf_counter()
    _, K1, D1, _, _ = cv2.calibrateCamera(objs, lp, size, None, None)
    _, K2, D2, _, _ = cv2.calibrateCamera(objs, rp, size, None, None)
    res = cv2.stereoCalibrate(objs, lp, rp, K1, D1, K2, D2, size, flags=cv2.CALIB_USE_INTRINSIC_GUESS,
                              criteria=(cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-6))
    out["brown5_joint"] = {"rms": res[0], "seconds": time.perf_counter() - t0,
                           "baseline": float(np.linalg.norm(res[6]))}
    return out


def run_parallax(binary, lefts, rights, square):
    """One `parallax calibrate` run: its JSON (solve time, figures) and the corners it found
    (detection is timed by `parallax bench detect` instead)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "calibrate", "--left", *lefts, "--right", *rights, "--board", "9x6", "--square", str(square),
               "--json", "--output", os.path.join(tmp, "calib.json"), "--corners-out", os.path.join(tmp, "corners.json")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit(f"parallax failed:\n{p.stderr}")
        return json.loads(p.stdout), json.load(open(os.path.join(tmp, "corners.json")))["images"]


def render_pairs(folder, count=10, seed=3):
    """Stereo pairs of a 9x6 board (30 mm squares) seen by two 640x480 pinhole cameras 60 mm apart."""
    rng = np.random.default_rng(seed)
    K = np.array([[520.0, 0, 319.5], [0, 520.0, 239.5], [0, 0, 1]])
    R_lr, _ = cv2.Rodrigues(np.array([0.002, -0.01, 0.001]))
    t_lr = np.array([-60.0, 0.3, 0.5])
    s, scale = 30.0, 8  # square (mm), supersampling factor
    sq = 24  # pixels per square in the flat board texture
    texture = np.full((9 * sq, 12 * sq), 255, np.uint8)  # 10x7 squares plus a one-square border
    for j in range(7):
        for i in range(10):
            if (i + j) % 2 == 0:
                texture[(j + 1) * sq:(j + 2) * sq, (i + 1) * sq:(i + 2) * sq] = 0
    # texture pixel (u, v) -> board (X, Y) in mm; inner corner (0,0) is at texture (2 sq, 2 sq) minus half a pixel.
    T = np.array([[s / sq, 0, -2 * s + s / sq * 0.5], [0, s / sq, -2 * s + s / sq * 0.5], [0, 0, 1]])
    truth = {}
    files = ([], [])
    n = 0
    while n < count:
        rvec = rng.uniform([-0.6, -0.6, -0.3], [0.6, 0.6, 0.3])
        R, _ = cv2.Rodrigues(rvec)
        d = rng.uniform(450, 700)
        centre = np.array([4 * s, 2.5 * s, 0])
        t = np.array([rng.uniform(-0.15, 0.1) * d, rng.uniform(-0.1, 0.1) * d, d]) - R @ centre
        ok = True
        images, corners = [], []
        for (Rc, tc) in [(R, t), (R_lr @ R, R_lr @ t + t_lr)]:
            H = K @ np.column_stack([Rc[:, 0], Rc[:, 1], tc])  # board (X, Y, 1) -> pixel
            obj = np.array([[i * s, j * s, 1] for j in range(6) for i in range(9)]).T
            p = H @ obj
            p = (p[:2] / p[2]).T
            if p.min() < 20 or p[:, 0].max() > 620 or p[:, 1].max() > 460:
                ok = False
                break
            # Supersampled render: output pixel centres (x + 0.5) * scale - 0.5 in the big image.
            S = np.array([[scale, 0, (scale - 1) / 2], [0, scale, (scale - 1) / 2], [0, 0, 1]])
            big = cv2.warpPerspective(texture, S @ H @ T, (640 * scale, 480 * scale), flags=cv2.INTER_LINEAR,
                                      borderMode=cv2.BORDER_CONSTANT, borderValue=128)
            img = cv2.resize(big, (640, 480), interpolation=cv2.INTER_AREA).astype(np.float64)
            img = cv2.GaussianBlur(img, (0, 0), 1.0)
            img = np.clip(np.round(img * 0.8 + 25 + rng.normal(0, 2, img.shape)), 0, 255).astype(np.uint8)
            images.append(img)
            corners.append(p)
        if not ok:
            continue
        for side, img, c in zip(("left", "right"), images, corners):
            path = os.path.join(folder, f"{side}{n:02d}.png")
            cv2.imwrite(path, img)
            files[0 if side == "left" else 1].append(path)
            truth[path] = c
        n += 1
    return files, truth


def compare(title, lefts, rights, square, binary, repeat, truth=None):
    print(f"\n== {title}: {len(lefts)} pairs")
    # Rounds alternate between the two detectors, each image's fastest round counting, so
    # that both see the same moments of a machine whose speed drifts (shared VMs do).
    paths = lefts + rights
    cv_corners, size = {}, None
    cv_times, px_times = [float("inf")] * len(paths), [float("inf")] * len(paths)
    for _ in range(repeat):
        for k, path in enumerate(paths):
            c, dt, size = opencv_detect(path)
            cv_times[k] = min(cv_times[k], dt)
            cv_corners[path] = c
        bench = subprocess.run([binary, "bench", "detect", *paths, "--board", "9x6", "--iterations", "1", "--json"],
                               capture_output=True, text=True, timeout=600)
        if bench.returncode != 0:
            sys.exit(f"parallax bench detect failed:\n{bench.stderr}")
        for k, ms in enumerate(json.loads(bench.stdout)["ms_per_image"]):
            px_times[k] = min(px_times[k], ms / 1000)
    found = [p for p in lefts if cv_corners[p] is not None and cv_corners[rights[lefts.index(p)]] is not None]
    cv_cal = opencv_calibrate([cv_corners[p] for p in found], [cv_corners[rights[lefts.index(p)]] for p in found], size, square)
    px, px_corners = run_parallax(binary, lefts, rights, square)
    cv_median, px_median = 1000 * float(np.median(cv_times)), 1000 * float(np.median(px_times))
    print(f"detection per image (ms, median over images, best of {repeat} runs; ratio = Parallax / OpenCV):")
    print(f"  OpenCV findChessboardCorners + cornerSubPix: {cv_median:8.2f}  "
          f"(mean {1000 * float(np.mean(cv_times)):.2f}, {sum(c is not None for c in cv_corners.values())}/{len(cv_corners)} found)")
    print(f"  Parallax ChessboardDetector:                 {px_median:8.2f}  "
          f"(mean {1000 * float(np.mean(px_times)):.2f}, {len(px_corners)}/{len(lefts) + len(rights)} found)")
    print(f"  ratio: median {px_median / cv_median:.2f}, mean {float(np.mean(px_times)) / float(np.mean(cv_times)):.2f}")
    print("stereo calibration:")
    print(f"  OpenCV stereoCalibrate, stereo_calib flags:  {cv_cal['sample_flags']['seconds']:.3f} s, rms {cv_cal['sample_flags']['rms']:.4f} px")
    print(f"  OpenCV calibrateCamera x2 + stereoCalibrate (brown5, joint): {cv_cal['brown5_joint']['seconds']:.3f} s, "
          f"rms {cv_cal['brown5_joint']['rms']:.4f} px")
    print(f"  Parallax (brown5, joint, Huber):             {px['solve_seconds']:.3f} s, rms {px['rms_stereo']:.4f} px, "
          f"pairs {px['pairs_used']}/{px['pairs_total']}, epipolar {px['epipolar_error_mean']:.4f} px, "
          f"rectified vertical rms {px['rectified_vertical_rms']:.4f} px")
    summary = {"opencv_detection_ms_median": cv_median, "opencv_detection_ms_mean": 1000 * float(np.mean(cv_times)),
               "parallax_detection_ms_median": px_median, "parallax_detection_ms_mean": 1000 * float(np.mean(px_times)),
               "opencv": cv_cal, "parallax": px}
    if truth:
        def rms(found_corners):
            errs = [np.linalg.norm(np.asarray(found_corners[p]) - truth[p], axis=1) for p in truth if found_corners.get(p) is not None]
            e = np.concatenate(errs) if errs else np.array([np.nan])
            return float(np.sqrt(np.mean(e ** 2))), len(errs)
        cv_rms, cv_n = rms(cv_corners)
        px_rms, px_n = rms(px_corners)
        print(f"corner error against the rendered truth (RMS px): OpenCV {cv_rms:.4f} ({cv_n} images), Parallax {px_rms:.4f} ({px_n} images)")
        summary["corner_rms"] = {"opencv": cv_rms, "parallax": px_rms}
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parallax", default=os.path.join(ROOT, ".build", "release", "parallax"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not os.path.exists(args.parallax):
        sys.exit(f"no parallax binary at {args.parallax}; run `swift build -c release --product parallax` first")
    print(f"OpenCV {cv2.__version__}, {os.cpu_count()} CPUs; Parallax {args.parallax}")
    results = {}
    if os.path.exists(os.path.join(DATA, "left01.jpg")):
        lefts = [os.path.join(DATA, f"left{n:02d}.jpg") for n in NUMBERS]
        rights = [os.path.join(DATA, f"right{n:02d}.jpg") for n in NUMBERS]
        results["opencv_sample"] = compare("OpenCV stereo sample (640x480 JPEG)", lefts, rights, 1.0, args.parallax, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        (lefts, rights), truth = render_pairs(tmp)
        results["rendered"] = compare("rendered boards (640x480, blur 1 px, noise 2 levels)", lefts, rights, 30.0,
                                      args.parallax, args.repeat, truth)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "calibration.json"), "w") as f:
        json.dump(results, f, indent=2, default=float)
    print(f"\nwrote {os.path.join(out, 'calibration.json')}")


if __name__ == "__main__":
    main()
