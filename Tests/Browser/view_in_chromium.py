#!/usr/bin/env python3
"""`parallax view` end to end, in Debian's headless Chromium (`make test-browser`).

    view_in_chromium.py PARALLAX WORK [--soak MINUTES] [--screenshot PATH]

Starts `parallax view --simulated --port 0 --stamp-frame-numbers`, then:

1. access: requests without the token get 401, with a wrong one 403 (the page, the API,
   the WebSocket upgrade);
2. bad requests: a few hundred malformed ones (distances that are no numbers, NaN,
   negative, nearer than the baseline, absurdly far or near; bodies that are no JSON,
   wrong types, over 4 KiB; unknown modes and flags; paths with `..`, raw and
   percent-encoded; unknown paths; wrong methods; broken HTTP), each must get a 4xx,
   and the server must still answer afterwards;
3. the page in Chromium (driven over the DevTools protocol on a pipe): each mode by
   screenshot of its canvas, which must show images (not blank: spread of gray levels);
4. the convergence slider moved through the page's own form: on /api/pair.png?mode=anaglyph
   the background plane 2.5 m away has a disparity of f·B/Z (13.3 px) with the plane at
   infinity, and none within the whole-pixel step with the plane at 2.5 m (block matching
   of the anaglyph's red (left) and green (right) channels, as the session's live
   convergence test measures it);
5. latency: the page reads each pair's number from the bar code in the image it drew and
   keeps the time from the frame's exposure, and from the viewer's receipt of the pair, to
   the draw; p50 and p99 printed at 30 fps;
6. "save this pair": a new folder each time, both images and the calibration.

With --soak MINUTES it instead runs the simulated rig time-compressed with the page open
until the session has delivered MINUTES simulated minutes of pairs at 30 fps, and prints
the viewer's resident memory at the start and the end, the page's lag behind the newest
pair, and both accounts.
"""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import cv2
import numpy as np

MODES = ["side-by-side", "anaglyph", "blend", "left", "right"]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, flush=True)


