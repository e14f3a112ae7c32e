"""Links between tables that every importer needs: op nesting and the op that launched a kernel."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuprofile.trace.codes import shared_codes
from gpuprofile.trace.model import NO_ID
from gpuprofile.trace.nesting import nest

# The columns that name a host thread.
THREAD = ("rank", "pid", "tid")


def with_nesting(ops: pd.DataFrame) -> pd.DataFrame:
    """Fill parent and depth: each op's innermost enclosing op on the same thread."""
    if ops.empty:
        return ops
    (thread_code,) = shared_codes([ops], THREAD)
    start = ops["start_ns"].to_numpy()
    parent_pos, depth = nest(thread_code, start, start + ops["dur_ns"].to_numpy())
    ids = ops["id"].to_numpy()
    ops = ops.copy()
    ops["parent"] = np.where(parent_pos == NO_ID, NO_ID, ids[np.maximum(parent_pos, 0)])
    ops["depth"] = depth
    return ops


def launching_ops(ops: pd.DataFrame, runtime: pd.DataFrame, kernels: pd.DataFrame) -> np.ndarray:
    """Kernel -> runtime call with its correlation id -> innermost aten op around that call.

    The runtime call's own "External id" is not reliably the op's across Kineto versions, but
    the call always runs inside the op that launched it, on the same thread.
    """
    cpu_ops = ops[ops["category"] == "cpu_op"]
    if kernels.empty or cpu_ops.empty:
        return np.full(len(kernels), NO_ID, np.int64)
    op_thread, call_thread = shared_codes([cpu_ops, runtime], THREAD)
    op_start = cpu_ops["start_ns"].to_numpy()
    call_start = runtime["start_ns"].to_numpy()
    parent, _ = nest(
        np.concatenate([op_thread, call_thread]),
        np.concatenate([op_start, call_start]),
        np.concatenate(
            [op_start + cpu_ops["dur_ns"].to_numpy(), call_start + runtime["dur_ns"].to_numpy()]
        ),
    )
    # A call nested in another call (cudaLaunchKernel inside cuLaunchKernel) climbs to an op.
    n_ops = len(cpu_ops)
    call_parent = parent[n_ops:]
    while (climb := call_parent >= n_ops).any():
        call_parent = np.where(climb, parent[np.where(climb, call_parent, 0)], call_parent)
    op_ids = cpu_ops["id"].to_numpy()
    launcher = np.where(call_parent == NO_ID, NO_ID, op_ids[np.clip(call_parent, 0, None)])
    op_of_call = dict(
        zip(zip(runtime["rank"].tolist(), runtime["correlation"].tolist()), launcher.tolist())
    )
    # Without a correlated runtime call (trimmed traces), fall back to the external id; ops
    # without one (NO_ID) must not claim kernels that have none either.
    with_external = cpu_ops[cpu_ops["external_id"] != NO_ID]
    op_of_external = dict(
        zip(
            zip(with_external["rank"].tolist(), with_external["external_id"].tolist()),
            with_external["id"].tolist(),
        )
    )
    return np.fromiter(
        (
            op_of_call.get((rank, corr), NO_ID)
            if (rank, corr) in op_of_call
            else op_of_external.get((rank, ext), NO_ID)
            for rank, corr, ext in zip(
                kernels["rank"].tolist(),
                kernels["correlation"].tolist(),
                kernels["external_id"].tolist(),
            )
        ),
        np.int64,
        len(kernels),
    )
