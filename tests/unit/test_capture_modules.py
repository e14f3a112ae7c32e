"""The capture's own module ranges (capture/modules.py), checked against the test's own hooks:
each test registers forward pre-hooks on every module it calls, naming them from its own
``named_modules()`` walk, and compares path, type and count of every ``nn.Module:`` range."""

from __future__ import annotations

import contextlib
import gc
import json
import re
import threading
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from torch.nn.modules import module as nn_module

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.capture import modules as capture_modules
from gpuprofile.capture.modules import ModuleRanges

RANGE = re.compile(r"^nn\.Module: (\S+) \((\w+)\)$")


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(self.act(x)))  # act: called twice per call


class Net(torch.nn.Module):
    def __init__(self, layers: int = 3) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([MLP() for _ in range(layers)])
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class Calls:
    """The truth: per module call, the path the test itself expects (root class, then the
    names of the test's own named_modules() walk), recorded by per-module pre-hooks."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.threads: list[int] = []  # the thread of each call seen
        self._handles: list[Any] = []

    def watch(self, root: torch.nn.Module, prefix: str | None = None) -> None:
        base = prefix if prefix is not None else type(root).__name__
        for name, module in root.named_modules():
            path = f"{base}.{name}" if name else base
            shown = type(module).__name__
            self._handles.append(
                module.register_forward_pre_hook(
                    lambda m, a, path=path, shown=shown: self._saw(path, shown)
                )
            )

    def _saw(self, path: str, shown: str) -> None:
        self.seen.append((path, shown))
        self.threads.append(threading.get_ident())

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def ranges(profile: gpuprofile.Profile) -> pd.DataFrame:
    """The capture's module ranges: path, type, start, end, thread."""
    ops = profile.trace.ops
    rows = []
    for row in ops.itertuples():
        match = RANGE.match(str(row.name))
        if match and row.category == "user_annotation":
            rows.append(
                (match[1], match[2], row.start_ns, row.start_ns + row.dur_ns, row.tid, row.dur_ns)
            )
    frame = pd.DataFrame(rows, columns=["path", "type", "start", "end", "tid", "dur"])
    return frame.sort_values(["start", "dur"], ascending=[True, False], kind="stable")


def assert_nested(found: pd.DataFrame) -> None:
    """Ranges of one thread are nested or apart, never crossing: each range ends within the
    range that encloses its start."""
    for _, thread in found.groupby("tid"):
        items = list(thread[["start", "end", "path"]].itertuples(index=False))
        for a in items:
            for b in items:
                if a is not b and a.start <= b.start < a.end:
                    assert b.end <= a.end, f"{b.path} ends after {a.path}"


def enclosing(found: pd.DataFrame, row: Any) -> list[str]:
    """Paths of the ranges on the same thread that enclose ``row``'s start."""
    same = found[(found["tid"] == row.tid) & (found["path"] != row.path)]
    return list(same[(same["start"] <= row.start) & (same["end"] > row.start)]["path"])


@pytest.fixture
def hooks_untouched() -> Iterator[None]:
    """torch's global hook tables, ``nn.Module.__call__`` and the warning filters are as they
    were: none of ours is left behind."""
    call = torch.nn.Module.__call__
    before = (
        dict(nn_module._global_forward_pre_hooks),
        dict(nn_module._global_forward_hooks),
        dict(nn_module._global_forward_hooks_always_called),
    )
    yield
    assert torch.nn.Module.__call__ is call
    for table, was in zip(
        (
            nn_module._global_forward_pre_hooks,
            nn_module._global_forward_hooks,
            nn_module._global_forward_hooks_always_called,
        ),
        before,
        strict=True,
    ):
        assert dict(table) == was
        owners = [getattr(hook, "__self__", None) for hook in table.values()]
        assert not any(isinstance(owner, ModuleRanges) for owner in owners)
    # The filter that hid torch.compile's warning about global hooks is gone (libraries
    # imported meanwhile may have added their own).
    assert not [f for f in warnings.filters if f[1] is not None and "global hooks" in f[1].pattern]


def profiled(block: Callable[[], Any], **options: Any) -> gpuprofile.Profile:
    with gpuprofile.profile(interval=0, **options) as p:
        block()
    return p