def chromium_path():
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("test-browser: chromium is not installed (make test-browser installs Debian's chromium)")


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-separated JSON)."""

    def __init__(self, work):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def plumbing():
            high_r, high_w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.process = subprocess.Popen(
            [chromium_path(), "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-extensions", "--disable-background-networking", "--mute-audio",
             f"--user-data-dir={work}/chromium-profile", "--window-size=1500,1000", "about:blank"],
            pass_fds=(3, 4), preexec_fn=plumbing, stdout=subprocess.DEVNULL, stderr=open(f"{work}/chromium.log", "w"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def send(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self.buffer += chunk
        raise RuntimeError(f"{method}: no answer in {timeout} s")

    def open(self, url):
        target = self.send("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout=60, what=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what or expression}")

    def screenshot(self, clip=None):
        params = {"format": "png"}
        if clip:
            params["clip"] = {**clip, "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", params)["data"])

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_viewer(parallax, work, extra):
    log = open(f"{work}/view.stderr", "w")
    process = subprocess.Popen([parallax, "view", "--simulated", "--port", "0", "--save-to", f"{work}/saved", *extra],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    line = process.stdout.readline()
    match = re.search(r"(http://[^/]+)/\?token=([0-9a-f]+)", line)
    if not match:
        process.kill()
        sys.exit(f"test-browser: parallax view printed no URL: {line!r}; stderr: {open(f'{work}/view.stderr').read()}")
    return process, match.group(1), match.group(2)


def http(base, path, method="GET", body=None, token=None, headers=None):
    url = base + path
    if token is not None:
        url += ("&" if "?" in path else "?") + "token=" + token
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def raw_request(base, text):
    """Sends bytes as they are (no client tidies the path) and returns the status; None when
    the server closed without one, "held open" when it said nothing for 10 s."""
    host, port = base[len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        data = b""
        try:
            s.sendall(text if isinstance(text, bytes) else text.encode("latin-1"))
        except (ConnectionResetError, BrokenPipeError):
            pass  # refused before the whole request was sent: the answer may be there to read
        try:
            while b"\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        except socket.timeout:
            return "held open"
    match = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(match.group(1)) if match else None


def access_and_bad_requests(base, token):
    # Without --host the viewer listens on the loopback interface alone: the URL it printed
    # is 127.0.0.1's, and the same port on this machine's other addresses refuses.
    check(base.startswith("http://127.0.0.1:"), f"the viewer's default address: {base}")
    port = int(base.rsplit(":", 1)[1])
    others = sorted({info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"})
    others = [address for address in others if not address.startswith("127.")]
    for address in others:
        try:
            socket.create_connection((address, port), timeout=5).close()
            check(False, f"the viewer answers on {address}:{port}, not on the loopback interface alone")
        except OSError:
            pass
    print(f"loopback only: 127.0.0.1:{port} serves; refused on {', '.join(others) or '(no other IPv4 address here)'}", flush=True)
    for path in ["/", "/index.html", "/api/status", "/api/pair.png", "/ws"]:
        status, _ = http(base, path)
        check(status == 401, f"{path} without the token: {status}, expected 401")
        status, _ = http(base, path, token="0" * 32)
        check(status == 403, f"{path} with a wrong token: {status}, expected 403")
    for path, body in [("/api/convergence", b'{"distance":"2m"}'), ("/api/save", b"")]:
        status, _ = http(base, path, method="POST", body=body)
        check(status == 401, f"POST {path} without the token: {status}, expected 401")
        status, _ = http(base, path, method="POST", body=body, token="0" * 32)
        check(status == 403, f"POST {path} with a wrong token: {status}, expected 403")
    # The token as a Bearer header instead of in the URL: right is served, wrong is 403.
    status, _ = http(base, "/api/status", headers={"Authorization": "Bearer " + token})
    check(status == 200, f"/api/status with the token as a Bearer header: {status}, expected 200")
    status, _ = http(base, "/api/status", headers={"Authorization": "Bearer " + "0" * 32})
    check(status == 403, f"/api/status with a wrong Bearer token: {status}, expected 403")
    # /index.html is the page at /.
    page, index = http(base, "/", token=token), http(base, "/index.html", token=token)
    check(page[0] == 200 and index == page, f"/index.html: {index[0]}, {len(index[1])} bytes; / {page[0]}, {len(page[1])} bytes")
    upgrade = ("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    # An upgrade the viewer refuses gets what every request without the token gets (401, or
    # 403 for a wrong one) and the connection closes: no WebSocket.
    status = raw_request(base, upgrade)
    check(status == 401, f"a WebSocket upgrade without the token: {status}, expected 401")
    status = raw_request(base, upgrade.replace("/ws", "/ws?token=" + "f" * 32))
    check(status == 403, f"a WebSocket upgrade with a wrong token: {status}, expected 403")
    status = raw_request(base, upgrade.replace("Host: x\r\n", "Host: x\r\nAuthorization: Bearer " + "f" * 32 + "\r\n"))
    check(status == 403, f"a WebSocket upgrade with a wrong Bearer token: {status}, expected 403")
    status = raw_request(base, upgrade.replace("/ws", "/ws?token=" + token))
    check(status == 101, f"a WebSocket upgrade with the token: {status}, expected 101")
    status = raw_request(base, upgrade.replace("Host: x\r\n", "Host: x\r\nAuthorization: Bearer " + token + "\r\n"))
    check(status == 101, f"a WebSocket upgrade with the token as a Bearer header: {status}, expected 101")
    # An unauthenticated POST is refused before its body is read: 401, whatever its size.
    try:
        status = raw_request(base, b"POST /api/convergence HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000)
    except (BrokenPipeError, ConnectionResetError):
        status = "the connection cut while the body was sent"
    check(status == 401, f"an unauthenticated 100 kB POST: {status}, expected 401")

    bad = []
    distances = ["abc", "NaN", "nan", "-1", "-1m", "0", "0m", "0.0", "1e400", "-inf", "1.2km", "1.2 m m", "m", "",
                 "0x19mm", "1,2m", "1.2.3m", "🙂", "1e-300m", "0.001m", "0.03m", "1e-9", "12 parsecs", " ", "\u0000",
                 "1.2m;rm -rf /", "../1m", "%2e%2e", "1" * 400, "Infinity m"]
    for d in distances:
        bad.append(("POST", "/api/convergence", json.dumps({"distance": d}).encode()))
    for value in ["[1]", "{}", "true", "false", "-5", "0", "-0.0", "1e-320", "[\"1m\"]", "{\"m\": 1}"]:
        bad.append(("POST", "/api/convergence", ('{"distance": ' + value + '}').encode()))
    for body in [b"", b"{", b"}", b"null", b"[]", b"\"1m\"", b"1.2", b"distance=1.2m", b"{\"distance\": }",
                 b"{\"distance\": \"1m\"", b"\xff\xfe", b"{\"distance\": NaN}", b"{\"distance\": Infinity}",
                 b"{\"distance\": -Infinity}", b"{'distance': '1m'}", b"{\"dist\": \"1m\"}", b"\x00" * 10,
                 b"{\"distance\": 1e999}", b"{\"distance\": \"1m\"}" + b" " * 5000, b"x" * 100_000,
                 json.dumps({"distance": "1m", "x": "y" * 5000}).encode()]:
        bad.append(("POST", "/api/convergence", body))
    for i in range(60):
        # Numbers far outside any rig: too near (below the baseline) or beyond every image.
        bad.append(("POST", "/api/convergence", json.dumps({"distance": f"{10 ** -(i % 12 + 3)}{['m', 'cm', 'mm', 'in', ''][i % 5]}"}).encode()))
    # Seeded random bodies: bytes, and JSON with a random value under "distance".
    generator = np.random.default_rng(35)
    for i in range(120):
        if i % 2 == 0:
            body = bytes(generator.integers(0, 256, int(generator.integers(1, 300))).tolist())
        else:
            value = generator.choice([json.dumps(float(generator.normal()) * 1e-3), json.dumps("x" * int(generator.integers(1, 50))),
                                      "[" * int(generator.integers(1, 200)), json.dumps({"nested": {"deep": [1, 2, 3]}}),
                                      json.dumps(-float(generator.exponential(10)))])
            body = ('{"distance": ' + value + '}').encode()
        bad.append(("POST", "/api/convergence", body))
    for mode in ["", "ANAGLYPH", "anaglyph2", "side_by_side", "3d", "../left", "left%00", "💥", "x" * 300]:
        bad.append(("GET", "/api/pair.png?mode=" + urllib.request.quote(mode), None))
    for raw in ["2", "yes", "-1", "truee", "%00"]:
        bad.append(("GET", "/api/pair.png?mode=left&raw=" + raw, None))
        bad.append(("POST", "/api/save?raw=" + raw, b""))
    for path in ["/api", "/api/", "/api/statuses", "/api/status/x", "/index.htm", "/favicon.ico", "/etc/passwd",
                 "/api/pair.jpg", "/api/Status", "//api/status", "/api/convergence/1"]:
        bad.append(("GET", path, None))
    for method, path in [("PUT", "/api/status"), ("DELETE", "/api/status"), ("POST", "/api/status"), ("GET", "/api/convergence"),
                         ("PATCH", "/api/convergence"), ("GET", "/api/save"), ("DELETE", "/"), ("POST", "/api/pair.png"),
                         ("PUT", "/api/save"), ("POST", "/")]:
        bad.append((method, path, b"{}" if method in ("POST", "PUT", "PATCH") else None))
    counts = {}
    for method, path, body in bad:
        status, answer = http(base, path, method=method, body=body, token=token,
                              headers={"Content-Type": "application/json"} if body is not None else None)
        counts[status] = counts.get(status, 0) + 1
        check(400 <= status < 500, f"{method} {path} {body[:60] if body else ''!r}: {status} {answer[:200]!r}")
        if 400 <= status < 500 and status != 413:
            try:
                message = json.loads(answer).get("error", "")
            except ValueError:
                message = ""
            check(len(message) > 10, f"{method} {path}: a {status} without a message: {answer[:100]!r}")
    # Requests sent byte for byte (no client tidies their paths): each gets a 4xx.
    raw_bad = [f"GET /../../etc/passwd?token={token} HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /api/%2e%2e/%2e%2e/etc/passwd?token={token} HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /%2E%2E/status?token={token} HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /api/..%2fstatus?token={token} HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /.. HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /api/pair.png?mode=../../etc&token={token} HTTP/1.1\r\nHost: x\r\n\r\n"]
    # Bytes that are no HTTP: SwiftNIO's parser gives up and the viewer closes the connection
    # at once (no status to read; never held open with nothing said), and goes on serving.
    broken = [f"GET /api/status?token={token} HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
               f"POST /api/convergence?token={token} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
               f"POST /api/convergence?token={token} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{{",
               "GARBAGE\r\n\r\n", "GET\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "\x00\x01\x02 / HTTP/1.1\r\n\r\n",
               f"GET /api/status?token={token} HTTP/1.1\r\nHost: x\r\n" + "X-Long: " + "a" * 100_000 + "\r\n\r\n",
               "GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", "GET /" + "a" * 100_000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
               f"GET /api/status?token={token} HTTP/1.1\r\nHost: x\r\n" + "X-Big: " + "b" * 200_000 + "\r\n\r\n",
               f"GET /api/status?token={token} HTTP/1.1\r\nHost: x\r\n" + "".join(f"X-{i}: 1\r\n" for i in range(2000)) + "\r\n"]
    for text in raw_bad:
        status = raw_request(base, text)
        counts[status] = counts.get(status, 0) + 1
        check(isinstance(status, int) and 400 <= status < 500, f"raw {text[:50]!r}: {status}")
    answered = {}
    for text in broken:
        status = raw_request(base, text)
        answered[status] = answered.get(status, 0) + 1
        check(status is None or (isinstance(status, int) and 400 <= status < 500), f"broken HTTP {text[:50]!r}: {status}")
    status, _ = http(base, "/api/status", token=token)
    check(status == 200, f"after the bad requests /api/status answers {status}")
    total = len(bad) + len(raw_bad)
    print(f"bad requests: {total} sent, every one a 4xx with its reason: {dict(sorted(counts.items()))}; broken HTTP: "
          f"{len(broken)} sent, answered {answered}; "
          f"the server still serves: {status == 200}", flush=True)
    return total


def slow_tab(base, token, seconds=2.0):
    """A tab that takes one pair and never asks for the next (a stalled page): the session goes
    on pairing at the cameras' rate, the viewer replaces the pair it would have sent, and
    the session drops nothing for it."""
    host, port = base[len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(("GET /ws?token=" + token + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        check(answer.startswith(b"HTTP/1.1 101"), f"slow tab: the upgrade was answered {answer[:40]!r}")
        text, mask = b"rectified", bytes([1, 2, 3, 4])
        s.sendall(bytes([0x81, 0x80 | len(text)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(text)))
        before = status_of(base, token)
        time.sleep(seconds)  # the window measured: the tab asks for nothing in it
        after = status_of(base, token)
    made = after["pairs"] - before["pairs"]
    replaced = after["viewer"]["replaced"] - before["viewer"]["replaced"]
    # What a consumer that held the session back would cost: its own drops.
    def drops(status):
        return sum(count for reasons in status["dropped"].values() for reason, count in reasons.items()
                   if reason in ("consumer_behind", "no_free_buffer", "queue_overflow", "adaptive_frame_rate_cap"))
    dropped = drops(after) - drops(before)
    print(f"slow tab: over {seconds:.0f} s with a page that asks for nothing, {made} pairs made, {replaced} replaced in the "
          f"viewer, session drops {dropped}", flush=True)
    # 30 fps: 60 pairs in 2 s; half of that is the bound of a session that kept going (one
    # that waited on the tab would make none).
    check(made >= 30, f"slow tab: the session made {made} pairs in {seconds} s while a page asked for nothing")
    check(replaced >= made - 2, f"slow tab: {made} pairs made, only {replaced} replaced in the viewer")
    check(dropped == 0, f"slow tab: the session dropped {dropped} frames as held back while a page asked for nothing")


def spread(png):
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    return image, float(image.std()), float(image.mean())


def disparity(anaglyph, region):
    """Disparity of the anaglyph's red (left) against its green (right) over region, by block matching."""
    x0, x1, y0, y1 = region
    left = anaglyph[y0:y1, :, 2].astype(np.float64)
    right = anaglyph[y0:y1, :, 1].astype(np.float64)
    costs = []
    shifts = range(-20, 21)
    for d in shifts:
        costs.append(np.mean(np.abs(left[:, x0:x1] - right[:, x0 - d:x1 - d])))
    best = int(np.argmin(costs))
    offset = 0.0
    if 0 < best < len(costs) - 1:
        a, b, c = costs[best - 1], costs[best], costs[best + 1]
        denominator = a - 2 * b + c
        offset = 0.5 * (a - c) / denominator if denominator > 0 else 0.0
    return shifts[best] + offset


