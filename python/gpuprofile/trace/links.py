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
    by_call, called = _look_up(
        (runtime["rank"].to_numpy(), runtime["correlation"].to_numpy()),
        launcher,
        (kernels["rank"].to_numpy(), kernels["correlation"].to_numpy()),
    )
    # Without a correlated runtime call (trimmed traces), fall back to the external id; ops
    # without one (NO_ID) must not claim kernels that have none either.
    with_external = cpu_ops[cpu_ops["external_id"] != NO_ID]
    by_external, _ = _look_up(
        (with_external["rank"].to_numpy(), with_external["external_id"].to_numpy()),
        with_external["id"].to_numpy(),
        (kernels["rank"].to_numpy(), kernels["external_id"].to_numpy()),
    )
    return np.where(called, by_call, by_external)


def _look_up(
    keys: tuple[np.ndarray, np.ndarray], values: np.ndarray, queries: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """For each (rank, id) query, the value of the last equal key (as a dict built from the
    keys in order would give) or NO_ID, and whether there was one."""
    if not len(values):
        return np.full(len(queries[0]), NO_ID, np.int64), np.zeros(len(queries[0]), bool)
    last = ~pd.MultiIndex.from_arrays(keys).duplicated(keep="last")
    index = pd.MultiIndex.from_arrays([k[last] for k in keys])
    position = index.get_indexer(pd.MultiIndex.from_arrays(queries))
    found = position >= 0
    return np.where(found, values[last][position], NO_ID).astype(np.int64), found
