"""Memory by category and module (analyses/memory_use.py), the CPU's peak gauge, and the
out-of-memory post-mortem (analyses/memory_failure.py), on real CPU captures. Expected figures
come from the tensors the test makes (their sizes) and from the raw allocator events summed
from the exported JSON here, never from the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import gpuprofile
from gpuprofile.analyses.memory_failure import requested_bytes

N = 256 * 1024  # floats in the test's large activation: 1 MiB, larger than any other block


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.untyped_storage().nbytes() for t in tensors)


class Body(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Depends on a parameter, so the sin below saves it for the backward: an activation.
        big = torch.ones(N) * self.lin.weight.sum()
        return self.lin(x) + big.sin().sum()


class Net(torch.nn.Module):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.body = Body()
        self.head = torch.nn.Linear(16, 4)
        self.fail = fail

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(x)
        if self.fail:
            torch.empty(1 << 60, dtype=torch.uint8)  # the CPU allocator refuses this
        return self.head(h)


def _raw_allocations(path: Path) -> list[int]:
    """The allocator's Bytes of every [memory] event, in time order, read from the JSON."""
    events = json.loads(path.read_text())["traceEvents"]
    memory = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    return [int(e["args"]["Bytes"]) for e in memory if e["args"].get("Device Type") == 0]


def test_training_memory_by_category_module_and_the_gauge(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 16)).sum().backward()
    optimizer.step()  # Adam's state exists before the capture
    export = tmp_path / "trace.json"
    with gpuprofile.profile(profile_memory=True, export=export) as p:
        for _ in range(2):
            optimizer.zero_grad(set_to_none=False)
            model(torch.randn(8, 16)).sum().backward()
            optimizer.step()
    report = p.typed_report()
    memory = report.ranks[0].memory
    assert memory is not None and memory.device == -1
    params = list(model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values()]
    grads = [q.grad for q in params if q.grad is not None]
    # Known before the capture, never reallocated: parameters, gradients (zeroed in place) and
    # the optimizer's state start the timeline with exactly their sizes.
    first = {c: series[0] for c, series in memory.by_category.items()}
    assert first["parameters"] == _nbytes(params)
    assert first["optimizer state"] == _nbytes(state)
    assert memory.peak.by_category["parameters"] == _nbytes(params)
    assert memory.peak.by_category["gradients"] >= _nbytes(grads)
    # The totals are the raw events' running sum on top of what was there before.
    raw = _raw_allocations(export)
    running, highest = 0, 0
    for nbytes in raw:
        running += nbytes
        highest = max(highest, running)
    assert memory.peak.total_bytes == memory.before_bytes + highest
    assert memory.before_bytes == _nbytes(params) + _nbytes(grads) + _nbytes(state)
    # The 1 MiB block made in Body's forward and freed by the backward: an activation of Body.
    live = {(b.bytes, b.category, b.module) for b in memory.peak.largest}
    assert (N * 4, "activations", "Net.body") in live
    assert memory.peak.by_category["activations"] >= N * 4
    # One figure per fact: the CPU's gauge is the view's peak.
    gauge = next(g for g in report.gauges if g.key == "memory")
    assert gauge.label == "Peak host memory" and gauge.value == memory.peak.total_bytes
    text = p.text()
    assert "memory (host, PyTorch's CPU allocator): peak" in text
    assert "activations     Net.body" in text


