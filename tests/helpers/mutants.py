"""Mutants of real traces, and the contract every one of them must meet (issue 16).

A mutant is a real trace with one or a few changes of the kinds users' tools and hand edits make:
a key deleted, a value of another type, values swapped between events, a numeric extreme, events
repeated, a hostile name, the file cut short. ``mutate`` draws them from a ``random.Random``, so
the fuzz tests (hypothesis hands in the Random, and shrinks what fails) and ``bench/fuzz.py`` (a
seeded loop) share one engine.

``outcome`` runs a mutant through ``gpuprofile.load``, the report and the text view, and says
which of the contract's outcomes it met: a result ("ok"), a clear error ("error"), a result with
impossible numbers ("impossible"), unsafe text in the text view ("unsafe-text"), or an
unexpected exception ("crash").
"""

from __future__ import annotations

import copy
import json
import math
import random
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NS_PER_YEAR = 365 * 24 * 3600 * 10**9
# Measured figures can pass a datasheet roof a little (boost clocks, rounding); twice it cannot.
OVER_ROOF = 2.0

EXTREMES: tuple[Any, ...] = (
    0,
    -1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
    1e308,
    -1e308,
    5e-324,
    0.5,
    "1e400",
    "True",
    "NaN",
    "",
)
OTHER_TYPES: tuple[Any, ...] = (
    *(None, True, False, "x", [], {}, [1, 2], {"a": 1}, 7, -7, 1.5, [[-1, 2]]),
)
HOSTILE_NAMES = ("\x1b[2J\x1b[Hgone", "a\rb\bc\x07", "\u202eevil", "<b>x</b>", "\x9b31m", "\ud7ff")
# Written into the text of the file, where json cannot put them: non-standard JSON numbers and
# bytes that are not UTF-8.
RAW_TOKENS = (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"\xff\xfe", b"\xef\xbb\xbf")


def _containers(doc: Any) -> list[Any]:
    """Every dict and list in the document (the top level, events, their args, device props)."""
    found: list[Any] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            found.append(node)
            stack.extend(v for v in node if isinstance(v, dict | list))
    return found


def _events(doc: Any) -> list[Any]:
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    return events if isinstance(events, list) else []


def _pick_slot(doc: Any, rng: random.Random) -> tuple[Any, Any] | None:
    """A (container, key or index) whose value is a leaf or a container; events' own fields
    more often than anything else, since those are what the importers read."""
    events = [e for e in _events(doc) if isinstance(e, dict) and e]
    if events and rng.random() < 0.6:
        event = rng.choice(events)
        if isinstance(event.get("args"), dict) and event["args"] and rng.random() < 0.35:
            event = event["args"]
        return event, rng.choice(list(event))
    containers = [c for c in _containers(doc) if c]
    if not containers:
        return None
    node = rng.choice(containers)
    if isinstance(node, dict):
        return node, rng.choice(list(node))
    return node, rng.randrange(len(node))


def _delete_key(doc: Any, rng: random.Random) -> None:
    slot = _pick_slot(doc, rng)
    if slot is not None:
        del slot[0][slot[1]]


def _change_type(doc: Any, rng: random.Random) -> None:
    slot = _pick_slot(doc, rng)
    if slot is not None:
        slot[0][slot[1]] = copy.deepcopy(rng.choice(OTHER_TYPES))


