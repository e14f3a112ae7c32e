"""How the widget's frontend copes with large traces, in headless Chromium.

    python bench/frontend.py [--kernels N] [--python-only] [TRACE ...]

Cases: a synthetic trace of N kernels (default 1,000,000; tests/synthetic.py, which also gives
each kernel its launch call and op, so about 3N events), which crosses as an overview with
detail fetched on demand; the same generator at about 1,000,000 events with the detail
threshold lifted, so every event is in the page at once (the renderer's worst case); and each
TRACE given (by default the largest shared Kineto trace). Per case the widget's state is built
in Python (make_widget, as a notebook does), then served to a static page that runs the real
bundle (widget.js) with a stand-in for anywidget's model; the model's messages go to the
widget's own request handler in this process, so detail-on-demand windows are real round
trips. Prints:
  bytes/event   size of the `events` table / the events it holds (target <= 16), and for
                windows fetched on demand, their bytes / their events
  first paint   from the data being in the page to the timeline's first full paint (<= 1.5 s)
  frame p50/p95 the timeline's own paint time per frame (data-draw-ms) over a scripted
                sequence of 100 zoom and pan key presses (W/S/A/D, Ctrl+wheel) (p95 <= 16 ms);
                also the latency from each key press to the end of the frame that shows it
  prepared      make_widget's time (the report already made), best of 3, per trace event
                (target <= 0.15 us), against a reference in the same run: building one
                pandas frame of the columns the widget reads (start, duration, name, rank,
                thread or stream) from the Trace's tables
With --python-only, only the Python side is measured (no Chromium needed).
Not a test: it prints, and always exits 0. Needs Chromium (/usr/bin/chromium or
GPUPROFILE_CHROMIUM) and the built bundle (make setup).
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import base64
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
STATIC = REPO / "python" / "gpuprofile" / "widget" / "static"
SHARED_KINETO = REPO.parent / "shared" / "traces" / "kineto"
CHROMIUM = Path(os.environ.get("GPUPROFILE_CHROMIUM", "/usr/bin/chromium"))
ORIGIN = "http://gpuprofile-bench.invalid"
TARGET_BYTES_PER_EVENT = 16
TARGET_FIRST_PAINT_S = 1.5
TARGET_P95_FRAME_MS = 16
TARGET_PREPARE_US = 0.15
STEPS = 100

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/widget.css"></head>
<body style="margin:0;width:1400px"><div id="slot"></div>
<script type="module">
import widget from "/widget.js";
window.benchStart = async function () {
  const names = await (await fetch("/state/names.json")).json();
  const state = {};
  for (const name of names.json) state[name] = await (await fetch(`/state/${name}`)).json();
  for (const name of names.bytes) {
    state[name] = new DataView(await (await fetch(`/state/${name}`)).arrayBuffer());
  }
  const listeners = new Map();
  const model = {
    get: (key) => state[key],
    set: (key, value) => { state[key] = value; },
    save_changes() {},
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, []);
      listeners.get(event).push(fn);
    },
    off(event, fn) { listeners.set(event, (listeners.get(event) || []).filter((f) => f !== fn)); },
    send(content) {
      window.pyHandle(JSON.stringify(content)).then(([reply, buffers]) => {
        const views = buffers.map((b) => {
          const bytes = Uint8Array.from(atob(b), (c) => c.charCodeAt(0));
          return new DataView(bytes.buffer);
        });
        for (const fn of listeners.get("msg:custom") || []) fn(JSON.parse(reply), views);
      });
    },
  };
  const el = document.getElementById("slot");
  const t0 = performance.now();
  widget.render({ model, el });
  await new Promise((resolve) => {
    const poll = () => {
      const root = el.querySelector(".gpuprofile");
      if (root && root.dataset.gpuprofile === "ready") resolve();
      else requestAnimationFrame(poll);
    };
    poll();
  });
  return performance.now() - t0;
};

// The timeline paints in the first animation frame after an input; this resolves after it.
const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

window.benchSteps = async function (steps) {
  const timeline = document.querySelector(".gp-timeline");
  const target = timeline.querySelector("[tabindex]") || timeline;
  target.focus();
  const canvas = timeline.querySelector("canvas");
  const box = canvas.getBoundingClientRect();
  const draws = [];
  const latencies = [];
  for (let i = 0; i < steps; i++) {
    const kind = i % 10;
    const t0 = performance.now();
    if (kind === 9) {
      canvas.dispatchEvent(new WheelEvent("wheel", {
        deltaY: i % 20 < 10 ? -240 : 240, ctrlKey: true, bubbles: true, cancelable: true,
        clientX: box.left + box.width * 0.6, clientY: box.top + 40,
      }));
    } else {
      // Zoom in for most of the sequence, pan both ways, zoom back out towards the end.
      const key = i < 50 ? ["w", "w", "d", "w", "a", "d", "w", "s", "d"][kind]
                         : ["s", "d", "s", "a", "w", "s", "d", "a", "s"][kind];
      target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true }));
      target.dispatchEvent(new KeyboardEvent("keyup", { key, bubbles: true, cancelable: true }));
    }
    await frame();
    latencies.push(performance.now() - t0);
    draws.push(Number(timeline.dataset.drawMs));
    // A user pauses now and then: time for detail windows to be asked for and drawn.
    if (i % 10 === 9) await sleep(250);
  }
  // Let detail windows asked for during the sequence arrive.
  await new Promise((r) => setTimeout(r, 500));
  return { draws, latencies, view: [timeline.dataset.viewStartNs, timeline.dataset.viewEndNs] };
};
</script></body></html>
"""


