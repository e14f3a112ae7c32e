"""JAX scope paths (``jax.named_scope``, Flax module names) of device work -> module calls.

XLA keeps each op's JAX name in its metadata, and the profiler writes it on the device events:
stat ``name`` on a GPU's kernels (``jit(train_step)/transformer/layer_0/mlp/dot_general``),
``tf_op`` where that holds it (a TPU's XLA ops; ``XlaModule:`` alone, as ROCm writes it, names
nothing). The path is the name's ``/`` segments less the last (the primitive) and less JAX's
transformations (``jit(f)``, ``jvp(...)``, ``transpose(...)``, ``vmap``, ...): what remains is
the user's scopes, outermost first (``transformer.layer_0.mlp``).

Where some kernel of a file has a scope, each kernel gets a launching op (category ``xla_op``,
named by its primitive, ``dot_general``, spanning the kernel) on a lane of its device's
process per stream (tid = stream + 1; the device's XLA Ops line is tid 0), and the ops of one
scope on a lane are enclosed by module-call rows ``nn.Module: {path} ({scope})`` (the capture's
form, read by ``Analysis.modules``; the type is the last scope less a ``_N`` suffix:
``layer_0`` -> ``layer``). Their times are the device's: a module's forward time is the span of
its kernels, backward (``transpose(jvp(...))``) kernels included. Without any scope the file's
tables are as before.
"""

from __future__ import annotations

import re
from typing import Any

from gpuprofile.importers.module_calls import Chain, module_calls
from gpuprofile.trace.model import NO_ID

# JAX's transformations in a name stack: "jit(f)", "jvp(...)", "transpose(jvp(f))", and the
# bare forms of those that take no name.
_TRANSFORM_CALL = re.compile(r"^[A-Za-z_][\w-]*\(.*\)$")
TRANSFORMS = frozenset(
    {"jit", "pjit", "jvp", "vmap", "transpose", "remat", "checkpoint", "rematted_computation",
     "shard_map", "xla_pmap", "pmap", "custom_jvp_call", "custom_vjp_call", "while", "body",
     "cond", "scan"}
)  # fmt: skip
NAME_STATS = ("name", "tf_op")
_INSTANCE = re.compile(r"_\d+$")


def op_name(stats: dict[str, Any]) -> str | None:
    """The JAX op name a device event carries (one with a "/"), else None."""
    for key in NAME_STATS:
        value = stats.get(key)
        if isinstance(value, str) and "/" in value:
            return value
    return None


def segments(name: str) -> list[str]:
    """A name stack's "/" segments; a "/" inside parentheses stays in its segment."""
    out: list[str] = []
    here: list[str] = []
    depth = 0
    for char in name:
        if char == "/" and depth == 0:
            out.append("".join(here))
            here = []
            continue
        depth += (char == "(") - (char == ")")
        here.append(char)
    out.append("".join(here))
    return out


def scope_chain(name: str) -> Chain:
    """[(path, type)] of a JAX op name's scopes, outermost first."""
    scopes = [
        s for s in segments(name)[:-1]
        if s and s not in TRANSFORMS and not _TRANSFORM_CALL.match(s)
    ]  # fmt: skip
    return [(".".join(scopes[: i + 1]), _INSTANCE.sub("", s) or s) for i, s in enumerate(scopes)]


def add_scopes(
    rows: dict[str, list[dict[str, Any]]],
    named: list[tuple[dict[str, Any], int, str]],
    thread_names: dict[str, str],
) -> None:
    """Launching ops and module calls for kernels with a scope (module docstring); ``named``:
    (kernel row, device pid, JAX op name) per kernel that has one."""
    chains = {i: scope_chain(name) for i, (_, _, name) in enumerate(named)}
    if not any(chains.values()):
        return
    ops = rows["ops"]
    for kernel in rows["kernels"]:
        kernel.setdefault("op_id", NO_ID)
    lanes = [int(kernel["stream"]) + 1 for kernel, _, _ in named]
    calls = module_calls(
        {i: c for i, c in chains.items() if c},
        [kernel["start_ns"] for kernel, _, _ in named],
        [kernel["dur_ns"] for kernel, _, _ in named],
        [device_pid for _, device_pid, _ in named],
        lanes,
    )
    # Module calls first: at an equal span, nesting takes the earlier row as the parent.
    for i, call in enumerate(calls["name"]):
        ops.append(
            {
                "name": call,
                "start_ns": int(calls["start_ns"][i]),
                "dur_ns": int(calls["dur_ns"][i]),
                "pid": int(calls["pid"][i]),
                "tid": int(calls["tid"][i]),
                "category": "user_annotation",
                "flops": float("nan"),
            }
        )
    for (kernel, device_pid, name), lane in zip(named, lanes, strict=True):
        kernel["op_id"] = len(ops)
        ops.append(
            {
                "name": segments(name)[-1] or name,
                "start_ns": kernel["start_ns"],
                "dur_ns": kernel["dur_ns"],
                "pid": device_pid,
                "tid": lane,
                "category": "xla_op",
                "flops": float("nan"),  # the kernel's own, where measured: not counted twice
            }
        )
        thread_names.setdefault(f"{device_pid}/{lane}", f"scopes, stream {lane - 1}")