def test_an_out_of_memory_cell_shows_what_was_live_and_the_fixes() -> None:
    torch.manual_seed(0)
    model = Net(fail=True)
    with (
        pytest.raises(RuntimeError, match="allocate"),
        gpuprofile.profile(profile_memory=True) as p,
    ):
        model(torch.randn(8, 16))
    assert p.partial
    memory = p.typed_report().ranks[0].memory
    assert memory is not None and memory.failure is not None
    failure = memory.failure
    assert failure.requested_bytes == 1 << 60
    assert "allocate" in failure.error
    # Where it was asked: the allocator's [OutOfMemory] event falls in Net's forward's empty().
    assert (failure.op, failure.module) == ("aten::empty", "Net")
    # Body's forward output and its 1 MiB block were live when the head's allocation failed.
    live = {(b.module, b.category, b.bytes) for b in memory.end.largest}
    assert ("Net.body", "activations", N * 4) in live
    fixes = {f.fix.split(":")[0]: f for f in failure.fixes}
    checkpoint = next(f for f in failure.fixes if "checkpoint Net.body" in f.fix)
    assert checkpoint.frees_bytes >= N * 4
    # Cut short in a forward autograd recorded: training or inference, each fix says its case.
    assert checkpoint.fix.startswith("if this forward trains")
    assert any(k.startswith("if this forward is inference") for k in fixes)
    assert failure.fixes == sorted(failure.fixes, key=lambda f: -f.frees_bytes)
    # No fix for a CUDA allocator on a host device, none for a job of one rank.
    assert not any("expandable_segments" in f.fix or "shard" in f.fix for f in failure.fixes)
    text = p.text()
    assert text.index("OUT OF MEMORY") < text.index("rank 0 (")
    assert "asked for by aten::empty in Net" in text
    assert "the request alone is larger than all PyTorch held" in text
    assert "fixes, by the memory each frees there" in text