def widget_state(widget: Any) -> tuple[dict[str, Any], dict[str, bytes]]:
    json_state: dict[str, Any] = {}
    byte_state: dict[str, bytes] = {}
    for name, value in widget.get_state().items():
        if name.startswith("_"):
            continue
        if isinstance(value, bytes | bytearray | memoryview):
            byte_state[name] = bytes(value)
        else:
            json_state[name] = value
    return json_state, byte_state


def table_rows(data: bytes) -> int:
    if not data:
        return 0
    from gpuprofile.widget.encoding import read_header

    return int(read_header(data)["n"])


def prepare(profile: Any, *, all_in_page: bool = False) -> tuple[Any, float]:
    """The widget (state built from the profile's report and trace) and make_widget's best
    time of 3; the report and text are made before, once, as a notebook has them."""
    from gpuprofile.widget.widget import make_widget

    report, text = profile.typed_report(), profile.text()
    # All in the page: no overview, every event crosses at once (the renderer's worst case).
    threshold = {"detail_threshold": 10**12} if all_in_page else {}
    times = []
    for _ in range(3):
        started = time.perf_counter()
        widget = make_widget(report, profile.trace, profile.analysis, text=text, **threshold)
        times.append(time.perf_counter() - started)
    return widget, min(times)


def reference_frame_s(trace: Any) -> float:
    """Best of 3: one pandas frame of the timeline tables' columns the widget reads."""
    import numpy as np
    import pandas as pd

    from gpuprofile.widget.timeline import CPU_KINDS, KIND_TABLES

    times = []
    for _ in range(3):
        started = time.perf_counter()
        parts = []
        for kind, name in enumerate(KIND_TABLES):
            table = trace.table(name)
            cpu = kind in CPU_KINDS
            columns = ["rank", "pid" if cpu else "device", "tid" if cpu else "stream"]
            columns += ["start_ns", "dur_ns", "name"]
            part = {c: table[c].to_numpy() for c in columns[:-1]}
            part["name"] = np.asarray(table["name"].cat.codes)
            parts.append(
                pd.DataFrame(
                    dict(zip(("rank", "where", "key", "s", "d", "n"), part.values(), strict=True))
                )
            )
        pd.concat(parts, ignore_index=True)
        times.append(time.perf_counter() - started)
    return min(times)


def point_members_s(profile: Any) -> float:
    """Best of 3: the analysis's point_members, which make_widget calls for the roofline
    marks (an analysis cost inside the widget's time)."""
    from gpuprofile.analyses.roofline import point_members

    points = (profile.report().get("roofline") or {}).get("points") or []
    keys = {str(p.get("key")) for p in points}
    if not keys:
        return 0.0
    analysis = profile.analysis
    times = []
    for _ in range(3):
        started = time.perf_counter()
        point_members(analysis.roofline_members, keys)
        times.append(time.perf_counter() - started)
    return min(times)


def print_prepared(label: str, profile: Any, widget: Any, prepare_s: float) -> None:
    total = max(int(widget.total_events), 1)
    reference_s = reference_frame_s(profile.trace)
    members_s = point_members_s(profile)
    print(f"\n{label}: {total:,} events")
    print(
        f"  widget data prepared in Python: {prepare_s:.3f} s = {prepare_s / total * 1e6:.3f} "
        f"us/event (target <= {TARGET_PREPARE_US}); reference (one pandas frame of the "
        f"columns read): {reference_s:.3f} s = {reference_s / total * 1e6:.3f} us/event; "
        f"ratio {prepare_s / max(reference_s, 1e-9):.1f}x"
    )
    own_s = max(prepare_s - members_s, 0.0)
    print(
        f"  of which the analysis's point_members (roofline marks): {members_s:.3f} s; the "
        f"widget's own: {own_s:.3f} s = {own_s / total * 1e6:.3f} us/event, ratio "
        f"{own_s / max(reference_s, 1e-9):.1f}x"
    )


