"""Each ``nn.Module`` call of the profiled code as a range in the capture, with no change to the
user's code: while the capture runs, ``nn.Module.__call__`` is a wrapper that opens a range named
``nn.Module: {path} ({Type})``, calls torch's own ``__call__`` and closes the range in a
``finally``.

Why a wrapper and not torch's global hooks (``register_module_forward_pre_hook``): any global
hook sends every module call through ``_call_impl``'s slow path (1.7 us a call on torch 2.13's
CPU build, against 0.2 us for the wrapper), and a forward hook does not run when a
``KeyboardInterrupt`` leaves the module, so the hooks had to find their calls by frame. The
wrapper's ``finally`` ends every call it began, on whatever leaves it. Module hooks of the user's
own still run, inside the call. A class with its own ``__call__`` that calls ``super().__call__``
(torch.compile's ``OptimizedModule``) passes through the wrapper too; one that calls
``_call_impl`` directly is not recorded.

The path starts at the outermost module called (its class name), then the names
``named_modules()`` gives (``Transformer.layers.3.mlp``); a module that is not in its caller's
tree (a model called inside another's forward, a module made on the fly) is named
``{caller's path}.{Class}`` and its own submodules are named from it.

The ranges are torch's ``_RecordFunctionFast`` (0.8-1.6 us a range, against 1.8-5 us for
``_record_function_with_args_enter``); they land as ``cpu_op``, and the Kineto reader makes them
``user_annotation`` (importers/kineto/capture_ranges.py), the form the analyses read. A torch
without it gets ``record_function`` (``user_annotation`` already).

Cost is per call, so the common call does little: each place a module is called at (its
caller's place and the module) is worked out once, with its range's name, and kept with the
root's tree, weakly, across captures; a call checks it with one dict lookup (the caller still
holds the module under that name), so a model whose structure changed between calls is
renamed, not misnamed. The names come from a map per root (``named_modules()``). Each thread
keeps its own stack of open calls (the callers).

While dynamo traces (``torch.compile``) the wrapper only calls torch's: dynamo reads
``torch.compiler.is_compiling()`` as a constant, so the compiled graph holds no range and no
graph break. Modules run inside compiled code have no range; the compiled module's call has one.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from gpuprofile.trace.model import MODULE_PREFIX

# torch.compile's wrapper: named and shown as the module it wraps (its _orig_mod).
_WRAPPER = "OptimizedModule"
_WRAPPED = "_orig_mod"

# torch's own, private; record_function where a version lacks it.
_Range: Any = getattr(torch._C._profiler, "_RecordFunctionFast", None) or (
    torch.autograd.profiler.record_function
)
_is_compiling = torch.compiler.is_compiling
# A place's children are pruned of modules gone once they number this many.
_PRUNE_FROM = 64


# A module's place in a tree: (weak reference, name, its parent's name, its attribute in the
# parent, its name as shown). The weak reference tells an id reused by a new object from the old.
_Entry = tuple["weakref.ref[torch.nn.Module]", str, str, str, str]


class _Tree:
    """The qualified names of one root's submodules, by id."""

    def __init__(self, root: torch.nn.Module) -> None:
        self.root = weakref.ref(root)
        self.names: dict[int, _Entry] = {}
        self.place: _Place | None = None  # the root's, called by no other module
        self.build()

    def build(self) -> None:
        root = self.root()
        self.names = {}
        if root is not None:
            for name, module in root.named_modules():
                if id(module) not in self.names:  # a module held twice keeps its first name
                    self.names[id(module)] = _entry(module, name)

    def name_of(
        self, module: torch.nn.Module, caller: _Place, held_by: torch.nn.Module
    ) -> _Entry | None:
        """The module's entry, checked against the tree as it is now; None when the module
        is not in it. ``caller`` (a call of ``held_by``) is in this tree."""
        entry = self.names.get(id(module))
        if entry is not None and entry[0]() is module:
            if self._holds(module, entry):
                return entry
            self.build()  # the structure changed since the map was made
            entry = self.names.get(id(module))
            return entry if entry is not None and entry[0]() is module else None
        # Not in the map: a child added to the caller since (looked for among the caller's
        # own children only: a full walk would run on every call of a module made on the fly).
        for attr, child in held_by._modules.items():
            if child is module:
                entry = _entry(module, f"{caller.name}.{attr}" if caller.name else attr)
                self.names[id(module)] = entry
                return entry
        return None

    def _holds(self, module: torch.nn.Module, entry: _Entry) -> bool:
        """Whether the entry's name still leads from the root to ``module``."""
        node: torch.nn.Module | None = self.root()
        if entry[1]:
            for part in entry[1].split("."):
                node = node._modules.get(part) if node is not None else None
        return node is module


