"""The Kineto reader's boundary: what reaches the typed tables is valid, and what could not be
used is counted, by reason, in a ``Findings``.

Good traces pay only vectorised checks over columns. A part of events whose values do not
decode into the typed structs (a name that is a number, a ts that is text, a float beyond
float64) is decoded again, loosely, and repaired event by event (``loose_events``): an event
whose phase, category, name or times cannot be used is rejected; an argument of the wrong type
is read as unknown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from gpuprofile.importers.kineto.decode import nesting_limit
from gpuprofile.importers.kineto.format import Args, Event
from gpuprofile.importers.kineto.gather import exact_ns_of, float_column_of

# Times and durations whose nanoseconds reach this are refused: a difference of two times, or
# a time plus a duration, then stays within int64. 2**62 ns is 146 years, so absolute Unix
# times in microseconds (1.7e18 ns today) stay well within.
MAX_NS = 2**62
# An event's phase for what the loose reading rejected (counted already): kept in place so
# that the events stay aligned with a second, exact decode of their times.
REJECTED = "\x00rejected"
REJECTED_EVENT = Event(ph=REJECTED)


class Findings:
    """What reading one rank could not use.

    ``rejected``: events not read because a value they need could not be used, by reason;
    ``examples``: for each reason, the first such event as "traceEvents[i] (cat 'name')" where
    it is known; ``unknown``: values read as unknown (the event is kept), by reason;
    ``duplicates``: events equal in every field read to an earlier one, counted once.
    """

    def __init__(self) -> None:
        self.rejected: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.unknown: Counter[str] = Counter()
        self.duplicates = 0

    def reject(self, reason: str, count: int = 1, example: str | None = None) -> None:
        self.rejected[reason] += count
        if example is not None:
            self.examples.setdefault(reason, example)

    def unknown_value(self, reason: str, count: int = 1) -> None:
        self.unknown[reason] += count

    def summary(self) -> str:
        """The reasons events were rejected, with counts and first examples, for an error."""
        return "; ".join(
            f"{count} {reason}"
            + (f" (first: {self.examples[reason]})" if reason in self.examples else "")
            for reason, count in self.rejected.items()
        )


# --- loose reading of events that do not decode into the typed structs ----------------------

_EVENT_FIELDS = {f.encode_name: f for f in msgspec.structs.fields(Event)}
_ARG_FIELDS = {f.encode_name: f for f in msgspec.structs.fields(Args)}
_RAW_ARGS = {key for key, f in _ARG_FIELDS.items() if f.type is msgspec.Raw}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def loose_events(items: Sequence[Any], first: int, findings: Findings) -> list[Event]:
    """Decoded JSON values (``items``, the file's events from index ``first``) as Events, one
    each: an event that cannot be used is ``REJECTED_EVENT``, counted in ``findings``."""
    return [_loose_event(item, first + i, findings) for i, item in enumerate(items)]


def _loose_event(item: Any, index: int, findings: Findings) -> Event:
    where = f"traceEvents[{index}]"
    if not isinstance(item, dict):
        findings.reject("events that are not JSON objects", example=where)
        return REJECTED_EVENT
    fields: dict[str, Any] = {}
    for key, value in item.items():
        if key not in _EVENT_FIELDS or key == "args" or value is None:
            continue
        if key in ("ph", "cat", "name") and not isinstance(value, str):
            findings.reject(f"events whose {key} is not text", example=where)
            return REJECTED_EVENT
        if key in ("ts", "dur") and not _is_number(value):
            findings.reject(f"events whose {key} is not a number", example=where)
            return REJECTED_EVENT
        if key in ("pid", "tid") and (isinstance(value, bool) or not isinstance(value, int | str)):
            findings.unknown_value(f"{key} that is neither a number nor text")
            value = -1
        fields[key] = value
    event = msgspec.convert(fields, Event)
    event.args = _loose_args(item.get("args"), findings)
    return event


def _loose_args(args: Any, findings: Findings) -> Args | None:
    if args is None:
        return None
    if not isinstance(args, dict):
        findings.unknown_value("args that are not a JSON object")
        return None
    known = {k: v for k, v in args.items() if k in _ARG_FIELDS and k not in _RAW_ARGS}
    try:
        out = msgspec.convert(known, Args)
    except msgspec.ValidationError:
        out = Args()
        for key, value in known.items():
            try:
                one = msgspec.convert({key: value}, Args)
            except msgspec.ValidationError as exc:
                expected = str(exc).split(" - at ", 1)[0].replace("`", "").replace(" | null", "")
                findings.unknown_value(f"args {key!r} of the wrong type ({expected.lower()})")
                continue
            name = _ARG_FIELDS[key].name
            setattr(out, name, getattr(one, name))
    for key in _RAW_ARGS & args.keys():
        if args[key] is not None:
            setattr(out, _ARG_FIELDS[key].name, msgspec.Raw(msgspec.json.encode(args[key])))
    return out


# --- times -------------------------------------------------------------------------------------


def checked_times(
    bucket: list[Event],
    what: str,
    needs_dur: bool,
    findings: Findings,
    where: Callable[[Event], str],
) -> tuple[list[Event], np.ndarray, np.ndarray]:
    """The events of ``bucket`` whose times can be used, and their ts and dur in ns.

    Rejected, by reason: no ts; no dur where ``needs_dur``; a ts or dur beyond ``MAX_NS`` or
    not finite; a negative dur. ``what`` names the events in the reasons ("kernel events");
    ``where`` describes an event for the first example of each reason.
    """
    ts, ts_bad = float_column_of(bucket, ("ts",))
    dur, dur_bad = float_column_of(bucket, ("dur",))
    limit = MAX_NS / 1000
    with np.errstate(invalid="ignore"):
        checks = [
            ("without a ts", np.isnan(ts) & (ts_bad is None or ~ts_bad)),
            ("with a ts beyond int64 nanoseconds", ~(np.abs(ts) < limit) & ~np.isnan(ts)),
        ]
        if ts_bad is not None:
            checks.append(("with a ts beyond int64 nanoseconds", ts_bad))
        if needs_dur:
            checks += [
                ("without a dur", np.isnan(dur) & (dur_bad is None or ~dur_bad)),
                ("with a negative dur", dur < 0),
                ("with a dur beyond int64 nanoseconds", ~(dur < limit) & (dur >= 0)),
            ]
            if dur_bad is not None:
                checks.append(("with a dur beyond int64 nanoseconds", dur_bad))
    bad = np.zeros(len(bucket), bool)
    for reason, mask in checks:
        fresh = mask & ~bad
        if fresh.any():
            first = bucket[int(np.flatnonzero(fresh)[0])]
            findings.reject(f"{what} {reason}", int(fresh.sum()), where(first))
            bad |= fresh
    # Instants and samples have no duration; the tables that need one have one by now.
    dur = np.where(np.isnan(dur), 0.0, dur) if needs_dur else np.zeros(len(dur))
    if bad.any():
        keep = np.flatnonzero(~bad)
        bucket = [bucket[i] for i in keep.tolist()]
        ts, dur = ts[keep], dur[keep]
    return bucket, exact_ns_of(ts), exact_ns_of(dur)


# --- the ops' recorded arguments -----------------------------------------------------------

# The deepest an "Input Dims" entry nests: a tensor's shape (a list of ints), or a list of
# tensors' shapes (a TensorList).
_SHAPE_DEPTH = 2
_INT64 = 2**63


def _is_shape(value: Any, depth: int) -> bool:
    """A list of non-negative int64 sizes, or (depth permitting) a list of such lists."""
    if not isinstance(value, list):
        return False
    if all(type(d) is int and 0 <= d < _INT64 for d in value):
        return True
    return depth > 1 and all(_is_shape(v, depth - 1) for v in value)


def _is_type_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def _is_concrete_list(value: Any) -> bool:
    # Entries are texts ("1", "[2, 2]", "False"); numbers and shallow lists are read too.
    return isinstance(value, list) and all(
        v is None or isinstance(v, str | int | float) or (isinstance(v, list) and
        all(x is None or isinstance(x, str | int | float) for x in v))
        for v in value
    )  # fmt: skip


# A column of JSON texts as codes into its distinct texts (bytes), in the order first met:
# gather.raw_codes_of's answer.
Coded = tuple[np.ndarray, list[bytes]]


class Shapes:
    """The ops' "Input Dims", "Input type" and "Concrete Inputs" (each a Coded column) as the
    JSON text the tables keep, each distinct text checked once: a text that is not the
    expected kind of list (a negative or non-integer size, a type that is not text, bytes
    that are not UTF-8) is None, counted in ``findings`` as unknown, once for each op that
    has it."""

    def __init__(self, findings: Findings) -> None:
        self._findings = findings
        self._seen: dict[tuple[int, bytes], str | None] = {}

    def _texts(
        self, kind: int, coded: Coded, ok: Callable[[Any], bool], what: str
    ) -> list[str | None]:
        """Each value's text (None where it is empty or not ``ok``), from the column's codes
        and distinct texts (raw_codes_of's, or the compiled path's): only the distinct texts
        are decoded and checked."""
        codes, distinct = coded
        texts = [self._checked(kind, key, ok) for key in distinct]
        unknown = np.array([t is None and key != b"" for t, key in zip(texts, distinct)], bool)
        if unknown.any():
            self._findings.unknown_value(what, int(unknown[codes].sum()))
        column: list[str | None] = np.array([*texts, None], dtype=object)[codes].tolist()
        return column

    def _checked(self, kind: int, key: bytes, ok: Callable[[Any], bool]) -> str | None:
        if not key:
            return None
        if (kind, key) in self._seen:
            return self._seen[kind, key]
        try:
            with nesting_limit():
                value = msgspec.json.decode(key)
            text = key.decode() if ok(value) else None
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            text = None
        self._seen[kind, key] = text
        return text

    def dims(self, coded: Coded) -> list[str | None]:
        return self._texts(
            0, coded, lambda v: isinstance(v, list) and all(_is_shape(s, _SHAPE_DEPTH) for s in v),
            "Input Dims that are not lists of non-negative integer sizes",
        )  # fmt: skip

    def types(self, coded: Coded) -> list[str | None]:
        return self._texts(1, coded, _is_type_list, "Input types that are not lists of text")

    def concrete(self, coded: Coded) -> list[str | None]:
        return self._texts(
            2, coded, _is_concrete_list, "Concrete Inputs that are not lists of values"
        )
