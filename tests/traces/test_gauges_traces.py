"""Gauges on real traces against figures read from the raw JSON (gzip + json, no gpuprofile)."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from typing import Any

import pytest

import gpuprofile
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces


def raw_document(name: str) -> tuple[Any, Any]:
    path = require_trace(SHARED_TRACES / "kineto" / name)
    with gzip.open(path) as f:
        return path, json.loads(f.read())


def test_host_link_gauge_is_the_host_copies_bytes_over_their_time() -> None:
    path, doc = raw_document("hta_a100_80gb_train_rank0_of16.json.gz")
    events = doc["traceEvents"]
    copies = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == "gpu_memcpy"
        and ("HtoD" in e["name"] or "DtoH" in e["name"])
    ]
    assert copies, "the trace holds host-device copies"
    nbytes = sum(int(e["args"]["bytes"]) for e in copies)
    seconds = float(sum(Decimal(str(e["dur"])) for e in copies)) * 1e-6
    gauge = next(g for g in gpuprofile.load(path).report()["gauges"] if g["key"] == "host-link")
    assert gauge["value"] == pytest.approx(nbytes / seconds, rel=1e-6)
    assert gauge["roof_source"] == "datasheet" and gauge["roof"] > gauge["value"]


def test_peak_memory_gauge_is_the_largest_total_allocated_on_the_gpu() -> None:
    path, doc = raw_document("hta_v100_32gb_memory_rank1_of2.json.gz")
    events = doc["traceEvents"]
    allocated = [
        int(e["args"]["Total Allocated"])
        for e in events
        if e.get("name") == "[memory]" and int(e["args"].get("Device Type", 0)) == 1  # 1: CUDA
    ]
    assert allocated, "the trace holds CUDA allocator events"
    gauge = next(g for g in gpuprofile.load(path).report()["gauges"] if g["key"] == "memory")
    capacity = {int(d["id"]): int(d["totalGlobalMem"]) for d in doc["deviceProperties"]}
    assert gauge["value"] == max(allocated)
    assert gauge["roof"] in capacity.values() and gauge["roof_source"] == "trace"
