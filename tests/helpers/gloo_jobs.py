"""Real multi-process torch.distributed jobs (gloo, 127.0.0.1) for the tests.

``python gloo_jobs.py KIND WORLD PORT FOLDER [ARGS...]`` imports torch (and the modules
torch.profiler loads when it starts: torch._dynamo and more, 2-4 s), then forks one process per
rank: on this 2-core machine, importing torch in each rank's own interpreter took 20-35 s a job
of 2-3 ranks, most of it importing. The ranks are separate processes that join the job over
TCP (``init_process_group("gloo")`` after the fork, nothing of torch.distributed before it).

Jobs recorded by plain ``torch.profiler`` per rank, writing ``FOLDER/rank{R}.json``:

- ``data_parallel_job``: N ranks; each step every rank computes (``COMPUTE`` matmuls; the slow
  rank ``slow_factor`` times as many), then all-reduces its "gradients". The others wait in
  the all-reduce for the slow rank: it is the straggler.
- ``pipeline_job``: N stages; each step, M microbatches flow forward (stage s receives the
  activation from s-1, computes, sends to s+1; GPipe fill and drain), then, with
  ``backward``, the gradients flow back the same way. The slow stage computes ``slow_factor``
  times as much per microbatch: it is the bottleneck.

Each records ``steps`` steps after one warmup step (``schedule(wait=0, warmup=1, active=steps)``,
``prof.step()`` per step: the steps are ``ProfilerStep#N``), starting after a barrier so the
ranks' windows overlap. ``record_shapes=True``. A job takes a few seconds, most of it starting
the processes (importing torch).

``run_ranks`` runs any kind here; ``capture_*`` kinds run the data-parallel job under
``gpuprofile.profile(distributed=True)`` or ``%%gpuprofile --distributed`` and write what each
rank saw to ``FOLDER/result{R}.json`` (tests/integration/test_capture_distributed.py).
"""

from __future__ import annotations

import collections
import datetime
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
# Compute comes in units: a matmul of SIZE x SIZE (shapes recorded, FLOPs known) and an op
# ``gloo_jobs::busy`` that holds the rank for UNIT_MS without using the CPU, as a kernel the
# host waits for would. On this loaded 2-core machine a CPU-bound op is stretched up to 10x at
# random by the other processes (matmuls of a normal and a 3x rank measured 168 ms vs 330 ms,
# a 3-stage pipeline 351 / 439 / 297 ms for 1x / 3x / 1x): the sleeping op keeps the ranks'
# compute in the ratio asked, whatever else runs.
SIZE = 128
UNIT_MS = 4.0
COMPUTE = 5  # units per step of a data-parallel rank at normal speed (20 ms)
STAGE_COMPUTE = 2  # units per microbatch of a pipeline stage at normal speed (8 ms)
TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(
    kind: str,
    world: int,
    folder: Path,
    args: Sequence[str] = (),
    *,
    timeout_s: float = TIMEOUT_S,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``world`` ranks of one gloo job of this ``kind``; their output, or RuntimeError
    (with it) when a rank fails or the job outlasts ``timeout_s`` (every process is killed)."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(HERE), kind, str(world), str(free_port()), str(folder), *args]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
        start_new_session=True,  # its ranks with it: killed as one group
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise RuntimeError(
            f"{kind} job of {world} ranks outlasted {timeout_s} s:\n{err[-4000:]}"
        ) from None
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} job failed (exit {proc.returncode}):\n{err[-6000:]}")
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def data_parallel_job(
    folder: Path, *, world: int = 2, slow_rank: int = 1, steps: int = 3, slow_factor: int = 3
) -> Path:
    """Record a data-parallel job (``world`` ranks, ``slow_rank`` computing ``slow_factor``x);
    ``folder`` then holds ``rank{R}.json`` per rank."""
    run_ranks("dp", world, folder, [str(slow_rank), str(steps), str(slow_factor)])
    return folder


def pipeline_job(
    folder: Path,
    *,
    stages: int = 3,
    microbatches: int = 4,
    slow_stage: int = 1,
    steps: int = 2,
    slow_factor: int = 3,
    backward: bool = False,
) -> Path:
    """Record a pipeline of ``stages`` ranks (``slow_stage`` computing ``slow_factor``x per
    microbatch); ``folder`` then holds ``rank{R}.json`` per rank."""
    args = [str(slow_stage), str(steps), str(slow_factor), str(microbatches), str(int(backward))]
    run_ranks("pipeline", stages, folder, args)
    return folder


