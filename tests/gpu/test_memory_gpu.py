"""--memory on CUDA: the memory view by category against the tensors the test makes, the
allocator's snapshot read at the end, and a real CUDA out-of-memory post-mortem."""

from __future__ import annotations

import pytest
import torch

import gpuprofile

MiB = 2**20


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(1024, 1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


def test_categories_snapshot_and_the_gauge_on_cuda() -> None:
    model = Block().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    x = torch.randn(4096, 1024, device="cuda")
    with gpuprofile.profile(profile_memory=True) as p:
        for _ in range(2):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
    report = p.typed_report()
    memory = report.ranks[0].memory
    assert memory is not None and memory.device == torch.cuda.current_device()
    params = sum(q.untyped_storage().nbytes() for q in model.parameters())
    assert memory.peak.by_category["parameters"] == params
    assert memory.end.by_category["optimizer state"] >= 2 * params
    gauge = next(g for g in report.gauges if g.key == "memory")
    assert gauge.value == memory.peak.total_bytes
    states = {s.device: s for s in report.allocator}
    state = states[torch.cuda.current_device()]
    assert state.reserved_bytes >= state.allocated_bytes >= params
    assert state.allocated_bytes + state.pending_free_bytes + state.inactive_bytes == (
        state.reserved_bytes
    )


def test_a_real_cuda_out_of_memory_error_has_a_post_mortem() -> None:
    free, _ = torch.cuda.mem_get_info()
    keep = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
    with (
        pytest.raises(torch.OutOfMemoryError),
        gpuprofile.profile(profile_memory=True) as p,
    ):
        torch.empty(free * 4, dtype=torch.uint8, device="cuda")
    del keep
    memory = p.typed_report().ranks[0].memory
    assert memory is not None and memory.failure is not None
    requested = memory.failure.requested_bytes
    assert requested is not None and abs(requested - free * 4) <= 0.01 * free * 4
    assert memory.failure.op == "aten::empty"
    assert "OUT OF MEMORY" in p.text()
    torch.cuda.empty_cache()