def wait_for_pairs(base, token, count, seconds=30):
    deadline = time.monotonic() + seconds
    while status_of(base, token)["pairs"] < count:
        if time.monotonic() > deadline:
            sys.exit(f"test-browser: fewer than {count} pairs after {seconds} s")
        time.sleep(0.02)


def status_of(base, token):
    return json.loads(http(base, "/api/status", token=token)[1])


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def page_checks(devtools, base, token, work, screenshot_path):
    devtools.wait_for("window.parallaxViewer && parallaxViewer.framesDrawn >= 10", what="the page drawing 10 pairs")
    rect = devtools.evaluate("(() => { const r = document.getElementById('view').getBoundingClientRect(); "
                             "return {x: r.x, y: r.y, width: r.width, height: r.height}; })()")
    for mode in MODES:
        devtools.evaluate(f"document.querySelector('#modes button[data-mode=\"{mode}\"]').click()")
        drawn = devtools.evaluate("parallaxViewer.framesDrawn")
        devtools.wait_for(f"parallaxViewer.framesDrawn >= {drawn + 5}", what=f"5 pairs drawn in {mode}")
        rect = devtools.evaluate("(() => { const r = document.getElementById('view').getBoundingClientRect(); "
                                 "return {x: r.x, y: r.y, width: r.width, height: r.height}; })()")
        png = devtools.screenshot(rect)
        open(f"{work}/mode-{mode}.png", "wb").write(png)
        image, std, mean = spread(png)
        wide = image.shape[1] / image.shape[0]
        print(f"mode {mode}: canvas {image.shape[1]}x{image.shape[0]} on screen, gray mean {mean:.1f}, spread {std:.1f}", flush=True)
        check(std > 20 and 30 < mean < 225, f"mode {mode}: the canvas looks blank (mean {mean:.1f}, spread {std:.1f})")
        check(abs(wide - (8 / 3 if mode == "side-by-side" else 4 / 3)) < 0.05, f"mode {mode}: canvas aspect {wide:.3f}")
        if mode == "anaglyph":
            red, cyan = image[:, :, 2].astype(int), image[:, :, 1].astype(int)
            check(np.mean(np.abs(red - cyan)) > 2, "anaglyph: red and cyan channels are the same")
    devtools.evaluate("document.querySelector('#modes button[data-mode=\"side-by-side\"]').click()")
    drawn = devtools.evaluate("parallaxViewer.framesDrawn")
    devtools.wait_for(f"parallaxViewer.framesDrawn >= {drawn + 5}")
    if screenshot_path:
        png = devtools.screenshot()
        if screenshot_path.endswith(".jpg"):
            cv2.imwrite(screenshot_path, cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR), [cv2.IMWRITE_JPEG_QUALITY, 85])
        else:
            open(screenshot_path, "wb").write(png)
        print(f"page screenshot: {screenshot_path}", flush=True)

    # The convergence plane, moved through the page's own form; the background plane is 2.5 m away.
    region = (472, 600, 352, 452)
    f_b = None
    for typed, expected in [("∞", None), ("2.5m", 2.5), ("250cm", 2.5), ("1.25m", 1.25)]:
        devtools.evaluate(f"document.getElementById('distance').value = {json.dumps(typed)}; "
                          "document.getElementById('convergence').requestSubmit();")
        devtools.wait_for(f"parallaxViewer.status && (() => {{ const d = parallaxViewer.status.convergence.distance; "
                          f"return {json.dumps(expected)} === null ? d === null : d !== null && Math.abs(d - {expected or 0}) < 0.4; }})()",
                          what=f"the status to show the plane at {typed}")
        # Pairs rectified before the change have gone by: the session holds at most five
        # (its queue and pool), so five more delivered ones were all rectified after it.
        wait_for_pairs(base, token, status_of(base, token)["pairs"] + 5)
        status = status_of(base, token)
        applied = status["convergence"]["distance"]
        picture = http(base, "/api/pair.png?mode=anaglyph", token=token)[1]
        anaglyph = cv2.imdecode(np.frombuffer(picture, np.uint8), cv2.IMREAD_COLOR)
        measured = disparity(anaglyph, region)
        shift = status["shift_px"]
        if expected is None:
            f_b = measured * 2.5
            print(f"convergence ∞: background disparity {measured:.2f} px (f·B/Z: 554·0.06/2.5 = 13.3 px)", flush=True)
            check(abs(measured - 13.3) < 1.0, f"plane at infinity: background disparity {measured:.2f} px, expected 13.3")
        else:
            # Disparity of the 2.5 m background with the plane at `applied`: f·B (1/2.5 − 1/applied),
            # within the whole-pixel step (each image moves by a whole pixel, so ≤ 1 px in all).
            predicted = 13.3 * (1 - 2.5 / applied)
            print(f"convergence {typed}: applied {applied:.4g} m, shift {shift:+.0f} px per side; background disparity "
                  f"{measured:.2f} px, predicted {predicted:.2f}", flush=True)
            check(abs(measured - predicted) < 1.0, f"plane at {typed}: background disparity {measured:.2f} px, predicted {predicted:.2f}")
            if expected == 2.5:
                check(abs(measured) <= 1.0, f"plane at 2.5 m: the background still has {measured:.2f} px of fringes")
    # The slider itself: dragged to its far end (infinity) through input and change events.
    devtools.evaluate("(() => { const s = document.getElementById('slider'); s.value = 1000; "
                      "s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); })()")
    devtools.wait_for("parallaxViewer.status && parallaxViewer.status.convergence.distance === null", what="the slider at infinity")
    # A distance the rig cannot take, typed into the form: the page shows the server's reason.
    devtools.evaluate("document.getElementById('distance').value = '0.01m'; document.getElementById('convergence').requestSubmit();")
    devtools.wait_for("document.getElementById('message').textContent.includes('nearer than the baseline')",
                      what="the page to show why 0.01m was refused")

    # The raw toggle: checked, the pages' pairs come unrectified (the header of each drawn
    # pair says so); unchecked, rectified again.
    devtools.evaluate("document.getElementById('raw').click()")
    devtools.wait_for("parallaxViewer.raw === true && parallaxViewer.lastRaw === true", what="a raw pair drawn after checking raw")
    devtools.evaluate("document.getElementById('raw').click()")
    devtools.wait_for("parallaxViewer.raw === false && parallaxViewer.lastRaw === false", what="a rectified pair drawn after unchecking raw")

    # Save this pair, twice: two new folders.
    for _ in range(2):
        devtools.evaluate("document.getElementById('save').click()")
    devtools.wait_for("document.getElementById('saved').textContent.startsWith('saved in')", what="the page to say where it saved")
    # The second save's answer may still be on its way: its folder is there when it is whole.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (len(os.listdir(f"{work}/saved")) >= 2 and all(
            len(os.listdir(f"{work}/saved/{f}")) >= 4 for f in os.listdir(f"{work}/saved"))):
        time.sleep(0.02)
    folders = sorted(os.listdir(f"{work}/saved"))
    check(len(folders) == 2, f"save this pair twice: folders {folders}")
    for folder in folders:
        files = sorted(os.listdir(f"{work}/saved/{folder}"))
        check(files == ["calibration.json", "left.png", "rectification.json", "right.png"], f"saved {folder}: {files}")