def test_every_call_is_a_range_with_its_path_type_and_count(hooks_untouched: None) -> None:
    torch.manual_seed(0)
    model, x = Net(), torch.randn(4, 8)
    calls = Calls()
    calls.watch(model)

    def block() -> None:
        model(x).sum().backward()  # backward calls no module: no range of its own
        model(x)

    p = profiled(block)
    calls.remove()
    found = ranges(p)
    assert Counter(zip(found["path"], found["type"], strict=True)) == Counter(calls.seen)
    assert Counter(calls.seen)[("Net.layers.1.act", "ReLU")] == 4  # twice a call, two calls
    # In the order called (a parent starts before its children).
    assert list(zip(found["path"], found["type"], strict=True)) == calls.seen
    assert_nested(found)
    paths = set(found["path"])
    for row in found.itertuples():  # each inside the range of the module that called it
        callers = [q for q in paths if row.path.startswith(q + ".")]
        around = enclosing(found, row)
        assert (max(callers, key=len) in around) if callers else not around


def test_a_model_called_inside_anothers_forward_is_named_under_its_caller(
    hooks_untouched: None,
) -> None:
    inner = Net(layers=1)

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return inner(self.proj(x))  # not a submodule: a root of its own

    outer, x = Outer(), torch.randn(2, 8)
    calls = Calls()
    calls.watch(outer)
    calls.watch(inner, prefix="Outer.Net")
    p = profiled(lambda: (outer(x), inner(x)))
    calls.remove()
    # Called alone after, the inner model is a root: its own class name starts its path.
    alone = [(path.replace("Outer.Net", "Net", 1), shown) for path, shown in calls.seen[-6:]]
    expected = calls.seen[:-6] + alone
    found = ranges(p)
    assert list(zip(found["path"], found["type"], strict=True)) == expected
    assert ("Outer.Net.layers.0.fc", "Linear") in expected
    assert_nested(found)