def _entry(module: torch.nn.Module, name: str) -> _Entry:
    parent, _, attr = name.rpartition(".")
    return weakref.ref(module), name, parent, attr, shown_name(name)


@dataclass(slots=True, eq=False)
class _Place:
    """Where a module is called: by the root (no caller) or from its caller's place."""

    module: weakref.ref[torch.nn.Module]
    tree: _Tree  # the tree its name is in (a nested root starts its own)
    name: str  # in that tree, '' for its root
    base: str  # the path of that tree's root call
    path: str
    # The names from the caller's module down to this one (("layers", "3") through a
    # ModuleList not called itself): the place holds while they still lead to the module.
    # None: a root, or a nested root (it holds while the caller does not hold the module).
    route: tuple[str, ...] | None
    attr: str | None  # route's one name, where it has one: checked inline on every call
    label: str | None  # the range's name; None: no range (torch.compile's wrapped module)
    children: dict[int, _Place] = field(default_factory=dict)  # by the callee's id


# One open call: its place and its module (the callees' caller).
_Call = tuple[_Place, torch.nn.Module]


class ModuleRanges:
    """The wrapper of one capture: ``install()`` after the profiler starts, ``remove()`` before
    it stops (never raises: the capture's teardown must go on)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._torch_call: Any = None  # nn.Module.__call__ as it was; None while not installed
        self._installed: Any = None  # the wrapper set in its place
        # The outermost modules called while installed: --memory asks them for their
        # parameters and gradients when the capture ends (capture/tensor_roles.py).
        self.roots: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()

    def install(self) -> None:
        torch_call = torch.nn.Module.__call__
        local = self._local
        place_of = self._place
        roots = self.roots

        def __call__(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            # Runs on every module call: the common case (a place seen before) is inlined.
            if _is_compiling() or self._installed is None:
                return torch_call(module, *args, **kwargs)
            try:
                stack: list[_Call] = local.stack
            except AttributeError:
                stack = local.stack = []
            if stack:
                caller, held_by = stack[-1]
                place = caller.children.get(id(module))
                if (
                    place is None
                    or place.module() is not module
                    or held_by._modules.get(place.attr) is not module  # type: ignore[arg-type]
                ):
                    place = place_of(module, caller, held_by, place)
            else:
                roots.add(module)
                tree = _tree_of(module)
                place = tree.place
                if place is None:
                    path = type_name(module)
                    place = tree.place = _place(module, tree, "", path, path, None)
            label = place.label
            if label is None:  # torch.compile's wrapped module: its wrapper's range stands
                stack.append((place, module))
                try:
                    return torch_call(module, *args, **kwargs)
                finally:
                    stack.pop()
            handle = _Range(label)
            handle.__enter__()
            stack.append((place, module))
            try:
                return torch_call(module, *args, **kwargs)
            finally:
                stack.pop()
                _close(handle)

        __call__.__wrapped__ = torch_call  # type: ignore[attr-defined]
        self._torch_call = torch_call
        self._installed = __call__
        torch.nn.Module.__call__ = __call__  # type: ignore[method-assign]

    def remove(self) -> None:
        installed, self._installed = self._installed, None
        if installed is not None and torch.nn.Module.__call__ is installed:
            torch.nn.Module.__call__ = self._torch_call  # type: ignore[method-assign]
        # Else something set its own wrapper over ours since: it stays, and ours, still beneath
        # it, only calls torch's (self._installed is None).

    def _place(
        self, module: torch.nn.Module, caller: _Place, held_by: torch.nn.Module, seen: _Place | None
    ) -> _Place:
        """The module's place when called from ``caller`` (a call of ``held_by``): ``seen``,
        the one kept, where it still holds, else worked out from the tree as it is now and kept
        in ``caller.children``."""
        if (
            seen is not None
            and seen.module() is module
            and (
                _reaches(held_by, seen.route, module)
                if seen.route is not None
                else _still_nested(module, caller, held_by)
            )
        ):
            return seen
        tree = caller.tree
        entry: _Entry | None = tree.names.get(id(module))
        if not (
            entry is not None
            and entry[0]() is module
            and entry[2] == caller.name
            and held_by._modules.get(entry[3]) is module
        ):  # not called by its parent as the map has it
            entry = tree.name_of(module, caller, held_by)
        if entry is None:  # a root of its own, under its caller
            path = f"{caller.path}.{type_name(module)}"
            place = _place(module, _tree_of(module), "", path, path, None)
        else:
            path = f"{caller.base}.{entry[4]}" if entry[4] else caller.base
            route = _route(entry[1], caller.name)
            place = _place(module, tree, entry[1], caller.base, path, route)
            if route is None or not _reaches(held_by, route, module):
                return place  # a module held twice, called by a holder not its first: not kept
            if route == (_WRAPPED,):
                place.label = None  # torch.compile's wrapper already stands for this call
        children = caller.children
        children[id(module)] = place
        count = len(children)
        if count >= _PRUNE_FROM and count & (count - 1) == 0:  # at each power of two: O(1) a call
            # Modules made on the fly come and go; their places go with them.
            for key in [key for key, kept in children.items() if kept.module() is None]:
                del children[key]
        return place


def _place(
    module: torch.nn.Module,
    tree: _Tree,
    name: str,
    base: str,
    path: str,
    route: tuple[str, ...] | None,
) -> _Place:
    label = f"{MODULE_PREFIX}{path} ({type_name(module)})"
    attr = route[0] if route is not None and len(route) == 1 else None
    return _Place(weakref.ref(module), tree, name, base, path, route, attr, label)


def _route(name: str, caller: str) -> tuple[str, ...] | None:
    """The names from the caller (named ``caller`` in the tree) down to ``name``; None where
    ``name`` is not under it."""
    if not caller:
        return tuple(name.split(".")) if name else None
    if name.startswith(caller) and name[len(caller) : len(caller) + 1] == ".":
        return tuple(name[len(caller) + 1 :].split("."))
    return None


def _reaches(held_by: torch.nn.Module, route: tuple[str, ...], module: torch.nn.Module) -> bool:
    node: torch.nn.Module | None = held_by
    for name in route:
        node = node._modules.get(name) if node is not None else None
    return node is module


def _still_nested(module: torch.nn.Module, caller: _Place, held_by: torch.nn.Module) -> bool:
    """Whether a module named as a root under its caller still is: in neither the caller's
    tree nor its children."""
    entry = caller.tree.names.get(id(module))
    if entry is not None and entry[0]() is module:
        return False
    return all(child is not module for child in held_by._modules.values())


def _close(handle: Any) -> None:
    try:  # noqa: SIM105 (per call: suppress() would cost a context manager more)
        handle.__exit__(None, None, None)
    except RuntimeError:  # one opened while no window recorded has no guard: torch raises
        pass


# Per root module, its tree; kept across captures, dropped with the module.
_trees: dict[int, tuple[weakref.ref[torch.nn.Module], _Tree]] = {}
# Per module class, the name shown (None: torch.compile's wrapper, shown as what it wraps).
_types: dict[type, str | None] = {}


def _tree_of(root: torch.nn.Module) -> _Tree:
    key = id(root)
    held = _trees.get(key)
    if held is not None and held[0]() is root:
        return held[1]
    tree = _Tree(root)

    def forget(ref: weakref.ref[torch.nn.Module]) -> None:
        if _trees.get(key, (None,))[0] is ref:
            del _trees[key]

    _trees[key] = (weakref.ref(root, forget), tree)
    return tree


def type_name(module: torch.nn.Module) -> str:
    """The class shown; torch.compile's wrapper shows the module it wraps."""
    cls = type(module)
    try:
        shown = _types[cls]
    except KeyError:
        shown = _types[cls] = None if cls.__name__ == _WRAPPER else cls.__name__
    if shown is None:
        wrapped = module._modules.get(_WRAPPED)
        return type(wrapped).__name__ if wrapped is not None else cls.__name__
    return shown


def shown_name(name: str) -> str:
    """A name without torch.compile's wrapper step (``block._orig_mod.fc`` -> ``block.fc``)."""
    if _WRAPPED not in name:
        return name
    return ".".join(part for part in name.split(".") if part != _WRAPPED)
