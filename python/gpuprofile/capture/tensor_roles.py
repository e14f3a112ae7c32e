"""With ``--memory``: the tensors whose role the capture knows when it ends, so the memory view
can tell parameters, gradients and optimizer state from the rest by address.

The outermost modules the capture saw called give their parameters and gradients; every
optimizer that stepped during the capture (a global step post-hook) gives its parameters, their
gradients and its state. A tensor is named by its storage's address and size, as the
allocator's events name a block. What the capture did not see (a model never called inside it,
an optimizer that never stepped) stays unnamed, and the analyses classify it by when it lived.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch

from gpuprofile.capture.modules import type_name
from gpuprofile.trace.meta import TensorRole

PARAMETERS, GRADIENTS, OPTIMIZER_STATE = "parameters", "gradients", "optimizer state"


class TensorRoles:
    """``install()`` as the capture starts, ``roles(roots)`` and ``remove()`` as it ends."""

    def __init__(self) -> None:
        self._optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._hook: Any = None

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._hook = register_optimizer_step_post_hook(
            lambda optimizer, _args, _kwargs: self._optimizers.add(optimizer)
        )

    def remove(self) -> None:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook.remove()

    def roles(self, roots: Iterable[torch.nn.Module]) -> tuple[TensorRole, ...]:
        """Each known tensor once, by (device, address); a parameter's role wins over a
        state tensor that shares its storage."""
        found: dict[tuple[int, int], TensorRole] = {}

        def add(tensor: Any, role: str, owner: str) -> None:
            if not isinstance(tensor, torch.Tensor) or tensor.is_meta:
                return
            try:
                storage = tensor.untyped_storage()
                addr, size = int(storage.data_ptr()), int(storage.nbytes())
            except (RuntimeError, NotImplementedError):  # sparse, functional wrappers
                return
            device = tensor.device.index if tensor.device.type != "cpu" else -1
            key = (device if device is not None else 0, addr)
            if addr and size and key not in found:
                found[key] = TensorRole(
                    addr=addr, bytes=size, device=key[0], role=role, owner=owner
                )

        for root in list(roots):
            prefix = type_name(root)
            for name, parameter in root.named_parameters():
                add(parameter, PARAMETERS, f"{prefix}.{name}")
                add(parameter.grad, GRADIENTS, f"{prefix}.{name}")
        for optimizer in list(self._optimizers):
            owner = type(optimizer).__name__
            for group in optimizer.param_groups:
                for parameter in group.get("params", ()):
                    add(parameter, PARAMETERS, owner)
                    add(getattr(parameter, "grad", None), GRADIENTS, owner)
            for state in optimizer.state.values():
                for value in state.values() if isinstance(state, dict) else ():
                    add(value, OPTIMIZER_STATE, owner)
        return tuple(found.values())