def latency(devtools, seconds):
    devtools.evaluate("document.querySelector('#modes button[data-mode=\"left\"]').click(); "
                      "parallaxViewer.latencies.length = 0; parallaxViewer.viewerLatencies.length = 0; parallaxViewer.stampErrors = 0;")
    time.sleep(seconds)
    result = devtools.evaluate("({latencies: parallaxViewer.latencies, viewer: parallaxViewer.viewerLatencies, "
                               "errors: parallaxViewer.stampErrors})")
    samples, viewer = np.array(result["latencies"]), np.array(result["viewer"])
    check(len(samples) > seconds * 20, f"latency: only {len(samples)} stamped pairs drawn in {seconds} s")
    check(result["errors"] == 0, f"latency: {result['errors']} drawn images carried another number than their pair's")
    p50, p99 = np.percentile(samples, 50), np.percentile(samples, 99)
    v50, v99 = np.percentile(viewer, 50), np.percentile(viewer, 99)
    print(f"latency at 30 fps over {len(samples)} pairs ({seconds} s), exposure to drawn on the page: p50 {p50:.1f} ms, "
          f"p99 {p99:.1f} ms; of which the viewer (session's hand-over to drawn): p50 {v50:.1f} ms, p99 {v99:.1f} ms "
          f"(one frame: 33.3 ms)", flush=True)
    # The design's bound: a pair waits at most for the one the page is still drawing (one in
    # flight, newest wins), so typically the viewer adds under one frame and at worst under two;
    # on 2 cores the browser, the rig's renderer and the encoder share the machine.
    frame = 1000 / 30
    check(v50 <= frame, f"latency: the viewer adds {v50:.1f} ms at p50, more than one frame at 30 fps")
    check(v99 <= 2 * frame, f"latency: the viewer adds {v99:.1f} ms at p99, more than two frames at 30 fps")