# --- in each rank's process ---------------------------------------------------------------


def _join(rank: int, world: int, port: int, timeout_s: float = TIMEOUT_S) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout_s)
    )


def _busy_op() -> Any:
    """``gloo_jobs::busy(x, ms)``: x back, after ``ms`` of waiting (registered once)."""
    import torch

    if not hasattr(_busy_op, "op"):

        @torch.library.custom_op(
            "gloo_jobs::busy", mutates_args=(), schema="(Tensor x, float ms) -> Tensor"
        )
        def busy(x: torch.Tensor, ms: float) -> torch.Tensor:
            import time

            time.sleep(ms / 1000)
            return x.clone()

        _busy_op.op = busy  # type: ignore[attr-defined]
    return _busy_op.op  # type: ignore[attr-defined]


def _compute(x: Any, w: Any, units: int) -> Any:
    import torch

    busy = _busy_op()
    for _ in range(units):
        x = busy(torch.tanh(torch.mm(x, w)), UNIT_MS)
    return x


def _dp_step(rank: int, slow_rank: int, slow_factor: int, x: Any, w: Any) -> None:
    import torch.distributed as dist

    times = COMPUTE * (slow_factor if rank == slow_rank else 1)
    grad = _compute(x, w, times)
    dist.all_reduce(grad)


def _recorded(folder: Path, rank: int, steps: int, body: Callable[[], None]) -> None:
    """Run ``body`` once per step, warmup + ``steps`` times, under torch.profiler."""
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, schedule

    def ready(prof: Any) -> None:
        prof.export_chrome_trace(str(folder / f"rank{rank}.json"))

    dist.barrier()
    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
        on_trace_ready=ready,
    ) as prof:
        dist.barrier()  # the profilers start at different moments: begin together
        for _ in range(steps + 1):
            body()
            prof.step()


def _dp(rank: int, folder: Path, slow_rank: str, steps: str, slow_factor: str) -> None:
    import torch

    x, w = torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE) / SIZE**0.5
    _recorded(
        folder,
        rank,
        int(steps),
        lambda: _dp_step(rank, int(slow_rank), int(slow_factor), x, w),
    )


def _pipeline(
    rank: int,
    folder: Path,
    slow_stage: str,
    steps: str,
    slow_factor: str,
    microbatches: str,
    backward: str,
) -> None:
    import torch
    import torch.distributed as dist

    stages = dist.get_world_size()
    times = STAGE_COMPUTE * (int(slow_factor) if rank == int(slow_stage) else 1)
    w = torch.randn(SIZE, SIZE) / SIZE**0.5

    def step() -> None:
        for _ in range(int(microbatches)):
            x = torch.randn(SIZE, SIZE)
            if rank > 0:
                dist.recv(x, src=rank - 1)
            y = _compute(x, w, times)
            if rank < stages - 1:
                dist.send(y, dst=rank + 1)
        if backward == "1":
            for _ in range(int(microbatches)):
                g = torch.ones(SIZE, SIZE)
                if rank < stages - 1:
                    dist.recv(g, src=rank + 1)
                gx = _compute(g, w, times)
                if rank > 0:
                    dist.send(gx, dst=rank - 1)

    _recorded(folder, rank, int(steps), step)


# Kinds run under gpuprofile (the capture tests).


def _own_counts(trace: Any, rank: int) -> dict[str, Any]:
    """What a trace holds of one rank: rows per table, and the ops' names counted."""
    from gpuprofile.trace.model import TIMELINE_TABLES

    counts: dict[str, Any] = {}
    for table in TIMELINE_TABLES:
        frame = trace.table(table)
        counts[table] = int((frame["rank"] == rank).sum())
    ops = trace.ops[trace.ops["rank"] == rank]
    counts["op_names"] = dict(collections.Counter(str(n) for n in ops["name"]))
    counts["op_dur_ns"] = int(ops["dur_ns"].sum())
    return counts


