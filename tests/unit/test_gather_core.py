"""The Kineto reader's compiled core (importers/kineto/_gather.c) gives exactly what its
pure-Python twins in gather.py give, and those what the reader's expressions gave before the core
(``ints`` of ``as_id``, ``int_or_none``, ``address`` of a field; ``float_column`` of ts and dur):
on crafted events that reach every branch, and on every shared Kineto trace; and the texts of
a column as codes (``text_codes``, ``raw_codes``) and events' (phase, category) routes
(``pair_codes``) as their twins and a dict by hand give them; and times as the nanoseconds
nearest their binary values (``exact_ns``), as its twin and Decimal arithmetic give them.
Without the built core the comparisons skip (fail under CI=true, where ``make setup`` builds
it)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Callable
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pytest

from gpuprofile.importers.kineto import gather
from gpuprofile.importers.kineto.check import Findings, loose_events
from gpuprofile.importers.kineto.decode import decode_bytes
from gpuprofile.importers.kineto.format import NO_ARGS, Args, Event
from gpuprofile.importers.kineto.gather import (
    ADDRESS,
    ID,
    INT_OR_NONE,
    PLAIN,
    RULES,
    address,
    as_id,
    float_column,
    int_or_none,
)
from gpuprofile.importers.source import read_trace_bytes
from gpuprofile.trace.model import NO_ID
from helpers.prerequisites import REPO, SHARED_TRACES, missing

ABSENT = -(2**63)  # columns._ABSENT: what _checked_ints reads an absent value as
KINETO = SHARED_TRACES / "kineto"


@pytest.fixture(scope="module")
def core() -> ModuleType:
    try:
        from gpuprofile.importers.kineto import _gather
    except ImportError as error:
        missing(f"the compiled reader core is not built ({error}); `make setup` builds it")
    return _gather


# Each column the reader gathers: (items: events or their args, path, alt, mode, absent, the
# value the reader read it as before the core, from the event and its args).
Old = Callable[[Event, Args], Any]
SPECS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], int, int, Old]] = {
    "pid": ("events", ("pid",), (), ID, NO_ID, lambda e, a: as_id(e.pid)),
    "tid": ("events", ("tid",), (), ID, NO_ID, lambda e, a: as_id(e.tid)),
    "stream": (
        "events",
        ("args", "stream"),
        ("tid",),
        ID,
        NO_ID,
        lambda e, a: as_id(a.stream) if a.stream is not None else as_id(e.tid),
    ),
    "counter device": (
        "events",
        ("id",),
        (),
        ID,
        ABSENT,
        lambda e, a: as_id(e.id) if isinstance(e.id, int | str) else None,
    ),
    "bytes": (
        "args",
        ("bytes",),
        (),
        ID,
        ABSENT,
        lambda e, a: None if a.bytes is None else as_id(a.bytes),
    ),
    "external id": (
        "args",
        ("external_id",),
        ("legacy_external_id",),
        PLAIN,
        NO_ID,
        lambda e, a: a.external_id if a.external_id is not None else a.legacy_external_id,
    ),
    **{
        field: ("args", (field,), (), PLAIN, absent, lambda e, a, f=field: getattr(a, f))
        for field, absent in (
            ("correlation", NO_ID),
            ("device", ABSENT),
            ("registers_per_thread", ABSENT),
            ("shared_memory", ABSENT),
            ("alloc_bytes", NO_ID),
            ("total_allocated", NO_ID),
            ("total_reserved", NO_ID),
        )
    },
    **{
        field: ("args", (field,), (), INT_OR_NONE, NO_ID,
                lambda e, a, f=field: int_or_none(getattr(a, f)))
        for field in ("caller_line", "sequence", "fwd_tid", "seq", "in_elems", "out_elems")
    },
    "addr": ("args", ("addr",), (), ADDRESS, NO_ID, lambda e, a: address(a.addr)),
}  # fmt: skip
# (items, path, the value float_column read before the core)
FLOATS: dict[str, tuple[str, tuple[str, ...], Old]] = {
    "ts": ("events", ("ts",), lambda e, a: e.ts),
    "dur": ("events", ("dur",), lambda e, a: e.dur),
    "counter value": ("events", ("args", "value"), lambda e, a: a.value),
    "occupancy": ("args", ("occupancy",), lambda e, a: a.occupancy),
    "blocks per SM": ("args", ("blocks_per_sm",), lambda e, a: a.blocks_per_sm),
}

BIG = [2**63, -(2**63) - 1, 2**70, -(2**70), 10**30]
EDGES = [0, 1, -1, True, False, 2**63 - 1, -(2**63), 2**62 - 1, 2**62, 2**31, 123456789]
IDS = [
    *EDGES,
    *BIG,
    "4093687616",
    "stream 7",
    "-3",
    "-0",
    "007",
    "12345678901234567890",  # 20 digits: no id
    "123456789012345678",  # 18: the longest read
    "-12345678901234567",
    "-123456789012345678",  # 19 characters with its '-': no id
    "",
    "-",
    " ",
    "7 ",
    "abc",
    "1_0",
    "+5",
    "x 12",
    "0x1f",
    "٣",  # Arabic-Indic 3: isdigit and int() both take it
    "x ٣",
    "٣ x",
    "\uff15",  # fullwidth 5
    "5\xa0",  # a no-break space is no separator
    "\ud800",  # a lone surrogate: not UTF-8
    "é 42",  # non-ASCII before the id
]
COUNTS = [
    *EDGES,
    *BIG,
    "12",
    " 12 ",
    "1_000",
    "+7",
    "-7",
    "x",
    "",
    "٣",
    "1" * 5000,  # beyond int()'s digit limit
    "4611686018427387904",  # 2**62
    1.5,
    -0.0,
    float("nan"),
    [1],
    {"a": 1},
]
NUMBERS = [
    0,
    1,
    -5,
    1.5,
    -0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    True,
    False,
    2**53 + 1,
    2**63,
    2**70,
    -(2**70),
    2**1024 - 2**971,  # the largest float64
    2**1024 - 2**970 - 1,  # rounds down to it
]
# Beyond float64: 2**1024 - 2**970 is the least int that rounds up to 2**1024.
HUGE = [10**400, -(10**400), 2**1024 - 2**970]
# isdigit, yet int() refuses it: no count, and as_id raises (test_an_id_int_cannot_read_...)
SUPERSCRIPT = "\u00b2"
TEXTS = ["1.5", " 2 ", "1_0", "nan", "x", "", "٣"]


def _cycle(values: list[Any], n: int, skip: int = 0) -> list[Any]:
    """``values`` over and over, ``n`` of them, starting at ``skip`` (columns of coprime
    lengths so, in turn, meet every combination)."""
    return list(itertools.islice(itertools.cycle(values[skip:] + values[:skip]), n))


def crafted(n: int = 400, numbers: list[Any] = NUMBERS + HUGE) -> list[Event]:
    """Events with every kind of value in every field read (whatever the field's type says:
    msgspec's structs take any value when built by hand); every 7th without args."""
    ids = [None, *IDS]
    plain = [None, *EDGES, *BIG]
    anything = [None, *COUNTS, *IDS, *numbers]
    counts = [*anything, SUPERSCRIPT]
    events = []
    for i in range(n):
        args = None
        if i % 7:
            args = Args(
                external_id=plain[i % len(plain)],
                legacy_external_id=plain[(i * 3) % len(plain)] if i % 2 else None,
                correlation=plain[(i + 1) % len(plain)],
                device=plain[(i + 2) % len(plain)],
                stream=ids[(i * 5) % len(ids)] if i % 3 else None,
                bytes=ids[(i + 3) % len(ids)],
                registers_per_thread=plain[(i + 4) % len(plain)],
                shared_memory=plain[(i + 5) % len(plain)],
                alloc_bytes=plain[(i + 6) % len(plain)],
                total_allocated=plain[(i + 7) % len(plain)],
                total_reserved=plain[(i + 8) % len(plain)],
                addr=anything[i % len(anything)],
                caller_line=counts[(i + 1) % len(counts)],
                sequence=counts[(i + 2) % len(counts)],
                fwd_tid=counts[(i + 3) % len(counts)],
                seq=counts[(i + 4) % len(counts)],
                in_elems=counts[(i + 5) % len(counts)],
                out_elems=counts[(i + 6) % len(counts)],
                value=[None, *numbers, *TEXTS, [1]][i % (len(numbers) + len(TEXTS) + 2)],
                occupancy=[None, *numbers][(i + 1) % (len(numbers) + 1)],
                blocks_per_sm=[None, *numbers][(i + 2) % (len(numbers) + 1)],
            )
        events.append(
            Event(
                pid=ids[i % len(ids)],
                tid=ids[(i * 7 + 1) % len(ids)],
                ts=[None, *numbers][i % (len(numbers) + 1)],
                dur=[None, *numbers][(i * 3 + 2) % (len(numbers) + 1)],
                id=anything[(i * 11) % len(anything)],
                args=args,
            )
        )
    return events


def _items(events: list[Event], kind: str) -> list[Any]:
    return events if kind == "events" else [e.args or NO_ARGS for e in events]


def _ints(
    impl: Callable[..., int], items: list[Any], spec: tuple[Any, ...]
) -> tuple[np.ndarray, int]:
    _, path, alt, mode, absent, _ = spec
    out = np.full(len(items), 12345, np.int64)
    beyond = impl(items, path, alt, mode, absent, RULES[mode], out)
    return out, beyond


def _floats(impl: Callable[..., int], items: list[Any], path: tuple[str, ...]) -> tuple[Any, ...]:
    out = np.full(len(items), 12345.0)
    bad = np.ones(len(items), bool)
    count = impl(items, path, out, bad)
    return out, bad, count


def _old_ints(events: list[Event], spec: tuple[Any, ...]) -> tuple[np.ndarray, int]:
    """The column as the reader read it before the core (its ``ints`` of the old expression,
    written out here: the reader now reads every integer column through the gather)."""
    old, absent = spec[5], spec[4]
    args = [e.args or NO_ARGS for e in events]
    listed = [absent if v is None else v for v in (old(e, a) for e, a in zip(events, args))]
    try:
        return np.fromiter(listed, np.int64, len(listed)), 0
    except OverflowError:
        fits = [v if -(2**63) <= v < 2**63 else None for v in listed]
        return np.array([absent if v is None else v for v in fits], np.int64), fits.count(None)


def assert_same_columns(core: ModuleType | None, events: list[Event]) -> None:
    """Every column of SPECS and FLOATS: the twin's equals the reader's before the core, and
    the core's (unless ``core`` is None) the twin's, values and counts."""
    for name, spec in SPECS.items():
        items = _items(events, spec[0])
        twin = _ints(gather.py_gather_ints, items, spec)
        before = _old_ints(events, spec)
        assert np.array_equal(twin[0], before[0]) and twin[1] == before[1], name
        if core is not None:
            compiled = _ints(core.gather_ints, items, spec)
            assert np.array_equal(compiled[0], twin[0]) and compiled[1] == twin[1], name
    args = [e.args or NO_ARGS for e in events]
    for name, (kind, path, read) in FLOATS.items():
        items = _items(events, kind)
        twin_f = _floats(gather.py_gather_floats, items, path)
        values, bad = float_column([read(e, a) for e, a in zip(events, args)])
        assert np.array_equal(twin_f[0], values, equal_nan=True), name
        assert np.array_equal(twin_f[1], np.zeros(len(items), bool) if bad is None else bad)
        if core is not None:
            compiled_f = _floats(core.gather_floats, items, path)
            assert np.array_equal(compiled_f[0], twin_f[0], equal_nan=True), name
            assert np.array_equal(compiled_f[1], twin_f[1]) and compiled_f[2] == twin_f[2], name


def test_the_twins_read_as_the_reader_did() -> None:
    # Whether or not the core is built: the pure-Python path is the reader's old one.
    assert_same_columns(None, crafted())


def test_crafted_events_every_branch(core: ModuleType) -> None:
    events = crafted()
    assert_same_columns(core, events)
    # The crafted values reach every outcome: ids from text, ints beyond int64, bad floats.
    out, beyond = _ints(core.gather_ints, events, SPECS["pid"])
    assert {4093687616, 7, -3, 3, 5, 123456789012345678}.issubset(set(out.tolist()))
    assert beyond > 0
    assert _floats(core.gather_floats, events, ("ts",))[2] > 0


def test_crafted_floats_without_a_bad_value(core: ModuleType) -> None:
    # float_column's fast path (every value converts) as well as its loop.
    events = crafted(numbers=NUMBERS)
    for path in (("ts",), ("dur",)):
        compiled = _floats(core.gather_floats, events, path)
        twin = _floats(gather.py_gather_floats, events, path)
        assert compiled[2] == twin[2] == 0
        assert np.array_equal(compiled[0], twin[0], equal_nan=True)


@pytest.mark.parametrize("mode", [PLAIN, ID, INT_OR_NONE, ADDRESS])
@pytest.mark.parametrize(
    "value", [None, *EDGES, *BIG, *IDS, *COUNTS, SUPERSCRIPT, *NUMBERS, *HUGE, *TEXTS]
)
def test_each_value_alone(core: ModuleType, mode: int, value: Any) -> None:
    """One value in each mode: the same int, or the same exception (PLAIN refuses what is no
    int; as_id's int() refuses digits it cannot read)."""
    items = [Event(id=value)]
    spec = ("events", ("id",), (), mode, -99, None)
    results = []
    for impl in (core.gather_ints, gather.py_gather_ints):
        try:
            out, beyond = _ints(impl, items, spec)
            results.append((int(out[0]), beyond))
        except (TypeError, ValueError) as error:
            results.append((type(error), None))
    assert results[0] == results[1]


@pytest.mark.parametrize("text", [SUPERSCRIPT, "--5", "x --5", "-" + SUPERSCRIPT])
def test_an_id_int_cannot_read_raises_as_before(core: ModuleType, text: str) -> None:
    with pytest.raises(ValueError):
        as_id(text)
    for impl in (core.gather_ints, gather.py_gather_ints):
        with pytest.raises(ValueError):
            _ints(impl, [Event(pid=text)], SPECS["pid"])


def test_float_values(core: ModuleType) -> None:
    values = [None, 1, True, 2**70, 10**400, -(10**400), 1.5, "2.5", "x", [1]]
    items = [Event(id=v) for v in values]
    out, bad, count = _floats(core.gather_floats, items, ("id",))
    expected = [np.nan, 1.0, 1.0, float(2**70), np.nan, np.nan, 1.5, 2.5, np.nan, np.nan]
    assert np.array_equal(out, expected, equal_nan=True)
    assert bad.tolist() == [False] * 4 + [True, True, False, False, True, True] and count == 4


def test_wrong_arguments_raise(core: ModuleType) -> None:
    events = crafted(20)
    with pytest.raises(ValueError):  # a column of the wrong length
        core.gather_ints(events, ("pid",), (), ID, -1, RULES[ID], np.empty(3, np.int64))
    with pytest.raises(ValueError):  # of the wrong item size
        core.gather_floats(events, ("ts",), np.empty(20, np.float32), np.empty(20, bool))
    with pytest.raises(TypeError):  # a tuple, not a list
        core.gather_ints(tuple(events), ("pid",), (), ID, -1, RULES[ID], np.empty(20, np.int64))
    with pytest.raises(ValueError):
        core.gather_ints(events, ("pid",), (), 9, -1, RULES[ID], np.empty(20, np.int64))
    with pytest.raises(AttributeError):
        core.gather_ints(events, ("nope",), (), ID, -1, RULES[ID], np.empty(20, np.int64))
    with pytest.raises(BufferError):  # read-only
        core.gather_ints(events, ("pid",), (), ID, -1, RULES[ID], bytes(160))


def test_no_reference_leaks(core: ModuleType) -> None:
    """Each value, event and args keeps its reference count across gathers, errors included."""
    events = crafted(200)
    # Not the small ints, which the interpreter shares with everything else.
    watched = [*events, *(e.args for e in events), *IDS[len(EDGES) :], *COUNTS[len(EDGES) :]]
    before = [sys.getrefcount(x) for x in watched]
    for _ in range(3):
        for spec in SPECS.values():
            _ints(core.gather_ints, _items(events, spec[0]), spec)
        for kind, path, _ in FLOATS.values():
            _floats(core.gather_floats, _items(events, kind), path)
        with pytest.raises(TypeError):  # PLAIN on text: the rule raises mid-column
            _ints(core.gather_ints, events, ("events", ("pid",), (), PLAIN, -1, None))
    assert [sys.getrefcount(x) for x in watched] == before


def test_compiled_flag_says_which_runs(core: ModuleType) -> None:
    assert gather.COMPILED and gather.gather_ints is core.gather_ints
    assert gather.text_codes is core.text_codes and gather.raw_codes is core.raw_codes
    assert gather.pair_codes is core.pair_codes


# --- texts as codes -------------------------------------------------------------------------

TEXTS = ["aten::mm", "", "aten::mm", "ñame ✓", "a" * 300, "", "aten::add_", "ñame ✓", "\x00z"]


def _by_hand_codes(values: list[Any], known: dict[Any, int]) -> tuple[list[int], dict[Any, int]]:
    texts, codes = dict(known), []
    for v in values:
        if v not in texts:
            texts[v] = len(texts)
        codes.append(texts[v])
    return codes, texts


@pytest.mark.parametrize("known", [{}, {"aten::add_": 0, "zz": 1}])
def test_text_codes_equal_the_twin_and_by_hand(core: ModuleType, known: dict[str, int]) -> None:
    values = TEXTS * 7 + [f"op{i}" for i in range(1000)]
    expected, expected_texts = _by_hand_codes(values, known)
    for fn in (core.text_codes, gather.py_text_codes):
        texts, out = dict(known), np.full(len(values), -7, np.int64)
        assert fn(values, texts, out) is None
        assert out.tolist() == expected and texts == expected_texts
        assert list(texts) == list(expected_texts)  # the order first met
    with pytest.raises(ValueError):
        core.text_codes(values, {}, np.empty(3, np.int64))
    with pytest.raises(TypeError):  # an unhashable value
        core.text_codes([[1]], {}, np.empty(1, np.int64))


def _raws(texts: list[bytes]) -> list[msgspec.Raw]:
    """Raw texts as the decoder gives them: views into one decoded document."""
    document = b"[" + b",".join(t or b"null" for t in texts) + b"]"
    raws = msgspec.json.decode(document, type=list[msgspec.Raw])
    return [r if t else msgspec.Raw() for r, t in zip(raws, texts, strict=True)]


def test_raw_codes_equal_the_twin_and_by_hand(core: ModuleType) -> None:
    # Many distinct texts (the table fills and probes), repeats, the empty text, non-ASCII.
    texts = [b"[[2, 3], [3, 4]]", b"", b'["float", "float"]', '["\u00f1"]'.encode(), b"[]"]
    texts += [f"[[{i}, {i % 7}]]".encode() for i in range(3000)] + texts[::-1]
    raws = _raws(texts * 2)
    expected, distinct = _by_hand_codes([bytes(r) for r in raws], {})
    for fn in (core.raw_codes, gather.py_raw_codes):
        out = np.full(len(raws), -7, np.int64)
        found = fn(raws, out)
        assert out.tolist() == expected and found == list(distinct)
        assert all(type(t) is bytes for t in found)
    assert core.raw_codes([], np.empty(0, np.int64)) == []
    with pytest.raises(TypeError):  # no buffer
        core.raw_codes([b"x", "text"], np.empty(2, np.int64))
    with pytest.raises(ValueError):
        core.raw_codes(raws, np.empty(3, np.int64))


class _Numbered(dict[tuple[Any, Any], int]):
    """Numbers each pair the first time it is asked (as the reader's routes do), counting
    the times it was asked for one it lacked."""

    def __init__(self) -> None:
        super().__init__()
        self.missed = 0

    def __missing__(self, pair: tuple[Any, Any]) -> int:
        self.missed += 1
        self[pair] = len(self) - 60  # negative codes too
        return self[pair]


def test_pair_codes_equal_the_twin_and_by_hand(core: ModuleType) -> None:
    # Runs of one pair, pairs that alternate, equal texts in other objects, a value that is no
    # text (compared by the dict, never taken for the last pair), the empty text.
    pairs = [("X", "kernel")] * 5 + [("X", "cpu_op"), ("X", "kernel")] * 3 + [("i", "")]
    pairs += [
        ("X", "".join(["ker", "nel"])),
        ("M", 7),
        ("M", 7),
        ("M", 7.0),
        ("X", "ñ"),
        ("X", "n"),
    ]
    events = [Event(ph=ph, cat=cat) for ph, cat in pairs * 20]  # type: ignore[arg-type]
    by_hand: dict[tuple[Any, Any], int] = {}
    expected = [by_hand.setdefault((e.ph, e.cat), len(by_hand) - 60) for e in events]
    for fn in (core.pair_codes, gather.py_pair_codes):
        numbered, out = _Numbered(), np.full(len(events), 99, np.int8)
        assert fn(events, "ph", "cat", numbered, out) is None
        assert out.tolist() == expected and dict(numbered) == by_hand
    numbered = _Numbered()
    core.pair_codes(events, "ph", "cat", numbered, np.empty(len(events), np.int8))
    assert numbered.missed == len(by_hand)
    with pytest.raises(KeyError):  # a plain dict without the pair
        core.pair_codes(events, "ph", "cat", {}, np.empty(len(events), np.int8))
    with pytest.raises(ValueError, match="int8"):
        core.pair_codes(events[:1], "ph", "cat", {("X", "kernel"): 300}, np.empty(1, np.int8))
    with pytest.raises(ValueError):  # int64, not int8
        core.pair_codes(events, "ph", "cat", {}, np.empty(len(events), np.int64))
    with pytest.raises(AttributeError):
        core.pair_codes(events, "ph", "nope", _Numbered(), np.empty(len(events), np.int8))


def test_text_raw_and_pair_codes_keep_reference_counts(core: ModuleType) -> None:
    values = [f"name{i % 50}" for i in range(500)]
    raws = _raws([f"[{i % 40}]".encode() for i in range(500)])
    events = [Event(ph="X", cat=values[i // 7]) for i in range(300)]
    watched = [*values, *raws, *events]
    before = [sys.getrefcount(x) for x in watched]
    for _ in range(3):
        texts: dict[str, int] = {}
        core.text_codes(values, texts, np.empty(len(values), np.int64))
        del texts
        core.raw_codes(raws, np.empty(len(raws), np.int64))
        core.pair_codes(events, "ph", "cat", _Numbered(), np.empty(len(events), np.int8))
        with pytest.raises(KeyError):
            core.pair_codes(events, "ph", "cat", {}, np.empty(len(events), np.int8))
        with pytest.raises(TypeError):
            core.raw_codes([*raws, 3], np.empty(len(raws) + 1, np.int64))
    assert [sys.getrefcount(x) for x in watched] == before


def _trace_files() -> list[Any]:
    files = sorted(p for p in KINETO.glob("*.json*")) if KINETO.is_dir() else []
    return [pytest.param(p, id=p.name) for p in files] or [pytest.param(None, id="no-traces")]


def _times_us() -> np.ndarray:
    """Microseconds that reach every branch of exact_ns but the float product's beyond 2**52
    (which rounds the product as a float; ``_beyond_us``): both signs, the integer path's
    edges (|us| in [1, 2**52)), float spacing above a nanosecond, halves of a nanosecond."""
    rng = np.random.default_rng(3)
    return np.concatenate(
        [
            rng.uniform(-1e6, 1e6, 2000),
            rng.uniform(0, 2.0**43, 2000),
            rng.uniform(2.0**43, 2.0**52, 200),
            -rng.uniform(2.0**43, 2.0**52, 200),
            [0.0, -0.0, 1e-9, -1e-9, 0.0004, -0.0006, 0.0015, -0.0015, 2.0**-30],
            [1.0, -1.0, np.nextafter(1.0, 0), 2.0**52, np.nextafter(2.0**52, 0), -(2.0**52)],
            [1.0005, -1.0005, 12345.0005, -12345.0005],
        ]
    )


def _nearest_ns_by_hand(values: np.ndarray) -> list[int]:
    """The nanoseconds nearest each value's exact binary value, ties upward, in Decimal."""
    return [
        int((Decimal(float(v)) * 1000 + Decimal("0.5")).to_integral_value(ROUND_FLOOR))
        for v in values
    ]


def test_exact_ns_twin_is_the_nearest_nanosecond_of_the_binary_value() -> None:
    values = _times_us()
    out = np.empty(len(values), np.int64)
    gather.py_exact_ns(values, out)
    np.testing.assert_array_equal(out, _nearest_ns_by_hand(values))


def test_exact_ns_core_equals_the_twin_and_by_hand(core: ModuleType) -> None:
    values = _times_us()
    out = np.empty(len(values), np.int64)
    core.exact_ns(values, out)
    np.testing.assert_array_equal(out, _nearest_ns_by_hand(values))
    # Beyond 2**52 and below 1 us, the float product, as the twin rounds it (2.5e-3 is a
    # tie there: rint gives 2); no number is the smallest int64 on both paths (numpy's cast
    # alone differs by machine).
    rng = np.random.default_rng(4)
    beyond = np.concatenate([rng.uniform(2.0**52, 2.0**62 / 1000, 500), [2.5e-3, -2.5e-3]])
    odd = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300, 2.0**63 / 1000, -(2.0**63) / 1000])
    for others in (beyond, odd):
        twin, compiled = np.empty(len(others), np.int64), np.empty(len(others), np.int64)
        gather.py_exact_ns(others, twin)
        core.exact_ns(others, compiled)
        np.testing.assert_array_equal(compiled, twin)
    np.testing.assert_array_equal(compiled[:-1], np.iinfo(np.int64).min)
    assert compiled[-1] == -(2**63)  # -2**63 ns fits int64: the one finite edge
    # The wrapper keeps the shape; it takes any sequence of numbers.
    shaped = gather.exact_ns_of(values[:12].reshape(3, 4))
    assert shaped.shape == (3, 4)
    np.testing.assert_array_equal(shaped.reshape(-1), _nearest_ns_by_hand(values[:12]))
    assert gather.exact_ns is core.exact_ns
    with pytest.raises(ValueError, match="float64"):
        core.exact_ns(np.zeros(3, np.float32), np.empty(3, np.int64))
    with pytest.raises(ValueError, match="column of 3"):
        core.exact_ns(np.zeros(3), np.empty(4, np.int64))


@pytest.mark.parametrize("path", _trace_files())
def test_every_shared_trace(core: ModuleType, path: Path | None) -> None:
    if path is None:
        missing(f"shared traces not found under {KINETO}")
    assert path is not None
    findings = Findings()
    doc = decode_bytes(
        path, read_trace_bytes(path), lambda items, first: loose_events(items, first, findings)
    )
    assert_same_columns(core, doc.traceEvents)
    args = [e.args or NO_ARGS for e in doc.traceEvents]
    for raws in ([a.input_dims for a in args], [a.concrete_inputs for a in args]):
        out, twin = np.empty(len(raws), np.int64), np.empty(len(raws), np.int64)
        assert core.raw_codes(raws, out) == gather.py_raw_codes(raws, twin)
        assert np.array_equal(out, twin)
    names = [e.name for e in doc.traceEvents]
    texts, twin_texts = {}, {}
    core.text_codes(names, texts, out := np.empty(len(names), np.int64))
    gather.py_text_codes(names, twin_texts, twin := np.empty(len(names), np.int64))
    assert texts == twin_texts and np.array_equal(out, twin)
    routes, twin_routes = _Numbered(), _Numbered()
    core.pair_codes(doc.traceEvents, "ph", "cat", routes, ph_cat := np.empty(len(names), np.int8))
    gather.py_pair_codes(doc.traceEvents, "ph", "cat", twin_routes, twin_ph_cat := ph_cat.copy())
    assert dict(routes) == dict(twin_routes) and np.array_equal(ph_cat, twin_ph_cat)


# --- the build script ---------------------------------------------------------------------------


def _build_core() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_core", REPO / "python" / "build_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_script_makes_an_importable_core(tmp_path: Path) -> None:
    build_core = _build_core()
    try:
        built = build_core.build("gpuprofile/importers/kineto/_gather.c", tmp_path)
    except build_core.NoCompiler as why:
        missing(f"cannot build the compiled core here: {why}")
    assert built.parent == tmp_path
    assert built.name == build_core.module_name("gpuprofile/importers/kineto/_gather.c")
    assert [p.name for p in tmp_path.iterdir()] == [built.name]  # no scratch left behind
    spec = importlib.util.spec_from_file_location("gpuprofile.importers.kineto._gather", built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = np.empty(2, np.int64)
    events = [Event(pid="stream 7"), Event(pid=2**63)]
    assert module.gather_ints(events, ("pid",), (), ID, -1, RULES[ID], out) == 1
    assert out.tolist() == [7, -1]


def test_the_build_script_without_a_compiler_says_so_and_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-gpuprofile")
    assert _build_core().main([str(tmp_path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "not built" in line and "no-such-compiler-gpuprofile" in line
    assert list(tmp_path.iterdir()) == []


def test_a_changed_header_makes_the_modules_beside_it_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # _gather.c and _scan.c include _values.h: a module older than the header is rebuilt.
    build_core = _build_core()
    monkeypatch.setattr(build_core, "PACKAGE_ROOT", tmp_path)
    source, header = tmp_path / "pkg" / "_m.c", tmp_path / "pkg" / "_shared.h"
    source.parent.mkdir()
    source.write_text("")
    header.write_text("")
    os.utime(source, (100, 100))
    os.utime(header, (200, 200))
    assert build_core._newest_input("pkg/_m.c") == 200
    os.utime(header, (50, 50))
    assert build_core._newest_input("pkg/_m.c") == 100
