"""How a folder of many large ranks reads: in this process, in worker processes, on Dask.

    python bench/ranks.py [--ranks 128] [--mb 30] [--dir DIR] [--keep] [--no-dask]
                          [--workers N] [--report]

Makes RANKS trace files of about MB MB of JSON each in a temporary folder (never in the
repository; DIR to choose where, --keep to leave them) by tiling the shared 8-rank DLRM job
(../shared/traces/kineto-distributed/param_dlrm_8xV100): rank r is source rank r % 8 repeated
in time until it reaches the size, its ids (External id, correlation, flows) renumbered per
tile and its distributedInfo rewritten to rank r of RANKS.

Then, each in a fresh child process started from this small one (Linux carries a parent's
peak RSS into its children, so a big parent would spoil their ru_maxrss), measured side by
side in one run:
  single    each rank read alone (gpuprofile.load(FILE).trace), in one child: the sum of the
            per-rank times, and the child's peak RSS (about one rank's); and what sending one
            rank's Trace from a worker costs: its pickle's size, dumps and loads seconds
  in-proc   gpuprofile.load(DIR, workers=1).trace
  workers   gpuprofile.load(DIR, workers=N).trace (N: --workers, default the cores)
  dask      a distributed.LocalCluster(n_workers=N, threads_per_worker=1) started in the
            child, then gpuprofile.load(DIR, scheduler=address).trace (cluster start
            reported apart, not in the time)
Per mode: wall seconds, ratio to the single-rank sum, and the child's (the parent's of the
workers) peak RSS. --report adds .report() to each folder load (on many ranks it can take
longer than the read). OMP_NUM_THREADS=1. Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

SOURCE = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "traces"
    / "kineto-distributed"
    / "param_dlrm_8xV100"
)
ID_ARGS = ("External id", "correlation")
# Ids of one tile stay below this; tile k adds k * ID_STRIDE.
ID_STRIDE = 10_000_000


def _load_source(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return doc


def tiled(doc: dict[str, Any], rank: int, world: int, target_bytes: int) -> bytes:
    """``doc`` with its timed events repeated in time until the JSON reaches target_bytes."""
    events = doc["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    tiles = max(1, round(target_bytes / len(orjson.dumps(timed))))
    out = list(meta) + [e for k in range(tiles) for e in tile_events(timed, k)]
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    info = doc.get("distributedInfo", {})
    header["distributedInfo"] = {**info, "rank": rank, "world_size": world}
    return orjson.dumps({**header, "traceEvents": out})


def tile_events(timed: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Tile ``k`` of the timed events: shifted k periods later (a period is their span and
    1 ms), their ids and step numbers moved past those of the tiles before."""
    start = min(e["ts"] for e in timed if "ts" in e)
    end = max(e["ts"] + e.get("dur", 0) for e in timed if "ts" in e)
    period = (end - start) + 1000
    out = []
    for e in timed:
        copy = dict(e)
        if "ts" in copy:
            copy["ts"] = e["ts"] + k * period
        if "id" in copy and isinstance(copy["id"], int):
            copy["id"] = e["id"] + k * ID_STRIDE
        args = e.get("args")
        if args and any(a in args for a in ID_ARGS):
            args = dict(args)
            for a in ID_ARGS:
                if isinstance(args.get(a), int) and args[a] >= 0:
                    args[a] += k * ID_STRIDE
            copy["args"] = args
        name = copy.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            copy["name"] = f"ProfilerStep#{int(name[13:]) + k}"
        out.append(copy)
    return out


def make_folder(directory: Path, ranks: int, mb: float) -> tuple[int, float]:
    """RANKS files; rank r is source rank r % 8 tiled, so 8 tilings are made and each is
    written RANKS / 8 times with its distributedInfo rank rewritten (the header comes first)."""
    sources = sorted(SOURCE.glob("rank*.json.gz"), key=lambda p: int(p.name[4:].split(".")[0]))
    total = 0
    for s, source in enumerate(sources[:ranks]):
        payload = tiled(_load_source(source), s, ranks, int(mb * 1e6))
        marker = orjson.dumps({"rank": s, "world_size": ranks})[1:-1]
        head = payload.index(marker)
        for r in range(s, ranks, len(sources)):
            own = orjson.dumps({"rank": r, "world_size": ranks})[1:-1]
            data = payload[:head] + own + payload[head + len(marker) :]
            (directory / f"rank{r:04d}.json").write_bytes(data)
            total += len(data)
    return total, total / ranks


