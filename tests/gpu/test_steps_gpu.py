"""--steps on a real GPU: every window's kernels kept and linked, the time between windows not
taken for GPU idle time, and the export read back whole."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis


def test_windows_on_a_gpu_keep_their_kernels_and_leave_the_gaps_out(tmp_path: Path) -> None:
    export = tmp_path / "run.json"
    a = torch.randn(1024, 1024, device="cuda")
    with gpuprofile.profile(steps=(1, 2, 3), export=export, interval=0.05) as p:
        for _ in range(12):  # 3 cycles of wait 1, warmup 1, active 2
            for _ in range(5):
                a = (a @ a).tanh()
            torch.cuda.synchronize()
            time.sleep(0.05)  # host time between kernels, in windows and between them
            gpuprofile.step()
    trace = p.trace
    assert len(trace.meta.windows) == 3
    # 2 recorded steps per window, a gemm and a tanh 5 times each: at least 20 kernels per
    # window (cuBLAS may split a gemm), as many in each, every one launched by an op.
    kernels = trace.kernels
    windows = sorted((w.start_ns, w.end_ns) for w in trace.meta.windows)
    start_ns = kernels["start_ns"].to_numpy()
    per_window = [int(((start_ns >= s) & (start_ns < e)).sum()) for s, e in windows]
    assert per_window[0] >= 20 and len(set(per_window)) == 1 and sum(per_window) == len(kernels)
    assert (kernels["op_id"] >= 0).all()
    # Idle gaps lie within windows: none reaches into the time between two windows.
    analysis = Analysis(trace)
    gaps = analysis.idle_gaps
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert not ((gaps["start_ns"] < start) & (gaps["end_ns"] > end)).any()
    breakdown = analysis.gpu_time(0)
    assert breakdown is not None
    assert int(gaps["dur_ns"].sum()) == breakdown.idle_ns
    # The export is one trace that reads back as the same profile.
    doc = json.loads(export.read_text())
    assert sum(e.get("cat") == "kernel" for e in doc["traceEvents"]) == len(kernels)
    back = gpuprofile.load(export)
    assert back.report()["ranks"][0]["gpu"] == p.report()["ranks"][0]["gpu"]
