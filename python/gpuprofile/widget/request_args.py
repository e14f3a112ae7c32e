"""What every request handler shares: the data it answers from, and reading a message's
fields (a bad field is a BadRequest, whose text the browser shows)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gpuprofile.trace.model import Trace
from gpuprofile.widget.timeline import TimelineData

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis

T = TypeVar("T")


Reply = tuple[dict[str, Any], list[bytes]]


@dataclass(eq=False)
class Source:
    data: TimelineData
    trace: Trace
    # The trace's analysis where the widget was made with one (its cached tables, such as the
    # matched collectives, are then not computed twice); else made on the first request.
    analysis: Analysis | None = None


def analysis_of(source: Source) -> Analysis:
    """The Analysis whose facts (matched collectives, op tree) requests read: the widget's, or
    one made now of its trace (a live view during a capture has no report yet). Its trace has
    the widget trace's rows in the same order: aligning clocks only moves times."""
    if source.analysis is None:
        from gpuprofile.analyses.context import Analysis

        source.analysis = Analysis(source.trace)
    return source.analysis


class BadRequest(ValueError):
    """A request the browser should not have sent: the reply says why, in one line."""


def cached(data: TimelineData, key: str, build: Callable[[], T]) -> T:
    """data.cache[key], built on first use (indexes a kind of request needs, kept)."""
    if key not in data.cache:
        data.cache[key] = build()
    value: T = data.cache[key]
    return value


def number(message: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = message.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise BadRequest(f"{key!r} must be a finite number, not {value!r}")
    return float(value)


def span(message: Mapping[str, Any]) -> tuple[float, float]:
    t0, t1 = number(message, "start"), number(message, "end")
    if t1 < t0:
        raise BadRequest(f"end {t1} is before start {t0}")
    return t0, t1


def event_id(data: TimelineData, message: Mapping[str, Any]) -> int:
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < data.total:
        known = f"ids are 0..{data.total - 1}" if data.total else "the trace has no events"
        raise BadRequest(f"no event with id {value!r} ({known})")
    return value
