"""An Nsight Systems export (../shared/traces/nsys) exported as a Chrome trace, held to counts
and times read from the SQLite file with sqlite3 alone."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

import gpuprofile
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces

SAXPY = SHARED_TRACES / "nsys" / "pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite"


def test_nsys_export_holds_the_kernels_and_copies_of_the_database(tmp_path: Path) -> None:
    path = require_trace(SAXPY)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        kernels = db.execute('SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchall()
        copies = db.execute('SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY').fetchall()
    out = tmp_path / "saxpy.json.gz"
    gpuprofile.load(path).export_trace(out)
    doc = json.loads(gzip.decompress(out.read_bytes()), parse_float=Decimal)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    counts = Counter(e["cat"] for e in slices)
    # The importer drops nsys' "CUDA backtrace" duplicates of runtime calls: kernels and copies
    # are the tables to compare.
    assert (counts["kernel"], counts["gpu_memcpy"]) == (len(kernels), len(copies)) == (5, 15)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {"rank 0"}
    # Durations to the nanosecond, and kernel starts apart as in the database.
    for category, rows in (("kernel", kernels), ("gpu_memcpy", copies)):
        exported = sorted(
            (int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in slices if e["cat"] == category
        )
        expected = sorted((start, end - start) for start, end in rows)
        assert [d for _, d in exported] == [d for _, d in expected]
        assert [t - exported[0][0] for t, _ in exported] == [
            t - expected[0][0] for t, _ in expected
        ]
