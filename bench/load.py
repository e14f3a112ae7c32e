"""How long gpuprofile takes to read a trace and build its report, against orjson and HTA.

    python bench/load.py FILE_OR_RUN_DIR... [--no-hta] [--repeat N]

Per trace (a .json/.json.gz file, or a directory of per-rank files):
  ours      best of N: gpuprofile.load(path).report()  (reads, gunzips, decodes, analyses)
  load      best of N: gpuprofile.load(path).trace  (reading alone); +analysis = ours/load - 1
  orjson    best of N: orjson.loads of the already-decompressed bytes (parsing alone)
  orjson+gz best of N: read the file, gunzip, orjson.loads (what ours also has to do)
  HTA       best of 1: TraceAnalysis(trace_dir=...) + get_temporal_breakdown(visualize=False),
            with HTA's defaults, on a temporary directory holding symlinks to the trace
Targets: ours/orjson <= 2.0, HTA/ours >= 3, +analysis <= 50%. torch is imported before timing
(FLOP formulas come from torch.utils.flop_counter; where gpuprofile runs, torch is loaded).
Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

# Before numpy/torch/pandas are imported anywhere: one thread, like the test suite.
os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import gc
import gzip
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

TARGET_OURS_OVER_ORJSON = 2.0
TARGET_HTA_OVER_OURS = 3.0
TARGET_ANALYSIS_SHARE = 0.5
TRACE_SUFFIXES = (".json", ".json.gz")


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """Fastest of `repeat` runs, in seconds; garbage from one run is collected before the next."""
    times = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def trace_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    return [path]


def read_decompressed(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def run_hta(path: Path) -> float | str:
    """Seconds for HTA's load + temporal breakdown, or why it failed."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        return "not installed"
    logging.getLogger("hta").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as directory:
        for f in trace_files(path):
            (Path(directory) / f.name).symlink_to(f.resolve())
        gc.collect()
        started = time.perf_counter()
        try:
            TraceAnalysis(trace_dir=directory).get_temporal_breakdown(visualize=False)
        except Exception as exc:  # HTA fails on some real traces; say so and go on
            return f"failed ({type(exc).__name__})"
        return time.perf_counter() - started


def measure(path: Path, repeat: int, hta: bool) -> dict[str, Any]:
    import gpuprofile

    files = trace_files(path)
    payloads = [read_decompressed(f) for f in files]
    events = 0
    for payload in payloads:
        doc = orjson.loads(payload)
        events += len(doc["traceEvents"] if isinstance(doc, dict) else doc)
        del doc

    def ours() -> None:
        gpuprofile.load(path).report()

    def load_only() -> None:
        gpuprofile.load(path)

    def bare_orjson() -> None:
        for payload in payloads:
            orjson.loads(payload)

    def orjson_with_gunzip() -> None:
        for f in files:
            orjson.loads(read_decompressed(f))

    row: dict[str, Any] = {
        "file": path.name,
        "mb": sum(len(p) for p in payloads) / 1e6,
        "events": events,
        "ours": best_of(repeat, ours),
        "load": best_of(repeat, load_only),
        "orjson": best_of(repeat, bare_orjson),
        "orjson_gz": best_of(repeat, orjson_with_gunzip),
    }
    row["hta"] = run_hta(path) if hta else None
    return row


def print_table(rows: list[dict[str, Any]], hta: bool) -> None:
    def mark(ok: bool) -> str:
        return "ok" if ok else "MISS"

    header = (
        f"{'file':<58} {'MB':>7} {'events':>8} {'ours s':>8} {'orjson s':>9} "
        f"{'ours/orj':>9} {'':4} {'orj+gz s':>9} {'ours/orj+gz':>11} {'load s':>7} "
        f"{'+analysis':>9} {'':4}"
    )
    if hta:
        header += f" {'HTA s':>8} {'HTA/ours':>9} {'':4}"
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = r["ours"] / r["orjson"]
        analysis = r["ours"] / r["load"] - 1
        line = (
            f"{r['file'][:58]:<58} {r['mb']:>7.1f} {r['events']:>8} {r['ours']:>8.3f} "
            f"{r['orjson']:>9.3f} {ratio:>9.2f} {mark(ratio <= TARGET_OURS_OVER_ORJSON):4} "
            f"{r['orjson_gz']:>9.3f} {r['ours'] / r['orjson_gz']:>11.2f} {r['load']:>7.3f} "
            f"{analysis:>8.0%} {mark(analysis <= TARGET_ANALYSIS_SHARE):4}"
        )
        if hta:
            h = r["hta"]
            if isinstance(h, float):
                speedup = h / r["ours"]
                line += f" {h:>8.2f} {speedup:>9.1f} {mark(speedup >= TARGET_HTA_OVER_OURS):4}"
            else:
                line += f" {h!s:>19}"
        print(line)
    print(
        f"targets: ours/orjson <= {TARGET_OURS_OVER_ORJSON}, "
        f"+analysis <= {TARGET_ANALYSIS_SHARE:.0%}"
        + (f", HTA/ours >= {TARGET_HTA_OVER_OURS}" if hta else "")
        + "  (orjson: parse of decompressed bytes; orj+gz: read + gunzip + parse)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="trace files or run directories")
    parser.add_argument("--no-hta", action="store_true", help="skip HolisticTraceAnalysis")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    args = parser.parse_args(argv)
    import torch  # noqa: F401  (once per process, as in a notebook; not part of any timing)

    rows = []
    for path in args.paths:
        if not path.exists():
            print(f"skipping {path}: no such file or directory", file=sys.stderr)
            continue
        rows.append(measure(path, args.repeat, hta=not args.no_hta))
        print(f"  measured {path.name}", file=sys.stderr, flush=True)
    if rows:
        print_table(rows, hta=not args.no_hta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