def test_a_module_that_raises_leaves_balanced_ranges_and_a_partial_profile(
    hooks_untouched: None,
) -> None:
    class Bad(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("bad input")

    model, x = Net(layers=2), torch.randn(2, 8)
    model.layers[1].act = Bad()
    calls = Calls()
    calls.watch(model)
    with pytest.raises(ValueError, match="bad input"), gpuprofile.profile(interval=0) as p:
        model(x)
    calls.remove()
    assert p.partial
    found = ranges(p)
    assert Counter(zip(found["path"], found["type"], strict=True)) == Counter(calls.seen)
    assert ("Net.layers.1.act", "Bad") in calls.seen
    assert_nested(found)


def test_an_interrupt_caught_in_the_block_closes_the_ranges_it_left_open(
    hooks_untouched: None,
) -> None:
    class Stop(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.armed = True

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.armed:
                self.armed = False
                raise KeyboardInterrupt  # torch runs no always_call hook for it
            return x

    model, x = Net(layers=2), torch.randn(2, 8)
    model.layers[0].act = Stop()
    calls = Calls()
    calls.watch(model)

    def block() -> None:
        with contextlib.suppress(KeyboardInterrupt):
            model(x)
        torch.ones(3).sum()  # between the two calls: no module runs it
        model(x)

    p = profiled(block)
    calls.remove()
    found = ranges(p)
    assert Counter(zip(found["path"], found["type"], strict=True)) == Counter(calls.seen)
    assert_nested(found)
    # The second call of the model is a root again, not nested in the interrupted calls.
    roots = found[found["path"] == "Net"]
    assert len(roots) == 2
    assert enclosing(found, roots.iloc[1]) == []


def test_an_interrupt_that_ends_the_block_leaves_no_range_open(hooks_untouched: None) -> None:
    class Stop(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise KeyboardInterrupt

    model, x = Net(layers=1), torch.randn(2, 8)
    model.layers[0].fc = Stop()
    with pytest.raises(KeyboardInterrupt), gpuprofile.profile(interval=0) as p:
        model(x)
    assert p.partial
    found = ranges(p)
    assert list(found["path"]) == ["Net", "Net.layers.0", "Net.layers.0.act", "Net.layers.0.fc"]
    assert_nested(found)
    # Closed by the capture's end: every range still lies within the capture.
    assert (found["end"] <= p.trace.ops["start_ns"].max() + p.trace.ops["dur_ns"].max()).all()


def _new_list_and_head(model: Net) -> tuple[str, str]:
    """Swapped layers keep their objects under new names; a new type replaces the head."""
    model.layers = torch.nn.ModuleList([model.layers[1], model.layers[0]])
    model.head = torch.nn.Sequential(torch.nn.Linear(8, 2))
    return "Net.head.0", "Linear"


def _swap_inside_the_list(model: Net) -> tuple[str, str]:
    """The same list, each layer at the other's index: reached through a ModuleList that is not
    called itself, the kept place is checked name by name."""
    model.layers[0], model.layers[1] = model.layers[1], model.layers[0]
    return "Net.layers.1.fc", "Linear"


@pytest.mark.parametrize("change", [_new_list_and_head, _swap_inside_the_list])
def test_a_structure_changed_between_captures_is_named_as_it_now_is(
    hooks_untouched: None, change: Callable[[Net], tuple[str, str]]
) -> None:
    model, x = Net(layers=2), torch.randn(2, 8)
    profiled(lambda: model(x))  # each call's place is now kept for this model
    moved = model.layers[1]
    expected = change(model)
    calls = Calls()
    calls.watch(model)
    p = profiled(lambda: model(x))
    calls.remove()
    found = ranges(p)
    assert list(zip(found["path"], found["type"], strict=True)) == calls.seen
    assert expected in calls.seen
    assert model.layers[0] is moved  # the one called second before is first now


def test_modules_made_on_the_fly_are_named_each_call_and_do_not_pile_up(
    hooks_untouched: None,
) -> None:
    class Maker(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.ReLU()(self.fc(x))  # a new module each call, in no tree

    model, x = Maker(), torch.randn(2, 8)
    calls = 300
    p = profiled(lambda: [model(x) for _ in range(calls)])
    found = ranges(p)
    assert Counter(zip(found["path"], found["type"], strict=True)) == Counter(
        {("Maker", "Maker"): calls, ("Maker.fc", "Linear"): calls, ("Maker.ReLU", "ReLU"): calls}
    )
    assert_nested(found)
    gc.collect()
    # The root's place keeps its children's; those of the modules gone are pruned as they grow.
    kept = capture_modules._tree_of(model).place
    assert kept is not None
    assert len(kept.children) < 2 * capture_modules._PRUNE_FROM


def test_ranges_are_written_as_torch_records_them_and_read_as_module_calls(
    hooks_untouched: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranges are torch's cheapest (written ``cpu_op``); the export keeps them so, the
    reader makes them module calls. A torch without them gets record_function's
    ``user_annotation`` ranges: the same calls."""
    model, x = Net(layers=2), torch.randn(2, 8)
    calls = Calls()
    calls.watch(model)
    export = tmp_path / "trace.json"
    with gpuprofile.profile(interval=0, export=str(export)) as p:
        model(x)
    calls.remove()
    written = json.loads(export.read_text())["traceEvents"]
    categories = {e["cat"] for e in written if str(e.get("name", "")).startswith("nn.Module: ")}
    assert categories == {"cpu_op"}
    assert list(zip(ranges(p)["path"], ranges(p)["type"], strict=True)) == calls.seen
    operators = p.trace.ops[p.trace.ops["category"] == "cpu_op"]["name"].astype(str)
    assert not operators.str.startswith("nn.Module: ").any()

    monkeypatch.setattr(capture_modules, "_Range", torch.autograd.profiler.record_function)
    again = profiled(lambda: model(x))
    assert list(zip(ranges(again)["path"], ranges(again)["type"], strict=True)) == calls.seen


def test_modules_false_records_none_and_leaves_other_hooks_alone(hooks_untouched: None) -> None:
    seen: list[str] = []
    handle = nn_module.register_module_forward_pre_hook(lambda m, a: seen.append(type(m).__name__))
    try:
        model, x = Net(layers=1), torch.randn(2, 8)
        p = profiled(lambda: model(x), modules=False)
        assert ranges(p).empty
        assert "Net" in seen  # the user's own global hook ran throughout
        assert handle.id in nn_module._global_forward_pre_hooks
    finally:
        handle.remove()


def test_users_global_hooks_run_inside_the_recorded_calls(hooks_untouched: None) -> None:
    seen: list[str] = []
    handle = nn_module.register_module_forward_pre_hook(lambda m, a: seen.append(type(m).__name__))
    try:
        model, x = Net(layers=1), torch.randn(2, 8)
        calls = Calls()
        calls.watch(model)
        p = profiled(lambda: model(x))
        calls.remove()
        assert seen == [shown for _, shown in calls.seen]  # once a call, as without a capture
        assert list(zip(ranges(p)["path"], ranges(p)["type"], strict=True)) == calls.seen
    finally:
        handle.remove()


def test_a_wrapper_set_over_the_captures_stays_and_records_nothing_after(
    hooks_untouched: None,
) -> None:
    """Another tool that sets its own ``nn.Module.__call__`` during the capture keeps it after;
    the capture's, beneath it, only passes calls on."""
    model, x = Net(layers=1), torch.randn(2, 8)
    wrapped: list[str] = []

    def block() -> None:
        beneath = torch.nn.Module.__call__

        def theirs(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            wrapped.append(type(module).__name__)
            return beneath(module, *args, **kwargs)

        torch.nn.Module.__call__ = theirs  # type: ignore[method-assign]
        model(x)

    original = torch.nn.Module.__call__
    try:
        p = profiled(block)
        assert torch.nn.Module.__call__ is not original  # theirs stayed
        after = profiled(lambda: model(x))
    finally:
        torch.nn.Module.__call__ = original  # type: ignore[method-assign]
    assert next(iter(ranges(p)["path"])) == "Net"
    assert "Net" in wrapped
    # A later capture wraps again; the one left beneath passes calls on, adding no range.
    assert list(ranges(after)["path"]).count("Net") == 1


def test_a_compiled_model_runs_without_graph_breaks_or_warnings(hooks_untouched: None) -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model, x = Net(layers=2), torch.randn(2, 8)
    compiled = torch.compile(model, backend="eager")
    expected = model(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = profiled(lambda: [compiled(x) for _ in range(2)])
    assert not [w for w in caught if "global hooks" in str(w.message)]
    assert dict(counters["graph_break"]) == {}
    torch.testing.assert_close(compiled(x), expected)
    found = ranges(p)
    # The compiled call is named as the model it wraps; inside compiled code, no ranges.
    assert list(found["path"]) == ["Net", "Net"]
    assert set(found["type"]) == {"Net"}


def test_a_module_called_on_another_thread_keeps_its_own_stack(hooks_untouched: None) -> None:
    model, x = Net(layers=1), torch.randn(2, 8)
    expected = model(x)
    calls = Calls()
    calls.watch(model)
    results: list[torch.Tensor] = []
    started = threading.Event()
    go_on = threading.Event()

    class Pause(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()  # the worker is inside the model's call here
            go_on.wait(10)
            return x

    def worker() -> None:
        results.append(Pause()(model(x)))

    def block() -> None:
        thread = threading.Thread(target=worker)
        thread.start()
        started.wait(10)
        results.append(model(x))  # while the worker's call is open on its own thread
        go_on.set()
        thread.join()

    p = profiled(block)
    calls.remove()
    for result in results:
        torch.testing.assert_close(result, expected)
    # torch's profiler records the capture's thread only (a thread started inside the block
    # is not profiled): its ranges are the one call it made, not mixed with the worker's.
    found = ranges(p)
    here = threading.get_ident()
    own = [s for s, t in zip(calls.seen, calls.threads, strict=True) if t == here]
    assert list(zip(found["path"], found["type"], strict=True)) == own
    assert list(found["path"]).count("Net") == 1
    assert Counter(calls.seen)[("Net", "Net")] == 2
    assert_nested(found)


def test_with_stack_leaves_module_calls_to_torch(hooks_untouched: None) -> None:
    model, x = Net(layers=1), torch.randn(2, 8)
    p = profiled(lambda: model(x), with_stack=True)
    ops = p.trace.ops
    assert ranges(p).empty
    # torch's own events stand for the calls: one per module called (Net, MLP, fc, act x2, head)
    torch_form = ops[ops["name"].astype(str).str.startswith("nn.Module: ")]
    assert set(torch_form["category"]) == {"python_function"}
    assert len(torch_form) == 6
    # and no frame of our hooks is in its Python stacks
    assert not ops["name"].astype(str).str.contains("capture/modules.py").any()


def test_with_stack_torchs_events_read_the_paths(hooks_untouched: None) -> None:
    """torch names its module events {Class}_{N}; the capture maps them to the paths it saw
    the modules called at (capture/module_names.py). Truth: the test's own per-module hooks."""
    model, x = Net(layers=2), torch.randn(2, 8)
    calls = Calls()
    calls.watch(model)
    try:
        p = profiled(lambda: model(x), with_stack=True)
    finally:
        calls.remove()
    modules = Analysis(p.trace).modules
    found = Counter(modules.paths[m] for m in modules.calls["module"].tolist())
    assert found == Counter(path for path, _ in calls.seen)
    assert p.trace.meta.module_names["Linear_2"] == "Net.head"  # fc, fc, head: called 3rd


def test_with_stack_a_class_name_two_classes_share_keeps_torchs_chain(
    hooks_untouched: None,
) -> None:
    twin = type("MLP", (torch.nn.Module,), {"forward": lambda self, x: x * 2})
    model = torch.nn.Sequential(MLP(), twin())
    p = profiled(lambda: model(torch.randn(2, 8)), with_stack=True)
    names = p.trace.meta.module_names
    # torch counts each class apart but names both "MLP_0": which is which cannot be told, so
    # both read as torch's chain; the others by path.
    assert "MLP_0" not in names
    assert names["Sequential_0"] == "Sequential" and names["Linear_0"] == "Sequential.0.fc"
    paths = set(Analysis(p.trace).modules.paths)
    assert paths == {"Sequential", "Sequential.MLP_0", "Sequential.0.fc", "Sequential.0.act"}


def test_with_stack_and_steps_each_window_reads_the_paths(hooks_untouched: None) -> None:
    """torch numbers the instances afresh in each window: the map is made per window and kept
    as they agree (steps that call the same modules in the same order)."""
    model, x = Net(layers=1), torch.randn(2, 8)

    def block() -> None:
        for _ in range(4):
            model(x)
            gpuprofile.step()

    p = profiled(block, with_stack=True, steps=(0, 1))
    assert p.trace.meta.module_names["MLP_0"] == "Net.layers.0"
    paths = Analysis(p.trace).modules.paths
    assert "Net.layers.0.fc" in paths and not any("_0" in path for path in paths)


def test_with_stack_the_hook_comes_off_after_the_first_step(hooks_untouched: None) -> None:
    """The names' hook notes the first step's calls only: a module a later step first calls
    keeps torch's chain, and from the second step on no global hook is in place."""
    model, extra, x = Net(layers=1), torch.nn.Linear(8, 8), torch.randn(2, 8)
    hooked: list[int] = []

    def block() -> None:
        for step in range(3):
            hooked.append(len(nn_module._global_forward_pre_hooks))
            model(x)
            if step == 1:
                extra(x)  # first called in the second step
            gpuprofile.step()

    before = len(nn_module._global_forward_pre_hooks)
    p = profiled(block, with_stack=True)
    assert hooked == [before + 1, before, before]
    names = p.trace.meta.module_names
    assert names["MLP_0"] == "Net.layers.0"
    assert "Linear_2" not in names  # extra: torch numbers it after Net's fc and head
    paths = set(Analysis(p.trace).modules.paths)
    assert {"Net.layers.0.fc", "Net.head", "Linear_2"} <= paths


class Left(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Right(Left):
    pass


def test_with_stack_windows_that_disagree_keep_torchs_chains(hooks_untouched: None) -> None:
    """Windows whose modules were first called in other orders: Linear_0 is Left.fc in one and
    Right.fc in the other, so no map is made."""
    left, right, x = Left(), Right(), torch.randn(2, 8)

    def block() -> None:
        for order in ((left, right), (left, right), (right, left), (right, left)):
            for module in order:
                module(x)
            gpuprofile.step()

    p = profiled(block, with_stack=True, steps=(0, 1))
    assert p.trace.meta.module_names == {}
    paths = set(Analysis(p.trace).modules.paths)
    assert paths == {
        "Left_0",
        "Right_0",
        "Left_0.Linear_0",
        "Right_0.Linear_0",
        "Left_0.Linear_1",
        "Right_0.Linear_1",
    }


def test_with_stack_modules_made_on_the_fly_are_not_kept_alive(hooks_untouched: None) -> None:
    """The capture notes each module weakly: one the forward makes and drops is freed."""
    made: list[weakref.ref[torch.nn.Module]] = []

    class OnTheFly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            act = torch.nn.ReLU()
            made.append(weakref.ref(act))
            return self.fc(act(x))

    model = OnTheFly()
    alive: list[bool] = []

    def block() -> None:
        model(torch.randn(2, 8))
        gc.collect()
        alive.append(made[0]() is not None)  # still capturing

    p = profiled(block, with_stack=True)
    assert alive == [False]
    assert p.trace.meta.module_names["Linear_0"] == "OnTheFly.fc"