def ended(work):
    """The summary `parallax view` prints when it ends; fails unless both accounts are exact."""
    lines = [line for line in open(f"{work}/view.stderr") if line.startswith("view: ")]
    summary = lines[-1].strip() if lines else "(none)"
    check("every frame accounted for: true" in summary and "viewer account exact: true" in summary,
          f"parallax view's summary: {summary}")
    return summary


def soak(parallax, work, minutes):
    target = int(minutes * 60 * 30)
    viewer, base, token = start_viewer(parallax, work, ["--time-compressed", "--stamp-frame-numbers"])
    devtools = DevTools(work)
    try:
        devtools.open(f"{base}/?token={token}")
        devtools.wait_for("window.parallaxViewer && parallaxViewer.framesDrawn >= 10", what="the page drawing")
        time.sleep(5)
        start_rss, start = rss_kib(viewer.pid), status_of(base, token)
        start_heap = devtools.evaluate("performance.memory ? performance.memory.usedJSHeapSize : null")
        samples = []
        began = time.time()
        # About 2000 pairs a second here; an hour at 30 fps is 108 000 pairs.
        deadline = began + 120 + target / 300
        while True:
            time.sleep(2)
            s = status_of(base, token)
            if s["pairs"] >= target:
                break
            if time.time() > deadline:
                check(False, f"soak: only {s['pairs']} of {target} pairs after {time.time() - began:.0f} s")
                break
            samples.append((s["pairs"], rss_kib(viewer.pid), s["viewer"]["holding"], s["pairs_per_second"]))
            if len(samples) % 5 == 0:
                print(f"soak: {s['pairs']} pairs ({s['pairs'] / 30 / 60:.1f} simulated min), viewer RSS {samples[-1][1] / 1024:.1f} MiB, "
                  f"page drawn {devtools.evaluate('parallaxViewer.framesDrawn')}", flush=True)
        seconds = time.time() - began
        final = status_of(base, token)
        end_rss = rss_kib(viewer.pid)
        end_heap = devtools.evaluate("performance.memory ? performance.memory.usedJSHeapSize : null")
        drawn = devtools.evaluate("parallaxViewer.lastNumber")
        latest = final["viewer"]["latest"]
        lag = (latest - drawn) if latest is not None and drawn is not None else None
    finally:
        devtools.close()
        viewer.terminate()
        viewer.wait(timeout=30)
    simulated = final["pairs"] / 30
    v = final["viewer"]
    print(f"soak: {final['pairs']} pairs = {simulated / 60:.1f} simulated minutes at 30 fps in {seconds:.0f} s; viewer RSS "
          f"start {start_rss / 1024:.1f} MiB, end {end_rss / 1024:.1f} MiB (after {start['pairs']} and {final['pairs']} pairs); "
          f"page JS heap start {start_heap}, end {end_heap}; the page's last drawn pair {lag} before the newest (about one draw's "
          f"time at {final['pairs'] / seconds:.0f} pairs a second); viewer account: "
          f"{v['received']} received = {v['sent']} sent + {v['replaced']} replaced + {v['unwatched']} unwatched + {v['holding']} held "
          f"({v['exact']}); at the end: {ended(work)}", flush=True)
    check(v["exact"], "soak: the viewer's account is not exact")
    check(v["received"] == final["pairs"], "soak: the viewer did not receive every pair the session delivered")
    # Flat: within 10 % + 8 MiB of the start, room for glibc's per-thread arenas, which keep
    # what they freed (a pair's images and JPEGs, a few MiB, in each of the threads that made
    # them) and hand it back only when their top is free. What that lets through depends on
    # the run's length: anything kept per pair is caught above (10 % + 8 MiB) / pairs, printed
    # here: a hundred-odd bytes a pair over an hour's 108 000 pairs, several hundred over
    # CI's 10 minutes (18 000 pairs). The growth's slope over the samples is printed beside.
    allowed = start_rss * 1.10 + 8 * 1024
    pairs_run = max(1, final["pairs"] - start["pairs"])
    if len(samples) >= 4:
        xs, ys = np.array([p for p, *_ in samples], float), np.array([r for _, r, *_ in samples], float)
        slope = float(np.polyfit(xs, ys, 1)[0]) * 1024
    else:
        slope = float("nan")
    print(f"soak: resident memory {start_rss} → {end_rss} KiB over {pairs_run} pairs (slope {slope:.1f} B a pair); "
          f"the bound catches anything kept above {(allowed - start_rss) * 1024 / pairs_run:.0f} B a pair in this run", flush=True)
    check(end_rss <= allowed, f"soak: resident memory grew from {start_rss} KiB to {end_rss} KiB")