def test_a_materialised_score_matrix_is_named_at_the_failure() -> None:
    b, h, length, d = 1, 2, 256, 8

    class Attention(torch.nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            scores = (q @ q.transpose(-1, -2)).softmax(-1)
            torch.empty(1 << 60, dtype=torch.uint8)
            return scores @ q

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = Attention()

        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return self.attn(q)

    with (
        pytest.raises(RuntimeError),
        gpuprofile.profile(profile_memory=True) as p,
        torch.no_grad(),
    ):
        Model()(torch.randn(b, h, length, d))
    failure = p.typed_report().ranks[0].memory.failure  # type: ignore[union-attr]
    assert failure is not None
    sdpa = next(f for f in failure.fixes if "scaled_dot_product_attention" in f.fix)
    # Under no_grad the scores before the softmax are freed by it: one b x h x L x L block live.
    assert sdpa.frees_bytes == b * h * length * length * 4
    # No autograd, no training seen: neither checkpointing nor inference_mode is advised.
    assert not any("checkpoint" in f.fix or "inference_mode" in f.fix for f in failure.fixes)


def test_a_simulated_cuda_out_of_memory_error_is_read() -> None:
    message = (
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 "
        "GiB of which 1.20 GiB is free. Of the allocated memory 70.00 GiB is allocated by "
        "PyTorch, and 3.50 GiB is reserved by PyTorch but unallocated."
    )
    with pytest.raises(torch.OutOfMemoryError), gpuprofile.profile(profile_memory=True) as p:
        keep = torch.ones(N)
        raise torch.OutOfMemoryError(message)
    del keep
    memory = p.typed_report().ranks[0].memory
    assert memory is not None and memory.failure is not None
    assert memory.failure.requested_bytes == 2 * 2**30
    # What it lacked: the request less the 1.20 GiB the error says was free.
    assert memory.failure.needed_bytes == 2 * 2**30 - round(1.20 * 2**30)
    assert memory.failure.error.startswith("OutOfMemoryError: CUDA out of memory")
    # The error's unallocated reserve is a CUDA allocator's: not offered on a host device.
    assert not any("expandable" in f.fix for f in memory.failure.fixes)
    older = "DefaultCPUAllocator: not enough memory: you tried to allocate 96 bytes"
    assert requested_bytes(older) == 96


def test_tensor_roles_name_storages_by_address() -> None:
    from gpuprofile.capture.tensor_roles import TensorRoles

    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    roles = TensorRoles()
    roles.install()
    try:
        model(torch.ones(2, 4)).sum().backward()
        optimizer.step()
    finally:
        roles.remove()
    found = {(r.addr, r.role) for r in roles.roles([model])}
    for q in model.parameters():
        assert (q.untyped_storage().data_ptr(), "parameters") in found
        assert q.grad is not None and (q.grad.untyped_storage().data_ptr(), "gradients") in found
        momentum = optimizer.state[q]["momentum_buffer"]
        assert (momentum.untyped_storage().data_ptr(), "optimizer state") in found
    assert len(found) == 6


def test_no_memory_recorded_keeps_the_gauge_asking_for_it() -> None:
    with gpuprofile.profile() as p:
        torch.ones(64).sum()
    report = p.typed_report()
    assert report.ranks[0].memory is None
    gauge = next(g for g in report.gauges if g.key == "memory")
    assert gauge.value is None and "--memory" in (gauge.note or "")


def test_peak_memory_by_module_before_and_after() -> None:
    class Grow(torch.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n

        def forward(self) -> torch.Tensor:
            return torch.ones(self.n)  # its call's one allocation, kept: its peak is 4 n bytes

    class Outer(torch.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.grow = Grow(n)

        def forward(self) -> torch.Tensor:
            return self.grow()

    profiles = []
    for n in (1000, 3000):
        with gpuprofile.profile(profile_memory=True) as p:
            kept = Outer(n)()
        profiles.append(p)
        del kept
    before, after = profiles
    diff = after.with_baseline(before).typed_report().baseline
    rows = {row.module: row for row in diff.memory}  # type: ignore[union-attr]
    grow = rows["Outer.grow"]
    assert (grow.a_bytes, grow.b_bytes, grow.delta) == (4000, 12000, 8000)
    assert diff.memory[0].module == "peak"  # type: ignore[union-attr]
    assert "Outer.grow" in after.with_baseline(before).text()


def test_an_imported_trace_tells_its_failure_by_the_profilers_event(tmp_path: Path) -> None:
    export = tmp_path / "oom.json"
    with (
        pytest.raises(RuntimeError),
        gpuprofile.profile(profile_memory=True, export=export),
    ):
        kept = torch.ones(N)
        torch.empty(1 << 60, dtype=torch.uint8)
    del kept
    events = json.loads(export.read_text())["traceEvents"]
    oom = [e for e in events if e.get("name") == "[OutOfMemory]"]
    assert len(oom) == 1
    loaded = gpuprofile.load(export)
    memory = loaded.typed_report().ranks[0].memory
    assert memory is not None and memory.failure is not None
    assert memory.failure.requested_bytes == oom[0]["args"]["Bytes"] == 1 << 60
    assert "[OutOfMemory]" in memory.failure.error
    assert "instant [OutOfMemory]" not in loaded.text()  # read, not listed as skipped


def test_events_without_addresses_or_totals_move_the_total_only(tmp_path: Path) -> None:
    """Old traces (torch 1.x, the TensorBoard plugin's samples) write neither Addr nor Total
    Allocated: nothing pairs, and frees of blocks from before the trace must not count as live
    blocks of their own."""
    export = tmp_path / "full.json"
    kept = torch.ones(N)  # made before: its free is in the trace, its allocation is not
    with gpuprofile.profile(profile_memory=True, export=export):
        del kept
        a = torch.ones(1000)
        b = torch.ones(3000)
        del a, b
    doc = json.loads(export.read_text())
    for event in doc["traceEvents"]:
        if event.get("name") == "[memory]":
            event["args"].pop("Addr", None)
            event["args"]["Total Allocated"] = -1
    stripped = tmp_path / "old.json"
    stripped.write_text(json.dumps(doc))
    raw = _raw_allocations(stripped)
    running, lowest, highest = 0, 0, 0
    for nbytes in raw:
        running += nbytes
        lowest, highest = min(lowest, running), max(highest, running)
    memory = gpuprofile.load(stripped).typed_report().ranks[0].memory
    assert memory is not None
    assert memory.before_bytes == -lowest  # the least the frees imply was live
    assert memory.peak.total_bytes == -lowest + highest
    assert set(c for c, v in memory.peak.by_category.items() if v) <= {"other"}
    assert memory.peak.largest == []
    assert "carry no address" in memory.note


def test_out_of_memory_without_memory_recording_says_how_to_see_more() -> None:
    with pytest.raises(RuntimeError), gpuprofile.profile() as p:
        torch.empty(1 << 60, dtype=torch.uint8)
    report = p.typed_report()
    assert report.ranks[0].memory is None
    notice = next(n for n in report.notices if n.kind == "out-of-memory")
    assert "--memory" in notice.text and "1152921504606846976 bytes" in notice.text
