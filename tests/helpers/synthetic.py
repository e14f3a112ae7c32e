"""A synthetic Trace of N kernels, built straight from arrays (no Kineto JSON), for tests and
benchmarks of the widget at scale.

Per rank, one CPU thread launches every kernel: a "ProfilerStep#k" op spans each step of
``step`` launches, inside it one aten op per kernel, and inside that op the cudaLaunchKernel
runtime call whose correlation id the kernel carries. Kernels go round-robin over ``streams``
streams of device 0 and never overlap on a stream, except every ``overlap_every``-th kernel,
which runs long enough to overlap the next kernel on its stream (the widget shows it on a
second row). A few allocator events give a memory counter lane.

Layout of launch i (times in ns, 5 us apart): op [5000 i, 5000 i + 4000), runtime call
[5000 i + 1000, 5000 i + 3000), kernel from 5000 i + 3000 for 500..(streams * 5000 - 1000) ns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace, make_table

KERNEL_NAMES = (
    "ampere_sgemm_128x64_tn",
    "vectorized_elementwise_kernel<add>",
    "reduce_kernel<512, 1>",
    "softmax_warp_forward<float>",
    "<img src=x onerror=alert(1)>",  # an HTML-looking name: data, never markup
)
OP_NAMES = ("aten::mm", "aten::add", "aten::sum", "aten::softmax", "aten::weird")
LAUNCH_NS = 5000
THREAD = 11
PID = 100


def synthetic_trace(
    n_kernels: int,
    *,
    streams: int = 4,
    ranks: int = 1,
    step: int = 1000,
    overlap_every: int = 997,
    memory_events: int = 200,
    seed: int = 0,
) -> Trace:
    """n_kernels kernels per rank (see the module docstring for the layout)."""
    rng = np.random.default_rng(seed)
    tables: dict[str, list[pd.DataFrame]] = {t: [] for t in ("ops", "kernels", "runtime")}
    memory = []
    for rank in range(ranks):
        i = np.arange(n_kernels, dtype=np.int64)
        base = rank * n_kernels  # ids unique per table across ranks, as the importer makes them
        name_code = (i * 7 + (i // 3)) % len(KERNEL_NAMES)
        op_start = i * LAUNCH_NS
        call_start = op_start + 1000
        kernel_start = op_start + 3000
        kernel_dur = rng.integers(500, streams * LAUNCH_NS - 1000, n_kernels)
        overlapping = (i % overlap_every) == overlap_every - 1
        kernel_dur[overlapping] = streams * LAUNCH_NS + 2000
        correlation = i + 1
        n_steps = (n_kernels + step - 1) // step
        k = np.arange(n_steps, dtype=np.int64)
        step_start = k * step * LAUNCH_NS
        step_end = np.minimum((k + 1) * step, n_kernels) * LAUNCH_NS - 500
        step_names = pd.Categorical([f"ProfilerStep#{s}" for s in range(n_steps)])
        step_ids = 2 * ranks * n_kernels + rank * n_steps + k
        op_ids = np.concatenate([base + i, step_ids])
        tables["ops"].append(
            make_table(
                "ops",
                {
                    "id": op_ids,
                    "rank": np.full(n_kernels + n_steps, rank),
                    "pid": np.full(n_kernels + n_steps, PID),
                    "tid": np.full(n_kernels + n_steps, THREAD),
                    "name": _categorical(
                        np.concatenate([name_code, len(OP_NAMES) + step_names.codes]),
                        list(OP_NAMES) + list(step_names.categories),
                    ),
                    "category": _categorical(
                        np.concatenate([np.zeros(n_kernels, int), np.ones(n_steps, int)]),
                        ["cpu_op", "user_annotation"],
                    ),
                    "start_ns": np.concatenate([op_start, step_start]),
                    "dur_ns": np.concatenate([np.full(n_kernels, 4000), step_end - step_start]),
                    "external_id": np.concatenate([correlation, np.full(n_steps, -1)]),
                    "parent": np.concatenate([step_ids[i // step], np.full(n_steps, -1)]),
                    "depth": np.concatenate([np.ones(n_kernels), np.zeros(n_steps)]),
                    "input_dims": np.full(n_kernels + n_steps, "[[64, 64], [64, 64]]"),
                },
            )
        )
        tables["runtime"].append(
            make_table(
                "runtime",
                {
                    "id": base + i,
                    "rank": np.full(n_kernels, rank),
                    "pid": np.full(n_kernels, PID),
                    "tid": np.full(n_kernels, THREAD),
                    "name": _categorical(np.zeros(n_kernels, int), ["cudaLaunchKernel"]),
                    "category": _categorical(np.zeros(n_kernels, int), ["cuda_runtime"]),
                    "start_ns": call_start,
                    "dur_ns": np.full(n_kernels, 2000),
                    "correlation": correlation,
                    "external_id": correlation,
                },
            )
        )
        tables["kernels"].append(
            make_table(
                "kernels",
                {
                    "id": base + i,
                    "rank": np.full(n_kernels, rank),
                    "device": np.zeros(n_kernels),
                    "stream": 7 + i % streams,
                    "name": _categorical(name_code, list(KERNEL_NAMES)),
                    "start_ns": kernel_start,
                    "dur_ns": kernel_dur,
                    "correlation": correlation,
                    "external_id": correlation,
                    "op_id": base + i,
                    "grid_x": np.full(n_kernels, 128),
                    "block_x": np.full(n_kernels, 256),
                },
            )
        )
        m = np.arange(memory_events, dtype=np.int64)
        span = max(n_kernels * LAUNCH_NS, 1)
        memory.append(
            make_table(
                "memory",
                {
                    "rank": np.full(memory_events, rank),
                    "time_ns": m * span // max(memory_events, 1),
                    "pid": np.full(memory_events, PID),
                    "tid": np.full(memory_events, THREAD),
                    "device": np.zeros(memory_events),
                    "bytes": np.full(memory_events, 1 << 20),
                    "total_allocated": (m % 50 + 1) << 20,
                    "total_reserved": np.full(memory_events, 64 << 20),
                },
            )
        )
    frames = {t: _concat(parts) for t, parts in tables.items()}
    meta = TraceMeta(
        source=Source(format="synthetic"),
        ranks={r: RankMeta(devices=({"id": 0, "name": "Synthetic GPU"},)) for r in range(ranks)},
    )
    return Trace(**frames, memory=_concat(memory), meta=meta)


def _categorical(codes: np.ndarray, categories: list[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), categories=categories)


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    if len(parts) == 1:
        return parts[0]
    # Categoricals with different categories become objects in pd.concat: union them first.
    out = pd.concat(parts, ignore_index=True)
    for column, dtype in parts[0].dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype) and out[column].dtype != "category":
            out[column] = out[column].astype("category")
    return out
