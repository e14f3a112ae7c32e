"""The code a researcher writes by hand (issue 25): a transformer block whose attention loops over
its heads in Python, whose RMSNorm is spelled out op by op, and whose mixture of experts loops
over its experts with boolean-mask routing; and the same block written batched (one matmul over
the heads, F.rms_norm, gather/scatter routing with batched expert weights), which computes the
same function without any of those patterns.

Sizes are small: the tests run on two shared cores. ``training_step`` runs one forward, backward
and optimizer step; ``module_ranges`` wraps every module call in the range a capture writes
(``nn.Module: {path} ({Type})``), from the test's own hooks, so tests do not depend on the
capture's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

DIM = 32
HEADS = 4
EXPERTS = 4
HIDDEN = 64
TOKENS = 16  # per sequence
BATCH = 2
EPS = 1e-6


class LoopAttention(nn.Module):
    """Self-attention, one head at a time in a Python loop."""

    def __init__(self, dim: int = DIM, heads: int = HEADS) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        size = x.shape[-1] // self.heads
        outs = []
        for h in range(self.heads):
            part = slice(h * size, (h + 1) * size)
            scores = q[..., part] @ k[..., part].transpose(-2, -1) / size**0.5
            outs.append(torch.softmax(scores, dim=-1) @ v[..., part])
        return self.out(torch.cat(outs, dim=-1))


class BatchedAttention(LoopAttention):
    """The same attention, every head in one call (view/transpose, SDPA)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        q, k, v = (
            t.view(batch, tokens, self.heads, dim // self.heads).transpose(1, 2)
            for t in self.qkv(x).chunk(3, dim=-1)
        )
        out = F.scaled_dot_product_attention(q, k, v)
        return self.out(out.transpose(1, 2).reshape(batch, tokens, dim))


class HandRMSNorm(nn.Module):
    def __init__(self, dim: int = DIM, eps: float = EPS) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class FusedRMSNorm(HandRMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class Expert(nn.Module):
    def __init__(self, dim: int = DIM, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class LoopMoE(nn.Module):
    """Top-1 mixture of experts: a Python loop over experts, each fed by a boolean mask."""

    def __init__(self, dim: int = DIM, experts: int = EXPERTS) -> None:
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(Expert(dim) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        idx = self.router(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            mask = idx == e
            if mask.any():
                out[mask] = expert(flat[mask])
        return out.view_as(x)


class BatchedMoE(nn.Module):
    """The same routing without a loop or a host sync: each token gathers its expert's weights
    and one batched matmul (torch.bmm) runs every token's expert at once."""

    def __init__(self, dim: int = DIM, experts: int = EXPERTS, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.w_up = nn.Parameter(torch.randn(experts, dim, hidden) / dim**0.5)
        self.b_up = nn.Parameter(torch.zeros(experts, hidden))
        self.w_down = nn.Parameter(torch.randn(experts, hidden, dim) / hidden**0.5)
        self.b_down = nn.Parameter(torch.zeros(experts, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        idx = self.router(flat).argmax(-1)
        hidden = torch.bmm(flat.unsqueeze(1), self.w_up[idx]).squeeze(1) + self.b_up[idx]
        out = torch.bmm(F.gelu(hidden).unsqueeze(1), self.w_down[idx]).squeeze(1)
        return (out + self.b_down[idx]).view_as(x)


class Block(nn.Module):
    def __init__(self, *, batched: bool = False) -> None:
        super().__init__()
        norm = FusedRMSNorm if batched else HandRMSNorm
        self.norm1 = norm()
        self.attn = BatchedAttention() if batched else LoopAttention()
        self.norm2 = norm()
        self.moe = BatchedMoE() if batched else LoopMoE()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.moe(self.norm2(x))


def routed_experts(block: Block, x: torch.Tensor) -> int:
    """How many experts the block's router sends at least one token of x to (the loop's
    `if mask.any()` skips the others)."""
    with torch.no_grad():
        moe = block.moe
        flat = block.norm2(x + block.attn(block.norm1(x))).reshape(-1, x.shape[-1])
        return int(moe.router(flat).argmax(-1).unique().numel())


def make(
    *, batched: bool = False, seed: int = 0, tokens: int = TOKENS
) -> tuple[Block, torch.Tensor]:
    """A block and its input of ``tokens`` per sequence; the seed fixes the weights and so the
    routing."""
    torch.manual_seed(seed)
    return Block(batched=batched), torch.randn(BATCH, tokens, DIM)


def training_step(block: Block, x: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
    optimizer.zero_grad()
    block(x).pow(2).mean().backward()
    optimizer.step()


@contextmanager
def module_ranges(model: nn.Module) -> Iterator[None]:
    """Every module call of model inside a ``nn.Module: {path} ({Type})`` range, the path from
    the model's class name and named_modules(): the form a capture writes."""
    root = type(model).__name__
    ranges: list[Any] = []
    handles = []
    for name, module in model.named_modules():
        label = f"nn.Module: {root}{'.' + name if name else ''} ({type(module).__name__})"

        def enter(_module: nn.Module, _args: Any, label: str = label) -> None:
            ranges.append(torch.profiler.record_function(label).__enter__())

        def leave(_module: nn.Module, _args: Any, _out: Any) -> None:
            ranges.pop().__exit__(None, None, None)

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
