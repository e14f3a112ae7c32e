"""Each ``nn.Module`` call of the profiled code as a range in the capture, with no change to the
user's code: two global hooks (torch's ``register_module_forward_pre_hook`` and
``register_module_forward_hook(always_call=True)``) open and close a range named
``nn.Module: {path} ({Type})``.

The path starts at the outermost module called (its class name), then the names
``named_modules()`` gives (``Transformer.layers.3.mlp``); a module that is not in its caller's
tree (a model called inside another's forward, a module made on the fly) is named
``{caller's path}.{Class}`` and its own submodules are named from it.

The ranges are torch's ``_RecordFunctionFast`` (0.8-1.6 us a range on torch 2.13's CPU build,
against 1.8-5 us for ``_record_function_with_args_enter``); they land as ``cpu_op``, and the
Kineto reader makes them ``user_annotation`` (importers/kineto/capture_ranges.py), the form the
analyses read. A torch without it gets ``record_function`` (``user_annotation`` already).

Cost is per call, so the common call does little: each place a module is called at (its
caller's place and the module) is worked out once, with its range's name, and kept with the
root's tree, weakly, across captures; a call checks it with one dict lookup (the caller still
holds the module under that name), so a model whose structure changed between calls is
renamed, not misnamed. The names come from a map per root (``named_modules()``).

A forward hook marked ``always_call`` still does not run when a ``KeyboardInterrupt`` (not an
``Exception``) leaves the module, so each thread keeps its own stack of open calls, each with the
frame of its ``_call_impl``: a call whose frame no longer runs is closed at the next module call
and at the end of the capture, so no range stays open and later work is not nested in it.

While dynamo traces (``torch.compile``) the hooks do nothing: dynamo reads
``torch.compiler.is_compiling()`` as a constant, so the compiled graph holds no range and no
graph break. Modules run inside compiled code have no range; the compiled module's call has one.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.nn.modules import module as nn_module

from gpuprofile.trace.model import MODULE_PREFIX

# torch.compile's wrapper: named and shown as the module it wraps (its _orig_mod).
_WRAPPER = "OptimizedModule"
_WRAPPED = "_orig_mod"
# OptimizedModule warns on every call site while global hooks exist; the hooks are ours.
_COMPILE_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"

# torch's own, private; record_function where a version lacks it.
_Range: Any = getattr(torch._C._profiler, "_RecordFunctionFast", None) or (
    torch.autograd.profiler.record_function
)
_is_compiling = torch.compiler.is_compiling
_frame_of = sys._getframe
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


# One open call: its _call_impl's frame (says which call the forward hook ends), its place,
# its module (the callees' caller), its open range.
_Call = tuple[FrameType, _Place, torch.nn.Module, Any]


class ModuleRanges:
    """The hooks of one capture: ``install()`` after the profiler starts, ``remove()`` before it
    stops (never raises: the capture's teardown must go on)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._stacks: dict[int, list[_Call]] = {}  # thread id -> its stack, closed at the end
        self._handles: list[Any] = []
        self._owner = threading.get_ident()

    def install(self) -> None:
        if "torch._dynamo.eval_frame" in sys.modules:
            # Only where torch.compile has been used: a filter added makes Python drop every
            # call site's record of warnings already shown (about +0.3 ms on a 5 ms cell).
            warnings.filterwarnings("ignore", message=_COMPILE_WARNING, category=UserWarning)
        # One at a time: remove() takes away whatever got installed.
        self._handles.append(nn_module.register_module_forward_pre_hook(self._pre))
        self._handles.append(nn_module.register_module_forward_hook(self._post, always_call=True))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        _drop_warning_filter()
        # Ranges the capture's own thread left open (an interrupt): closed innermost first.
        # Another thread's are left to it: closing them here would race its hooks.
        stack = self._stacks.pop(self._owner, [])
        while stack:
            _close(stack.pop()[3])

    def _new_stack(self) -> list[_Call]:
        stack: list[_Call] = self._stacks.setdefault(threading.get_ident(), [])
        self._local.stack = stack
        return stack

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        # Runs on every module call: the common case (a place seen before) is inlined.
        if _is_compiling():
            return
        try:
            stack: list[_Call] = self._local.stack
        except AttributeError:
            stack = self._new_stack()
        frame = _frame_of(1)
        if stack:
            # The caller's call still runs: its frame is a few frames up.
            running = stack[-1][0]
            walk = frame.f_back
            while walk is not None and walk is not running:
                walk = walk.f_back
            if walk is None:
                _close_finished(stack, frame)
        if stack:
            _, caller, held_by, _ = stack[-1]
            place = caller.children.get(id(module))
            if (
                place is None
                or place.module() is not module
                or held_by._modules.get(place.attr) is not module  # type: ignore[arg-type]
            ):
                place = self._place(module, caller, held_by, place)
        else:
            tree = _tree_of(module)
            place = tree.place
            if place is None:
                path = type_name(module)
                place = tree.place = _place(module, tree, "", path, path, None)
        if place.label is not None:
            handle = _Range(place.label)
            handle.__enter__()
            stack.append((frame, place, module, handle))

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

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if _is_compiling():
            return
        try:
            stack: list[_Call] = self._local.stack
        except AttributeError:
            return
        if not stack:
            return
        frame = _frame_of(1)
        if stack[-1][0] is frame:
            _close(stack.pop()[3])
            return
        for at in range(len(stack) - 2, -1, -1):
            if stack[at][0] is frame:
                while len(stack) > at:  # inner calls an interrupt left open end here too
                    _close(stack.pop()[3])
                return
        # Not ours: a call that began before the hooks were installed, or was skipped.


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


def _close_finished(stack: list[_Call], current: FrameType) -> None:
    """Close the calls whose frames no longer run (an interrupt skipped their hooks)."""
    running: set[int] = set()
    walk: FrameType | None = current
    while walk is not None:
        running.add(id(walk))
        walk = walk.f_back
    while stack and id(stack[-1][0]) not in running:
        _close(stack.pop()[3])


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


def _drop_warning_filter() -> None:
    """Take away the filter install() added (filterwarnings has no inverse)."""
    kept = [f for f in warnings.filters if getattr(f[1], "pattern", None) != _COMPILE_WARNING]
    if len(kept) != len(warnings.filters):
        warnings.filters[:] = kept  # type: ignore[index]
        # Python's own filterwarnings does this, so cached "already warned" states are reset.
        mutated = getattr(warnings, "_filters_mutated", None)
        if mutated is not None:
            mutated()
