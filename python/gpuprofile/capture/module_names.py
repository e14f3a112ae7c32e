"""With ``--stack``, the modules' paths for torch's own module events.

With ``with_stack`` torch records each module call itself, as ``nn.Module: {Class}_{N}``,
where N counts the instances of that class in the order the capture first called them, and
the capture's module ranges (modules.py) are off: torch's Python tracer would record their
hooks' own calls. What is lost is the path (``Block.attn``, not ``Block_0.Attention_0``).
A forward pre-hook that only notes each module as it is first called (a weak reference, so a
module made on the fly is not kept alive; torch's tracer records the hook's call and ``id``'s)
gives the same order; at the end each ``{Class}_{N}`` is mapped to the module's path from the
outermost module called, named as the module ranges name it (the root's class, then
``named_modules()`` names). The analysis reads the map from ``TraceMeta.module_names``.

The hook runs until the first step (``optimizer.step()`` or ``gpuprofile.step()``) of what is
recorded ends, then comes off: one step of a training loop calls its modules in the order every
step does, and each hooked call costs 6-35 us under ``with_stack`` (torch's slow call path and
its tracer's events for the hook's own calls). A module that a later step calls first is not
mapped, and keeps torch's chain; a capture with no steps keeps the hook to its end.

With ``--steps`` torch numbers the instances afresh in each window: the order is noted per
window (from the step that starts its recording to the step that hands it over), and the map
is kept only when every window's is the same, as in a loop whose steps call the same modules
in the same order. Not mapped, so read as torch's chains: a class name two classes share
(torch counts each class apart but names both ``Block_0``), and windows that disagree. Like
``TraceMeta.cells``, the map is what the running process knows: a file exported by the
capture read again later has torch's names.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.nn.modules import module as nn_module

from gpuprofile.capture.modules import shown_name, type_name

_is_compiling = torch.compiler.is_compiling


class ModuleNames:
    """The hook of one capture: ``install()`` after the profiler starts, ``remove()`` before
    it stops; ``names()`` once it has."""

    def __init__(self, *, windows: bool = False) -> None:
        # id -> (module, its class), in first-call order: one gone since still has its number.
        self._seen: dict[int, tuple[weakref.ref[torch.nn.Module], type]] = {}
        self._handle: Any = None
        self._windows = windows
        self._in_window = False
        self._window_names: dict[str, str] | None = None  # every window's, while they agree
        self._agree = True

    def install(self) -> None:
        if self._handle is None:
            self._handle = nn_module.register_module_forward_pre_hook(self._called)

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _called(self, module: torch.nn.Module, args: Any) -> None:
        if not _is_compiling():  # dynamo reads it as a constant: no graph break
            key = id(module)
            if key not in self._seen:
                self._seen[key] = (weakref.ref(module), type(module))

    def stepped(self, count: int) -> None:
        """Step ``count`` ended (after the profiler's step). The hook comes off once a step
        of what is recorded has run (it goes on again as the next window starts): a global
        hook sends every module call through torch's slow call path, and under ``with_stack``
        torch's tracer records the hook's own calls, about 5 events a module call. A module a
        later step calls first keeps torch's chain."""
        if self._seen or (self._windows and not self._in_window):
            self.remove()

    def recording(self, started: bool) -> None:
        """A --steps window starts (True) or stops (False) recording."""
        if started:
            self._seen = {}
            self._in_window = True
            self.install()
        elif self._in_window:
            self._in_window = False
            names = self._names_now()
            if self._window_names is None:
                self._window_names = names
            self._agree = self._agree and names == self._window_names

    def names(self) -> dict[str, str]:
        """``{Class}_{N}`` -> the module's path, for the modules the capture called."""
        if not self._windows:
            return self._names_now()
        self.recording(False)  # a window the capture's end stopped
        return (self._window_names or {}) if self._agree else {}

    def _names_now(self) -> dict[str, str]:
        called = list(self._seen.values())
        self._seen = {}
        seen = [module for ref, _ in called if (module := ref()) is not None]
        links: dict[int, str] = {}
        count: dict[str, int] = {}
        classes: dict[str, type] = {}
        shared: set[str] = set()
        for ref, cls in called:  # a module gone since counts in torch's numbering too
            name = cls.__name__
            if classes.setdefault(name, cls) is not cls:
                shared.add(name)
            number = count.get(name, 0)
            count[name] = number + 1
            module = ref()
            if module is not None:
                links[id(module)] = f"{name}_{number}"
        out: dict[str, str] = {}
        for root in _roots(seen):
            base = type_name(root)
            for name, module in root.named_modules():
                link = links.get(id(module))
                if link is not None and link not in out:
                    shown = shown_name(name)
                    out[link] = f"{base}.{shown}" if shown else base
        return {link: path for link, path in out.items() if link.rpartition("_")[0] not in shared}


def _roots(seen: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """The called modules no other called module holds, however deep (a ``ModuleList``
    between them is not called itself), in first-call order."""
    held: set[int] = set()
    pending = [child for module in seen for child in module._modules.values()]
    while pending:
        module = pending.pop()
        if module is not None and id(module) not in held:
            held.add(id(module))
            pending.extend(module._modules.values())
    return [module for module in seen if id(module) not in held]