def _extreme(doc: Any, rng: random.Random) -> None:
    numeric = [
        (e, k)
        for e in _containers(doc)
        if isinstance(e, dict)
        for k, v in e.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    if numeric:
        node, key = rng.choice(numeric)
        node[key] = rng.choice(EXTREMES)


def _swap(doc: Any, rng: random.Random) -> None:
    events = [e for e in _events(doc) if isinstance(e, dict) and e]
    if len(events) < 2:
        return
    a, b = rng.sample(events, 2)
    key = rng.choice(list(a))
    if rng.random() < 0.5 and key in b:
        a[key], b[key] = b[key], a[key]
    else:  # two fields of one event
        other = rng.choice(list(a))
        a[key], a[other] = a[other], a[key]


def _repeat(doc: Any, rng: random.Random) -> None:
    events = _events(doc)
    if events:
        times = rng.choice((2, 3))
        chosen = rng.sample(range(len(events)), k=max(1, len(events) // rng.choice((1, 4, 20))))
        for index in sorted(chosen, reverse=True):
            events[index + 1 : index + 1] = [copy.deepcopy(events[index]) for _ in range(times - 1)]


def _hostile_name(doc: Any, rng: random.Random) -> None:
    events = [e for e in _events(doc) if isinstance(e, dict) and isinstance(e.get("name"), str)]
    for event in rng.sample(events, k=min(len(events), rng.choice((1, 5)))):
        event["name"] = rng.choice(HOSTILE_NAMES) + event["name"]


STRUCTURED = (_delete_key, _change_type, _extreme, _swap, _repeat, _hostile_name)


def mutate(doc: Any, rng: random.Random) -> bytes:
    """The bytes of one mutant of ``doc`` (a parsed JSON trace, left unchanged).

    Parameters:
        doc: the trace as ``json.loads`` gives it.
        rng: where every choice comes from; the same state gives the same mutant.

    Returns:
        The mutant as JSON text (UTF-8), sometimes cut short or with raw tokens that are not JSON.
    """
    mutant = copy.deepcopy(doc)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        rng.choice(STRUCTURED)(mutant, rng)
    text = json.dumps(mutant, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    roll = rng.random()
    if roll < 0.06:  # the file cut short, as a killed job leaves it
        return text[: rng.randrange(len(text))]
    if roll < 0.12:  # a token no JSON writer emits, in place of a number or at the start
        token = rng.choice(RAW_TOKENS)
        if token == b"\xef\xbb\xbf":
            return token + text
        digits = [i for i in range(len(text)) if text[i : i + 1].isdigit()]
        if digits:
            at = rng.choice(digits)
            end = at
            while end < len(text) and text[end : end + 1] in b"0123456789.eE+-":
                end += 1
            return text[:at] + token + text[end:]
    return text


@dataclass(frozen=True)
class Outcome:
    """What one mutant gave: ``kind`` one of ok, error, impossible, unsafe-text, crash;
    ``detail`` the reason (the impossible figure, or the exception and the place it came from)."""

    kind: str
    detail: str = ""


def _crash_place(exc: BaseException) -> str:
    """The innermost frame of gpuprofile's own code (or the last frame) the exception passed."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/gpuprofile/" in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return type(exc).__name__
    where = frame.filename.split("/gpuprofile/")[-1] if ours else Path(frame.filename).name
    return f"{type(exc).__name__} at {where}:{frame.lineno} ({frame.name})"


def impossible(report: dict[str, Any]) -> str:
    """The first figure of a report that cannot be true of any real run, or ""."""
    for rank in report.get("ranks", []):
        wall = rank.get("wall_ns")
        if isinstance(wall, int | float) and not 0 <= wall <= NS_PER_YEAR:
            return f"rank {rank.get('rank')} wall {wall} ns"
        gpu = rank.get("gpu") or {}
        busy, window = gpu.get("busy_ns"), gpu.get("window_ns")
        known = isinstance(busy, int | float) and isinstance(window, int | float)
        if known and (busy < 0 or window < 0 or busy > window):
            return f"rank {rank.get('rank')} GPU busy {busy} ns of a {window} ns window"
    for gauge in report.get("gauges", []):
        value, roof = gauge.get("value"), gauge.get("roof")
        if isinstance(value, int | float) and (value < 0 or not math.isfinite(value)):
            return f"gauge {gauge.get('key')} = {value}"
        numbers = isinstance(value, int | float) and isinstance(roof, int | float)
        if numbers and roof > 0 and value > OVER_ROOF * roof:
            return f"gauge {gauge.get('key')} at {value / roof:.0%} of its roof"
    for point in (report.get("roofline") or {}).get("points", []):
        pct = point.get("pct_of_roof")
        if isinstance(pct, int | float) and not 0 <= pct <= 100 * OVER_ROOF:
            return f"roofline {point.get('name')!r} at {pct}% of the roof"
    walls = sum(r.get("wall_ns") or 0 for r in report.get("ranks", []))
    for hint in report.get("hints", []):
        gain = hint.get("gain_ns")
        if isinstance(gain, int | float) and not 0 <= gain <= max(walls, 0):
            return f"hint {hint.get('kind')!r} gains {gain} ns of {walls} ns"
    return ""


def unsafe_text(text: str) -> str:
    """The first control character a terminal would act on, or "" (newlines are fine)."""
    for char in text:
        code = ord(char)
        if (code < 32 and char not in "\n\t") or 127 <= code < 160 or 0x202A <= code <= 0x202E:
            return f"U+{code:04X} in the text view"
    return ""


def outcome(path: Path) -> Outcome:
    """Load ``path``, build its report and its text view, and judge the result (see module)."""
    import gpuprofile
    from gpuprofile.errors import GpuprofileError

    try:
        profile = gpuprofile.load(path)
        report = profile.report()
        text = profile.text()
    except GpuprofileError as exc:
        return Outcome("error", type(exc).__name__)
    except RecursionError as exc:  # caught apart: its traceback is thousands of frames
        return Outcome("crash", _crash_place(exc))
    except Exception as exc:
        return Outcome("crash", _crash_place(exc))
    why = impossible(report)
    if why:
        return Outcome("impossible", why)
    why = unsafe_text(text)
    return Outcome("unsafe-text", why) if why else Outcome("ok")