def _result(folder: Path, rank: int, profile: Any, extra: dict[str, Any]) -> None:
    """What this rank's Profile holds, to ``FOLDER/result{R}.json``; with several ranks, the
    report's job view (``report["distributed"]``) too."""
    trace = profile.trace
    job = profile.report()["distributed"] if len(trace.ranks) > 1 else None
    result = {
        "rank": rank,
        "ranks": trace.ranks,
        "partial": trace.meta.partial,
        "source": trace.meta.source.path,
        "errors": list(trace.meta.errors),
        "per_rank": {str(r): _own_counts(trace, r) for r in trace.ranks},
        "memory_rows": len(trace.memory),
        "counter_ranks": sorted({int(r) for r in trace.counters["rank"]}),
        "stragglers": [s["rank"] for s in job["stragglers"]] if job else None,
        "world_size": job["world_size"] if job else None,
        **extra,
    }
    (folder / f"result{rank}.json").write_text(json.dumps(result))


def _capture_dp(
    rank: int,
    folder: Path,
    slow_rank: str,
    steps: str,
    slow_factor: str,
    raise_on: str = "-1",
    raise_where: str = "after",
) -> None:
    """The data-parallel job under ``gpuprofile.profile(distributed=True)``, exported to
    ``FOLDER/export``. With ``raise_on`` R >= 0, rank R raises inside the block: "after" its
    last all-reduce (the others end normally), or "before" its second one (the others wait in
    it for the job's timeout, then raise too); "busy": rank R cannot start (its own
    torch.profiler already runs)."""
    import contextlib

    import torch

    import gpuprofile

    x, w = torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE) / SIZE**0.5
    raiser = rank == int(raise_on)
    raised = None
    p = None
    busy = torch.profiler.profile() if raiser and raise_where == "busy" else None
    export = folder / "export"
    try:
        with (
            busy or contextlib.nullcontext(),
            gpuprofile.profile(distributed=True, export=export, profile_memory=True) as p,
        ):
            for step in range(int(steps)):
                if raiser and raise_where == "before" and step == 1:
                    raise ValueError("rank failed inside the block")
                _dp_step(rank, int(slow_rank), int(slow_factor), x, w)
                gpuprofile.step()
            if raiser and raise_where == "after":
                raise ValueError("rank failed inside the block")
    except Exception as error:
        raised = str(error) if raiser else f"{type(error).__name__}: {error}"
    if p is None:  # it never started
        (folder / f"result{rank}.json").write_text(json.dumps({"rank": rank, "raised": raised}))
    else:
        _result(folder, rank, p, {"raised": raised})


def _capture_magic(rank: int, folder: Path, slow_rank: str, steps: str, slow_factor: str) -> None:
    """The same job as a ``%%gpuprofile --distributed`` cell of an IPython shell (not a
    Jupyter kernel: the magic shows the text report) in each rank's process."""
    from IPython.core.interactiveshell import InteractiveShell

    import gpuprofile

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpuprofile")
    shell.user_ns["dp_step"] = functools.partial(_dp_step, rank, int(slow_rank), int(slow_factor))
    cell = (
        "%%gpuprofile --distributed\n"
        "import torch, gpuprofile\n"
        f"x, w = torch.randn({SIZE}, {SIZE}), torch.randn({SIZE}, {SIZE}) / {SIZE**0.5}\n"
        f"for _ in range({int(steps)}):\n"
        "    dp_step(x, w)\n"
        "    gpuprofile.step()\n"
    )
    result = shell.run_cell(cell)
    result.raise_error()
    _result(folder, rank, gpuprofile.last(), {})


_KINDS: dict[str, Callable[..., None]] = {
    "dp": _dp,
    "pipeline": _pipeline,
    "capture_dp": _capture_dp,
    "capture_magic": _capture_magic,
}


def main(argv: list[str]) -> None:
    kind, world, port, folder, *args = argv
    import torch._dynamo
    import torch.distributed
    import torch.profiler

    if kind.startswith("capture"):
        import IPython  # noqa: F401

        import gpuprofile.capture.session
        import gpuprofile.report.build  # noqa: F401
    Path(folder).mkdir(parents=True, exist_ok=True)
    timeout_s = float(os.environ.get("GLOO_JOB_TIMEOUT_S", TIMEOUT_S))
    ranks = {}
    for rank in range(int(world)):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _join(rank, int(world), int(port), timeout_s)
                _KINDS[kind](rank, Path(folder), *args)
                torch.distributed.destroy_process_group()
                code = 0
            except BaseException:
                print(f"--- rank {rank}:", file=sys.stderr)
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        ranks[pid] = rank
    failed = []
    for _ in ranks:
        pid, status = os.wait()
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(ranks[pid])
    if failed:
        print(f"ranks {sorted(failed)} failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
