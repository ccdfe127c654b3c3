/// The page `parallax view` serves: HTML, CSS and script in one document, embedded in the
/// binary (no CDN, works offline).
///
/// The script reads the token from its own URL and sends it with every request. It draws
/// each pair it receives on the WebSocket in the next animation frame, then asks for the
/// next one (`next`): a hidden tab draws nothing, so it asks for nothing. With
/// `--stamp-frame-numbers` it reads the pair's number back from the drawn image's bar code
/// (``FrameNumberStamp``) and keeps the latency from the frame's exposure to the draw in
/// `window.parallaxViewer.latencies` (what `make test-browser` reads).
enum ViewerPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parallax view</title>
<style>
  :root { color-scheme: dark; --accent: #4fc3f7; --bad: #ff8a65; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: #15171a; color: #e6e6e6; }
  header { display: flex; align-items: center; gap: 12px; padding: 8px 14px; background: #1f2227; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; }
  #connection { padding: 2px 8px; border-radius: 10px; background: #333; font-size: 12px; }
  #connection.live { background: #1b5e20; }
  main { display: grid; grid-template-columns: minmax(0, 1fr) 300px; gap: 12px; padding: 12px; }
  #stage { background: #000; display: flex; justify-content: center; align-items: center; min-height: 240px; }
  canvas { max-width: 100%; height: auto; image-rendering: auto; }
  .controls { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 10px; }
  .modes button { background: #2a2e35; color: inherit; border: 1px solid #444; padding: 4px 10px; cursor: pointer; }
  .modes button.on { background: var(--accent); color: #000; border-color: var(--accent); }
  #convergence { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-bottom: 10px; }
  #slider { width: 320px; }
  #distance { width: 80px; }
  aside section { background: #1f2227; padding: 8px 10px; margin-bottom: 10px; border-radius: 4px; }
  aside h2 { font-size: 13px; margin: 0 0 6px; color: #aaa; font-weight: 600; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 0; font-size: 12px; }
  dt { color: #999; } dd { margin: 0; font-variant-numeric: tabular-nums; }
  #events { list-style: none; margin: 0; padding: 0; font-size: 12px; max-height: 200px; overflow-y: auto; }
  #message { color: var(--bad); min-height: 1.4em; }
  #saved { font-size: 12px; color: #9ccc65; }
</style>
</head>
<body>
<header><h1>Parallax view</h1><span id="connection">connecting…</span><span id="format"></span></header>
<main>
  <div>
    <div class="controls">
      <span class="modes" id="modes">
        <button data-mode="side-by-side" class="on">side by side</button>
        <button data-mode="anaglyph">anaglyph</button>
        <button data-mode="blend">blend</button>
        <button data-mode="left">left</button>
        <button data-mode="right">right</button>
      </span>
      <label><input type="checkbox" id="raw"> raw (not rectified)</label>
      <button id="save">save this pair</button>
      <span id="saved"></span>
    </div>
    <form id="convergence">
      <label for="slider">zero parallax</label>
      <input type="range" id="slider" min="0" max="1000" value="1000">
      <input id="distance" placeholder="1.2m" autocomplete="off">
      <button type="submit">set</button>
      <span id="plane">∞</span>
    </form>
    <div id="message"></div>
    <div id="stage"><canvas id="view" width="640" height="480"></canvas></div>
  </div>
  <aside>
    <section><h2>Pairs</h2><dl id="figures"></dl></section>
    <section><h2>Drops and losses</h2><dl id="drops"></dl></section>
    <section><h2>Events</h2><ul id="events"></ul></section>
  </aside>
</main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const viewer = window.parallaxViewer = {
  mode: "side-by-side", raw: false, framesDrawn: 0, lastNumber: null, lastRaw: null, latencies: [], viewerLatencies: [], stampErrors: 0,
  status: null, errors: [],
};
function api(path, options) {
  const separator = path.includes("?") ? "&" : "?";
  return fetch(path + separator + "token=" + encodeURIComponent(token), options);
}
function say(text) { $("message").textContent = text || ""; if (text) viewer.errors.push(text); }

// ---- Drawing ---------------------------------------------------------------
const canvas = $("view"), context = canvas.getContext("2d");
const scratch = document.createElement("canvas"), scratchContext = scratch.getContext("2d", { willReadFrequently: true });
let pending = null, current = null, socket = null;

function tinted(bitmap, colour) {
  // The image's luma times one colour (red, or cyan): an anaglyph's half.
  const c = document.createElement("canvas");
  c.width = bitmap.width; c.height = bitmap.height;
  const x = c.getContext("2d");
  x.filter = "grayscale(1)"; x.drawImage(bitmap, 0, 0); x.filter = "none";
  x.globalCompositeOperation = "multiply"; x.fillStyle = colour; x.fillRect(0, 0, c.width, c.height);
  return c;
}

function render(pair) {
  const w = pair.left.width, h = pair.left.height, mode = viewer.mode;
  const width = mode === "side-by-side" ? 2 * w : w;
  if (canvas.width !== width || canvas.height !== h) { canvas.width = width; canvas.height = h; }
  context.globalAlpha = 1; context.globalCompositeOperation = "source-over";
  if (mode === "left" || mode === "right") {
    context.drawImage(mode === "left" ? pair.left : pair.right, 0, 0);
  } else if (mode === "side-by-side") {
    context.drawImage(pair.left, 0, 0); context.drawImage(pair.right, w, 0);
    context.fillStyle = "rgba(0, 255, 0, 0.45)";
    for (let y = 16; y < h; y += 32) context.fillRect(0, y, width, 1);
  } else if (mode === "anaglyph") {
    context.drawImage(tinted(pair.left, "#ff0000"), 0, 0);
    context.globalCompositeOperation = "lighter";
    context.drawImage(tinted(pair.right, "#00ffff"), 0, 0);
  } else {
    context.drawImage(pair.left, 0, 0); context.globalAlpha = 0.5; context.drawImage(pair.right, 0, 0);
  }
  context.globalAlpha = 1; context.globalCompositeOperation = "source-over";
}

// The bar code FrameNumberStamp draws: 22 cells across the top 16 rows, white, 20 bits, black.
function readStamp(bitmap) {
  const cells = 22, bits = 20, cellWidth = Math.floor(bitmap.width / cells);
  scratch.width = bitmap.width; scratch.height = 16;
  scratchContext.drawImage(bitmap, 0, 0, bitmap.width, 16, 0, 0, bitmap.width, 16);
  const row = scratchContext.getImageData(0, 8, bitmap.width, 1).data;
  const sample = (cell) => { const i = 4 * (cell * cellWidth + (cellWidth >> 1)); return (row[i] + row[i + 1] + row[i + 2]) / 3; };
  const white = sample(0), black = sample(cells - 1);
  if (white - black < 64) return null;
  let value = 0;
  for (let cell = 1; cell <= bits; cell++) value = value * 2 + (sample(cell) > (white + black) / 2 ? 1 : 0);
  return value;
}

function draw() {
  if (!pending) return;
  if (current) { current.left.close(); current.right.close(); }
  current = pending; pending = null;
  render(current);
  const header = current.header;
  viewer.framesDrawn += 1; viewer.lastNumber = header.number; viewer.lastRaw = header.raw;
  if (header.stamped) {
    const read = readStamp(current.left);
    if (read === header.number % (1 << 20)) {
      const now = performance.timeOrigin + performance.now();
      viewer.latencies.push(now - header.exposure_ms);
      viewer.viewerLatencies.push(now - header.delivered_ms);
      if (viewer.latencies.length > 20000) { viewer.latencies.shift(); viewer.viewerLatencies.shift(); }
    } else {
      viewer.stampErrors += 1;
    }
  }
  if (socket && socket.readyState === WebSocket.OPEN) socket.send("next");
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(scheme + "://" + location.host + "/ws?token=" + encodeURIComponent(token));
  socket.binaryType = "arraybuffer";
  socket.onopen = () => { $("connection").textContent = "live"; $("connection").className = "live"; socket.send(viewer.raw ? "raw" : "rectified"); };
  socket.onclose = () => { $("connection").textContent = "disconnected"; $("connection").className = ""; setTimeout(connect, 1000); };
  socket.onmessage = async (event) => {
    if (typeof event.data === "string") { const m = JSON.parse(event.data); say(m.error); if (m.error) { $("raw").checked = viewer.raw = false; } socket.send("next"); return; }
    const bytes = new Uint8Array(event.data), view = new DataView(event.data);
    const length = view.getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
    const leftStart = 4 + length, rightStart = leftStart + header.left_bytes;
    const [left, right] = await Promise.all([
      createImageBitmap(new Blob([bytes.subarray(leftStart, rightStart)], { type: "image/jpeg" })),
      createImageBitmap(new Blob([bytes.subarray(rightStart, rightStart + header.right_bytes)], { type: "image/jpeg" })),
    ]);
    if (pending) { pending.left.close(); pending.right.close(); }
    pending = { header, left, right };
    requestAnimationFrame(draw);
  };
}

// ---- Controls --------------------------------------------------------------
function setMode(mode) {
  viewer.mode = mode;
  for (const b of document.querySelectorAll("#modes button")) b.classList.toggle("on", b.dataset.mode === mode);
  if (current) render(current);
}
viewer.setMode = setMode;
$("modes").addEventListener("click", (e) => { if (e.target.dataset.mode) setMode(e.target.dataset.mode); });
$("raw").addEventListener("change", () => {
  viewer.raw = $("raw").checked;
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(viewer.raw ? "raw" : "rectified");
});

let range = null, dragging = false, lastSent = 0;
function sliderDistance(value) {
  if (!range || Number(value) >= 1000) return null;
  return range.nearest * Math.pow(range.farthest / range.nearest, Number(value) / 1000);
}
function sliderValue(distance) {
  if (!range || distance === null) return 1000;
  const v = 1000 * Math.log(distance / range.nearest) / Math.log(range.farthest / range.nearest);
  return Math.max(0, Math.min(999, Math.round(v)));
}
async function setConvergence(distance) {
  const response = await api("/api/convergence", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ distance }),
  });
  const answer = await response.json();
  if (!response.ok) { say(answer.error); return null; }
  say(""); showPlane(answer.distance, answer.shift_px, answer.unit);
  return answer;
}
viewer.setConvergence = setConvergence;
function showPlane(distance, shift, unit) {
  $("plane").textContent = distance === null ? "∞ (no shift)"
    : `${distance.toPrecision(4)} ${unit || "(calibration units)"} · shift ${shift >= 0 ? "+" : ""}${shift.toFixed(0)} px per side`;
}
$("slider").addEventListener("input", () => {
  dragging = true;
  const now = performance.now();
  if (now - lastSent > 100) { lastSent = now; const d = sliderDistance($("slider").value); setConvergence(d === null ? null : String(d)); }
});
$("slider").addEventListener("change", () => {
  dragging = false; const d = sliderDistance($("slider").value); setConvergence(d === null ? null : String(d));
});
$("convergence").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("distance").value.trim();
  const answer = await setConvergence(text === "" || text === "∞" ? null : text);
  if (answer) $("slider").value = sliderValue(answer.distance);
});
$("save").addEventListener("click", async () => {
  const response = await api("/api/save?raw=" + (viewer.raw ? 1 : 0), { method: "POST" });
  const answer = await response.json();
  if (response.ok) { $("saved").textContent = "saved in " + answer.folder; say(""); } else say(answer.error);
});

// ---- Figures ---------------------------------------------------------------
function fill(list, rows) {
  list.replaceChildren(...rows.flatMap(([k, v]) => { const t = document.createElement("dt"), d = document.createElement("dd"); t.textContent = k; d.textContent = v; return [t, d]; }));
}
const byReason = (o) => Object.entries(o || {}).map(([k, v]) => `${v} ${k}`).join(", ") || "none";
function percentile(values, p) {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}
async function poll() {
  try {
    const response = await api("/api/status");
    if (!response.ok) { say((await response.json()).error); return; }
    const s = viewer.status = await response.json();
    $("format").textContent = (s.format || "") + (s.images ? " → " + s.images : "");
    const ms = (ns) => (ns / 1e6).toFixed(2) + " ms";
    const latency = percentile(viewer.latencies, 0.99);
    fill($("figures"), [
      ["pairs", s.pairs], ["pairs/s", s.pairs_per_second.toFixed(1)], ["frames/s", s.frames_per_second === null ? "–" : s.frames_per_second.toFixed(1)],
      ["skew p50 / p99", ms(s.skew_ns_p50) + " / " + ms(s.skew_ns_p99)],
      ["rectify p50", s.rectify_ms_p50 === null ? "–" : s.rectify_ms_p50 + " ms"],
      ["pressure", s.pressure], ["hardware cost", s.hardware_cost ? s.hardware_cost.cost.toFixed(3) : "–"],
      ["clock offset", s.clock ? s.clock.offset_ms.toFixed(3) + " ms" : "–"],
      ["clock drift", s.clock && s.clock.drift_ppm !== null ? s.clock.drift_ppm.toFixed(1) + " ppm" : "–"],
      ["sides on", Object.entries(s.sides_enabled).filter(([, on]) => on).map(([k]) => k).join(", ") || "none"],
      ["page latency p99", latency === null ? "–" : latency.toFixed(1) + " ms"],
      ["viewer", `${s.viewer.sent} sent, ${s.viewer.replaced} replaced, ${s.viewer.unwatched} unwatched`],
    ]);
    fill($("drops"), [
      ["left dropped", byReason(s.dropped.left)], ["right dropped", byReason(s.dropped.right)],
      ["left lost by camera", byReason(s.lost_by_camera.left)], ["right lost by camera", byReason(s.lost_by_camera.right)],
    ]);
    $("events").replaceChildren(...s.events.slice(-30).reverse().map((e) => {
      const li = document.createElement("li");
      li.textContent = `${e.at_s.toFixed(2)} s  ${e.type}${e.side ? " " + e.side : ""}${e.node ? " (" + e.node + ")" : ""}`;
      return li;
    }));
    if (s.convergence.nearest !== undefined) range = { nearest: s.convergence.nearest, farthest: s.convergence.farthest };
    $("slider").disabled = $("distance").disabled = !s.rectified;
    if (!dragging && document.activeElement !== $("distance")) {
      $("slider").value = sliderValue(s.convergence.distance);
      showPlane(s.convergence.distance, s.shift_px || 0, s.convergence.unit);
    }
  } catch (error) {
    say("the viewer is not answering: " + error);
  }
}
setInterval(poll, 500);
poll();
connect();
</script>
</body>
</html>
"""#
}