def main():
    parallax, work = sys.argv[1], sys.argv[2]
    soak_minutes = float(sys.argv[sys.argv.index("--soak") + 1]) if "--soak" in sys.argv else None
    screenshot_path = sys.argv[sys.argv.index("--screenshot") + 1] if "--screenshot" in sys.argv else None
    os.makedirs(work, exist_ok=True)
    if soak_minutes:
        soak(parallax, work, soak_minutes)
    else:
        viewer, base, token = start_viewer(parallax, work, ["--stamp-frame-numbers"])
        devtools = None
        try:
            access_and_bad_requests(base, token)
            slow_tab(base, token)
            devtools = DevTools(work)
            devtools.open(f"{base}/?token={token}")
            page_checks(devtools, base, token, work, screenshot_path)
            latency(devtools, 20)
            status = status_of(base, token)
            check(status["viewer"]["exact"], "the viewer's account is not exact")
            check(status["mismatched_pairs"] == 0, "a pair was not taken at the same moment")
        finally:
            if devtools:
                devtools.close()
            # Clients that hold on (an idle keep-alive, a half-sent request, an open WebSocket)
            # cannot keep the viewer from ending within 2 s of SIGTERM.
            host, port = base[len("http://"):].rsplit(":", 1)
            holders = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
            holders[1].sendall(b"GET /api/status?token=" + token.encode() + b" HTTP/1.1\r\nHost: x\r\n")
            holders[2].sendall(("GET /ws?token=" + token + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
            time.sleep(0.5)
            began = time.monotonic()
            viewer.terminate()
            try:
                viewer.wait(timeout=30)
            finally:
                for holder in holders:
                    holder.close()
            took = time.monotonic() - began
            check(took < 2, f"parallax view took {took:.1f} s to end on SIGTERM with three clients holding connections")
            print(f"SIGTERM with an idle, a half-sent and a WebSocket connection open: ended in {took * 1000:.0f} ms", flush=True)
        check(viewer.returncode == 0, f"parallax view exited with status {viewer.returncode} on SIGTERM")
        summary = ended(work)
        print(f"session: {status['pairs']} pairs, mismatched {status['mismatched_pairs']}; at the end: {summary}", flush=True)
    if failures:
        print(f"test-browser: {len(failures)} failures (above)")
        sys.exit(1)
    print("test-browser: passed")


main()