def run_case(browser: Any, label: str, profile: Any, *, all_in_page: bool = False) -> None:
    from gpuprofile.widget.requests import handle

    widget, prepare_s = prepare(profile, all_in_page=all_in_page)
    json_state, byte_state = widget_state(widget)
    events = byte_state["events"]
    total = int(json_state["total_events"])
    held = table_rows(events)
    fetched = {"bytes": 0, "rows": 0, "requests": 0}

    def py_handle(content: str) -> list[Any]:
        reply, buffers = handle(widget._source, json.loads(content))
        if reply.get("type") == "window" and buffers:
            fetched["bytes"] += len(buffers[0])
            fetched["rows"] += table_rows(bytes(buffers[0]))
            fetched["requests"] += 1
        encoded = [base64.b64encode(bytes(b)).decode() for b in buffers]
        return [json.dumps(reply), encoded]

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    page = context.new_page()
    page.expose_function("pyHandle", py_handle)
    names = {"json": sorted(json_state), "bytes": sorted(byte_state)}

    def serve(route: Any) -> None:
        path = route.request.url[len(ORIGIN) :]
        if path in ("/", "/index.html"):
            route.fulfill(body=PAGE, content_type="text/html")
        elif path in ("/widget.js", "/widget.css"):
            kind = "text/javascript" if path.endswith(".js") else "text/css"
            route.fulfill(body=(STATIC / path[1:]).read_bytes(), content_type=kind)
        elif path == "/state/names.json":
            route.fulfill(body=json.dumps(names), content_type="application/json")
        elif path.startswith("/state/"):
            name = path[len("/state/") :]
            if name in byte_state:
                route.fulfill(body=byte_state[name], content_type="application/octet-stream")
            else:
                route.fulfill(body=json.dumps(json_state[name]), content_type="application/json")
        else:
            route.fulfill(status=404, body="")

    page.route(f"{ORIGIN}/**", serve)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(f"{ORIGIN}/")
    page.wait_for_function("() => typeof window.benchStart === 'function'")
    first_paint_ms = page.evaluate("() => window.benchStart()")
    result = page.evaluate(f"() => window.benchSteps({STEPS})")
    context.close()

    draws = sorted(result["draws"])
    latencies = sorted(result["latencies"])
    print_prepared(label, profile, widget, prepare_s)
    print(f"  {'complete' if json_state['complete'] else 'overview'}")
    print(
        f"  events table: {len(events):,} B for {held:,} rows = {len(events) / max(held, 1):.1f} "
        f"B/row; {len(events) / total:.2f} B per trace event (target <= {TARGET_BYTES_PER_EVENT})"
    )
    print(f"  whole widget state: {sum(map(len, byte_state.values())) / 2**20:.2f} MiB of tables")
    if fetched["requests"]:
        print(
            f"  detail windows: {fetched['requests']} fetched, {fetched['rows']:,} rows, "
            f"{fetched['bytes'] / max(fetched['rows'], 1):.1f} B/row"
        )
    print(
        f"  first paint: {first_paint_ms / 1000:.3f} s after the data arrived "
        f"(target <= {TARGET_FIRST_PAINT_S})"
    )
    print(
        f"  frame (paint) over {STEPS} zoom/pan steps: p50 {percentile(draws, 50):.1f} ms, "
        f"p95 {percentile(draws, 95):.1f} ms, max {draws[-1]:.1f} ms "
        f"(target p95 <= {TARGET_P95_FRAME_MS})"
    )
    print(
        f"  key press to end of its frame: p50 {percentile(latencies, 50):.1f} ms, "
        f"p95 {percentile(latencies, 95):.1f} ms"
    )
    if errors:
        print(f"  PAGE ERRORS: {errors[:3]}")


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return statistics.quantiles(sorted_values, n=100, method="inclusive")[int(q) - 1]


def largest_shared_trace() -> list[Path]:
    if not SHARED_KINETO.is_dir():
        return []
    return [max(SHARED_KINETO.glob("*.json*"), key=lambda p: p.stat().st_size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--python-only", action="store_true", help="no Chromium: make_widget")
    args = parser.parse_args()
    if not args.python_only and not CHROMIUM.exists():
        print(f"no Chromium at {CHROMIUM}: nothing measured")
        return
    from playwright.sync_api import sync_playwright

    import gpuprofile
    from gpuprofile.profiles import Profile
    from helpers.synthetic import synthetic_trace

    cases: list[tuple[str, Any, bool]] = []
    if args.kernels:
        synthetic = Profile(synthetic_trace(args.kernels))
        cases.append((f"synthetic, {args.kernels:,} kernels", synthetic, False))
        million = Profile(synthetic_trace(333_333))
        cases.append(("synthetic, ~1,000,000 events, all in the page", million, True))
    for path in args.traces or largest_shared_trace():
        cases.append((path.name, gpuprofile.load(path), False))
    if args.python_only:
        for label, profile, all_in_page in cases:
            widget, prepare_s = prepare(profile, all_in_page=all_in_page)
            print_prepared(label, profile, widget, prepare_s)
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        try:
            for label, profile, all_in_page in cases:
                run_case(browser, label, profile, all_in_page=all_in_page)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
