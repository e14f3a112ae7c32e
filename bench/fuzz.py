"""Mutate small real traces and count what gpuprofile makes of each mutant (issue 16).

    python bench/fuzz.py [--mutants 20000] [--seed 0] [--keep DIR] [TRACE ...]

Each mutant (tests/helpers/mutants.py: keys deleted, types changed, values swapped, numeric
extremes, repeated events, hostile names, truncation, raw non-JSON tokens) goes through
``gpuprofile.load``, the report and the text view in a worker process, under a time limit.
Prints the count per outcome (ok, error, impossible, unsafe-text, crash, hang), the share of
results that are impossible, and the places the crashes and impossible figures come from.
``--keep DIR`` writes each crashing or hanging mutant there, to make regression cases of.
Default traces: four small shared Kineto traces. Not a test: it prints, and exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import gzip
import json
import multiprocessing
import random
import re
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.mutants import Outcome, mutate, outcome  # noqa: E402

KINETO = REPO.parent / "shared" / "traces" / "kineto"
DEFAULT = (
    "kineto_docs_h100_cuda_sync_before_fix.json",
    "hta_a100_triton_kernel.json.gz",
    "hta_mi250_rocm6_minitoy_train.json.gz",
    "tracelens_mi300x_torch_compile_triton.json.gz",
)

_docs: list[Any] = []
_names: list[str] = []
_scratch = Path(tempfile.gettempdir())


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in the code under
    test takes it for an error of the trace."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang


def _start_worker(docs: list[Any], names: list[str]) -> None:
    global _scratch
    _docs[:], _names[:] = docs, names
    _scratch = Path(tempfile.mkdtemp(prefix="gpuprofile-fuzz-"))
    signal.signal(signal.SIGALRM, _alarm)
    # numpy's "invalid value encountered in cast" is counted by its outcome, not printed each time.
    warnings.simplefilter("ignore")
    import gpuprofile  # noqa: F401  (once per worker, not once per mutant)


def _run(job: tuple[int, str, int]) -> tuple[int, str, Outcome, bytes]:
    index, seed, timeout = job
    which = index % len(_docs)
    data = mutate(_docs[which], random.Random(f"{seed}:{index}"))
    path = _scratch / f"mutant{index}.json"
    path.write_bytes(data)
    signal.alarm(timeout)
    try:
        result = outcome(path)
    except _Hang:
        result = Outcome("hang", f"over {timeout} s")
    finally:
        signal.alarm(0)
        path.unlink(missing_ok=True)
    return index, _names[which], result, data if result.kind in ("crash", "hang") else b""


def _read(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _family(detail: str) -> str:
    """Impossible figures grouped by what is wrong, not by their values."""
    return re.sub(r"'[^']*'|-?\d[\d.e+]*|U\+[0-9A-F]{4}", "#", detail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--mutants", type=int, default=20_000)
    parser.add_argument("--seed", default="0")
    parser.add_argument("--timeout", type=int, default=30, help="seconds a mutant may take")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", type=Path, help="write crashing and hanging mutants here")
    args = parser.parse_args()
    paths = args.traces or [KINETO / name for name in DEFAULT]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"fuzz: no such trace: {', '.join(missing)}")
        return 0
    docs, names = [_read(p) for p in paths], [p.name for p in paths]
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    kinds: Counter[str] = Counter()
    places: Counter[str] = Counter()
    figures: Counter[str] = Counter()
    started = time.perf_counter()
    jobs = ((i, args.seed, args.timeout) for i in range(args.mutants))
    context = multiprocessing.get_context("fork")
    with context.Pool(args.workers, _start_worker, (docs, names), maxtasksperchild=2000) as pool:
        for index, name, result, data in pool.imap_unordered(_run, jobs, chunksize=16):
            kinds[result.kind] += 1
            if result.kind in ("crash", "hang"):
                places[result.detail] += 1
                if args.keep and places[result.detail] <= 3:
                    kept = args.keep / f"{result.kind}-{index}-{name.split('.')[0]}.json"
                    kept.write_bytes(data)
            elif result.kind in ("impossible", "unsafe-text"):
                figures[f"{result.kind}: {_family(result.detail)}"] += 1
    seconds = time.perf_counter() - started

    print(f"{args.mutants} mutants of {len(paths)} traces (seed {args.seed}) in {seconds:.0f} s")
    for kind in ("ok", "error", "impossible", "unsafe-text", "crash", "hang"):
        print(f"  {kind:12} {kinds[kind]:7}")
    results = kinds["ok"] + kinds["impossible"] + kinds["unsafe-text"]
    if results:
        print(f"impossible among results: {kinds['impossible'] / results:.2%}")
        print(f"unsafe text among results: {kinds['unsafe-text'] / results:.2%}")
    print(f"crash and hang places ({len(places)}):")
    for place, count in places.most_common():
        print(f"  {count:6}  {place}")
    print("impossible and unsafe figures:")
    for figure, count in figures.most_common(20):
        print(f"  {count:6}  {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