CHILD = r"""
import os, resource, sys, time, json
os.environ["OMP_NUM_THREADS"] = "1"
from pathlib import Path
import gpuprofile
mode, directory, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
report = sys.argv[4] == "1"
out = {}
if mode == "single":
    times = []
    for f in sorted(directory.iterdir()):
        t = time.perf_counter()
        p = gpuprofile.load(f)
        if report:
            p.report()
        times.append(time.perf_counter() - t)
        del p
    out["seconds"] = sum(times)
    out["max_one"] = max(times)
    # What a worker's result costs to send: the first rank's Trace pickled and back.
    import pickle
    first = gpuprofile.load(sorted(directory.iterdir())[0]).trace
    t = time.perf_counter()
    blob = pickle.dumps(first, protocol=pickle.HIGHEST_PROTOCOL)
    out["pickle_s"] = time.perf_counter() - t
    t = time.perf_counter()
    pickle.loads(blob)
    out["unpickle_s"] = time.perf_counter() - t
    out["pickle_mb"] = len(blob) / 1e6
else:
    kwargs = {}
    if mode == "in-proc":
        kwargs["workers"] = 1
    elif mode == "workers":
        kwargs["workers"] = workers
    else:
        from distributed import LocalCluster
        t = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        out["cluster_start"] = time.perf_counter() - t
        kwargs["scheduler"] = cluster.scheduler_address
    t = time.perf_counter()
    p = gpuprofile.load(directory, **kwargs)
    trace = p.trace
    out["read"] = time.perf_counter() - t
    if report:
        p.report()
    out["seconds"] = time.perf_counter() - t
    out["rows"] = sum(len(getattr(trace, n)) for n in ("ops", "kernels", "runtime"))
    if mode == "dask":
        cluster.close()
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_child(mode: str, directory: Path, workers: int, report: bool) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(directory), str(workers), "1" if report else "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "?"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=128)
    parser.add_argument("--mb", type=float, default=30.0, help="MB of JSON per rank (30)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a temp folder)")
    parser.add_argument("--keep", action="store_true", help="leave the folder")
    parser.add_argument("--workers", type=int, default=None, help="default: the cores")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--report", action="store_true", help="also build the report")
    args = parser.parse_args()
    if not SOURCE.is_dir():
        print(f"shared traces not found: {SOURCE}")
        return
    from gpuprofile.importers.parallel import available_cores

    workers = args.workers or available_cores()
    need = args.ranks * args.mb * 1e6
    root = args.dir or Path(tempfile.gettempdir())
    if not root.is_dir():
        print(
            f"--dir {root}: no such folder (the benchmark writes its files into a new folder there)"
        )
        return
    free = shutil.disk_usage(root).free
    if need > 0.8 * free:
        print(f"{need / 1e9:.1f} GB of JSON will not fit in {free / 1e9:.1f} GB free at {root}")
        return
    directory = Path(tempfile.mkdtemp(prefix="gpuprofile-ranks-", dir=root))
    try:
        started = time.perf_counter()
        total, each = make_folder(directory, args.ranks, args.mb)
        print(
            f"{args.ranks} ranks x {each / 1e6:.1f} MB = {total / 1e9:.2f} GB of JSON in "
            f"{directory} ({time.perf_counter() - started:.0f} s to write); {workers} workers, "
            f"{available_cores()} cores, report={'yes' if args.report else 'no'}"
        )
        modes = ["single", "in-proc", "workers"] + ([] if args.no_dask else ["dask"])
        results = {}
        for mode in modes:
            results[mode] = run_child(mode, directory, workers, args.report)
            print(f"  {mode:8s} {results[mode]}", flush=True)
        base = results["single"].get("seconds")
        head = f"{'mode':10s}{'seconds':>9s}{'/ single sum':>14s}{'of it read':>12s}"
        print(f"\n{head}{'peak RSS MB':>13s}")
        for mode, r in results.items():
            if "error" in r:
                print(f"{mode:10s}  failed: {r['error']}")
                continue
            ratio = f"{r['seconds'] / base:.2f}" if base else "-"
            read = f"{r['read']:.1f}" if "read" in r else "-"
            print(f"{mode:10s}{r['seconds']:9.1f}{ratio:>14s}{read:>12s}{r['peak_mb']:13.0f}")
    finally:
        if args.keep:
            print(f"kept {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
