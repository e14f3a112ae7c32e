"""Tests and conversions on the categorical name columns, done once per distinct name.

A trace has 10^5 ops or runtime calls but a few thousand names: a regular expression run per
row, or ``.astype(str)`` of a whole column, costs milliseconds that a per-category answer
spread over the codes does not. Answers are kept per categories Index (immutable, shared by
every slice of a column) for as long as that Index lives.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

try:  # Python 3.11 and later
    from re import _constants, _parser  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as _constants
    import sre_parse as _parser

import numpy as np
import pandas as pd

# Per categories Index: per_category's arrays, and what matches keeps beside them.
_PER_CATEGORIES: dict[int, tuple[weakref.ref[pd.Index], dict[Hashable, Any]]] = {}


def matches(
    names: pd.Series,
    pattern: re.Pattern[str],
    *,
    anchored: bool = False,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Per row (of ``rows``, positions in names, where given), whether the name matches
    (``pattern.search``; ``pattern.match`` if anchored), as ``names.astype(str).str.contains
    (pattern)`` (``.str.match``) says; missing names never match. Give rows rather than
    index the answer for every row: a rank's rows of a job's column cost that rank's length."""
    names = categorical(names)
    key = ("matches", pattern, anchored)
    found = _cache_of(names.cat.categories)
    if key not in found:
        if _SEARCHABLE not in found:
            found[_SEARCHABLE] = Searchable(category_texts(names).tolist())
        answers = np.zeros(len(names.cat.categories) + 1, bool)  # last: a missing name
        answers[found[_SEARCHABLE].matching(pattern, anchored)] = True
        answers.flags.writeable = False
        found[key] = answers
    return _at(names, found[key], rows)


class Searchable:
    """Texts that many patterns are tried on: a pattern runs only on the texts that hold one
    of the literal runs every match of it holds (_needles), found by str.find in all the
    texts joined, once per pattern, not by a call per text."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self._joined: dict[bool, tuple[str, np.ndarray, np.ndarray]] = {}

    def matching(self, pattern: re.Pattern[str], anchored: bool = False) -> list[int]:
        """The positions of the texts the pattern matches (search; match if anchored)."""
        test = matcher(pattern, anchored)
        return [i for i in self._candidates(_needles(pattern)) if test(self.texts[i])]

    def _candidates(self, needles: tuple[tuple[str, ...], bool] | None) -> list[int]:
        if needles is None:
            return list(range(len(self.texts)))
        needed, lowered = needles
        joined, starts, unlowered = self._joined_texts(lowered)
        hits = np.asarray([at for t in needed for at in _found(joined, t)], np.int64)
        # A needle found across a separator marks a text that then fails the test: no harm.
        found = np.searchsorted(starts, hits, side="right") - 1
        positions: list[int] = np.unique(np.r_[found, unlowered]).tolist()
        return positions

    def _joined_texts(self, lowered: bool) -> tuple[str, np.ndarray, np.ndarray]:
        """The texts (lowered, where asked) joined by newlines, where each begins, and the
        texts that lowering skipped (not ASCII: the pattern runs on each of them)."""
        if lowered not in self._joined:
            texts = self.texts
            unlowered = np.zeros(0, np.int64)
            if lowered:  # ASCII texts only: lowering keeps their length, and so the starts
                ascii_ = np.fromiter(map(str.isascii, texts), bool, len(texts))
                texts = [t.lower() if a else t for t, a in zip(texts, ascii_.tolist(), strict=True)]
                unlowered = np.flatnonzero(~ascii_)
            lengths = np.fromiter(map(len, texts), np.int64, len(texts))
            starts = np.r_[0, np.cumsum(lengths + 1)[:-1]] if texts else lengths
            self._joined[lowered] = ("\n".join(texts), starts, unlowered)
        return self._joined[lowered]


# matches' Searchable of a categories' texts, among per_category's answers.
_SEARCHABLE = ("searchable",)


@functools.cache
def _needles(pattern: re.Pattern[str]) -> tuple[tuple[str, ...], bool] | None:
    """Texts one of which every text the pattern matches holds (matcher's), and whether they
    are to be found in the text lowered (a case-insensitive pattern, on ASCII text); None
    where there are none."""
    if not pattern.flags & re.IGNORECASE:
        needed = _needed_texts(pattern)
        return (needed, False) if needed else None
    source = _lowered(pattern.pattern)
    if source is None:
        return None
    needed = _needed_texts(re.compile(source, pattern.flags & ~re.IGNORECASE))
    return (needed, True) if needed else None


def _found(text: str, needle: str) -> list[int]:
    """Where needle begins in text, every time (str.find: many times a regular expression's
    scan)."""
    out = []
    at = text.find(needle)
    while at >= 0:
        out.append(at)
        at = text.find(needle, at + 1)
    return out


@functools.cache
def matcher(pattern: re.Pattern[str], anchored: bool = False) -> Callable[[str], bool]:
    """Whether a text matches (``pattern.search``; ``pattern.match`` if anchored). A
    case-insensitive pattern reads an ASCII text lowered, with its own letters lowered and
    without the flag, where that gives the same answer (_lowered): ASCII letters have one
    case pair each, and Python's case-insensitive matching costs about twice the plain one on
    long kernel names. Other texts and patterns are matched as they are."""
    test = pattern.match if anchored else pattern.search
    source = _lowered(pattern.pattern) if pattern.flags & re.IGNORECASE else None
    if source is None:
        needed = None if pattern.flags & re.IGNORECASE else _needed_texts(pattern)
        if needed is None:
            return lambda text: test(text) is not None
        return lambda text: any(t in text for t in needed) and test(text) is not None
    plain = re.compile(source, pattern.flags & ~re.IGNORECASE)
    lowered = plain.match if anchored else plain.search
    lowered_needed = _needed_texts(plain) or ("",)

    def matched(text: str) -> bool:
        if not text.isascii():
            return test(text) is not None
        low = text.lower()
        return any(t in low for t in lowered_needed) and lowered(low) is not None

    return matched


def _needed_texts(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Texts one of which every match of a case-sensitive pattern holds, read from its parse:
    per branch, the first run of literal characters a match of it must contain (a function's
    name, mostly, which few kernel names share). A name that holds none is no match, found
    without running the expression (``in`` scans a long kernel name many times faster). None
    where the parse gives none (a branch without a literal run, a case-insensitive part)."""
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    found = _needed_in(list(parsed))
    return tuple(dict.fromkeys(found)) if found else None


def _needed_in(items: list[tuple[Any, Any]]) -> list[str] | None:
    """Texts one of which a match of a sequence holds: a run of literal characters in it, or
    those a group, branch or repeat (taken at least once) in it needs; of all these, the
    choice whose shortest text is longest (a match holds each choice: the rarest serves
    best; "_" alone would let nearly every kernel name through)."""
    run: list[str] = []
    choices: list[list[str]] = []
    for op, arg in [*items, (None, None)]:
        if op is _constants.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            choices.append(["".join(run)])
            run = []
        inner = _needed_by(op, arg) if op is not None else None
        if inner:
            choices.append(inner)
    return max(choices, key=lambda texts: min(map(len, texts))) if choices else None


def _needed_by(op: Any, arg: Any) -> list[str] | None:
    """_needed_in of one item that holds a sequence: a group, a branch (every branch must
    need something), a repeat taken at least once; None for any other item."""
    if op is _constants.SUBPATTERN and not arg[1] & re.IGNORECASE:
        return _needed_in(list(arg[-1]))
    if op is _ATOMIC_GROUP:
        return _needed_in(list(arg))
    if op is _constants.BRANCH:
        branches = [_needed_in(list(b)) for b in arg[1]]
        return [t for b in branches if b for t in b] if all(branches) else None
    if op in _REPEATS and arg[0] >= 1:
        return _needed_in(list(arg[2]))
    return None


# Atomic groups and possessive repeats came with Python 3.11; before, no parse holds them.
_ATOMIC_GROUP = getattr(_constants, "ATOMIC_GROUP", object())
_REPEATS = tuple(
    getattr(_constants, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_constants, name)
)


def _lowered(source: str) -> str | None:
    """A case-insensitive pattern's source with its letters lowered, which matches lowered
    ASCII text without the flag as the source matches the text with it; None where that is
    not certain: a non-ASCII pattern, an escape other than these classes and punctuation
    (\\x41 is an "A"; \\W, \\S, \\D and \\B are classes, not letters), a range with a
    letter at one end and no letter of the same case at the other ([A-z], [0-Z]), or what
    lowering makes no pattern of (an inline flag such as (?L))."""
    if not source.isascii():
        return None
    parts = _KNOWN_ESCAPES.split(source)
    escapes = _KNOWN_ESCAPES.findall(source)
    if any("\\" in p for p in parts) or _MIXED_RANGE.search("#".join(parts)):
        return None  # an escape as a range's end reads as "#", no letter: refused
    lowered = "".join(p.lower() + e for p, e in zip(parts, [*escapes, ""], strict=True))
    try:
        re.compile(lowered)
    except re.error:
        return None
    return lowered


_KNOWN_ESCAPES = re.compile(r"\\[dDwWsSbB.()\[\]{}|*+?^$\\/:<>#&,=!-]")
# A range one of whose ends is a letter and the other no letter of the same case.
_MIXED_RANGE = re.compile(r"[A-Za-z]-[^A-Za-z]|[^A-Za-z]-[A-Za-z]|[A-Z]-[a-z]|[a-z]-[A-Z]")


def one_of(
    names: pd.Series, members: frozenset[str], *, rows: np.ndarray | None = None
) -> np.ndarray:
    """Per row (of ``rows``, as matches takes them), whether the name is one of members;
    missing names never are."""
    names = categorical(names)
    return _at(names, per_category(names, ("one_of", members), members.__contains__, bool), rows)


def strings(names: pd.Series, *, rows: np.ndarray | None = None) -> np.ndarray:
    """``names.astype(str).to_numpy()`` (at ``rows``, as matches takes them): an object array
    of str, NaN where a name is missing."""
    if not isinstance(names.dtype, pd.CategoricalDtype):
        # A plain column is read once: making it categorical first costs more than str().
        values = names.to_numpy(dtype=object)
        values = values if rows is None else values[rows]
        missing = pd.isna(values)
        return np.array([np.nan if m else str(v) for v, m in zip(values, missing)], object)
    return _at(names, code_texts(names), rows)


def code_texts(names: pd.Series) -> np.ndarray:
    """Per code of names, its text, then the NaN that code -1 (a missing name) reads: index it
    with codes(names) (read-only, shared; strings' own table)."""
    return per_category(names, "strings", str, object, np.nan)


def _at(names: pd.Series, per_name: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    at = codes(names) if rows is None else codes(names)[rows]
    return np.asarray(per_name[at])


def text_column(
    texts: Sequence[str] | np.ndarray, at: np.ndarray
) -> pd.api.extensions.ExtensionArray:
    """texts[at] (at -1: missing, NaN) as pandas' own text column (dtype "str"), what a frame
    makes of an object array of str: built by one take in Arrow where "str" is stored there,
    not by pandas checking each of the rows' Python strings (milliseconds per 10^5 rows)."""
    at = np.asarray(at, np.int64)
    listed = np.asarray(texts, object).tolist()
    if _STR.storage == "pyarrow":
        import pyarrow as pa

        taken = pa.array(listed, pa.large_string()).take(pa.array(at, mask=at < 0))
        column: pd.api.extensions.ExtensionArray = pd.array(taken, dtype=_STR)
    else:
        column = pd.array(np.asarray([*listed, np.nan], object)[at], dtype=_STR)  # -1: NaN
    return column


def string_column(names: pd.Series) -> pd.api.extensions.ExtensionArray:
    """strings(names) as pandas' "str" column (text_column): for a frame's name column."""
    return text_column(category_texts(names), codes(names))


# pandas' "str" (pandas_dtype("str")): stored in Arrow where pyarrow is installed, in Python
# objects elsewhere.
_STR = pd.StringDtype(na_value=np.nan)


def codes(names: pd.Series) -> np.ndarray:
    """Per row, the position of its name among the categories; -1 where it is missing."""
    # The Categorical's own codes: .cat.codes would wrap them in a Series first.
    codes_: np.ndarray = categorical(names).array.codes
    return codes_


def categorical(names: pd.Series) -> pd.Series:
    """names as a categorical Series (itself when it is one): convert a plain column once before
    calling per_category and codes on it, or each converts it again."""
    return names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")


def per_category(
    names: pd.Series,
    key: Hashable,
    fn: Callable[[str], object],
    dtype: type = object,
    missing: object = None,
) -> np.ndarray:
    """fn(str(category)) per category of names, then ``missing``, so that indexing with
    codes(names) gives per row values (code -1, a missing name, reads the last entry).

    fn runs once per distinct name; its answers are kept under key, so fn must be pure and
    one key must always mean one fn. Read-only: the array is shared."""
    found = _cache_of(categorical(names).cat.categories)
    if key not in found:
        texts = category_texts(names).tolist()
        values: np.ndarray = np.array([*map(fn, texts), missing], dtype=dtype)
        values.flags.writeable = False
        found[key] = values
    answers: np.ndarray = found[key]
    return answers


def category_texts(names: pd.Series) -> np.ndarray:
    """The categories of names as str, in code order (read-only, shared): listed once per
    categories Index, since listing text categories (pyarrow) costs milliseconds each time."""
    categories = categorical(names).cat.categories
    found = _cache_of(categories)
    if _TEXTS not in found:
        texts = np.array([str(c) for c in categories.tolist()], dtype=object)
        texts.flags.writeable = False
        found[_TEXTS] = texts
    listed: np.ndarray = found[_TEXTS]
    return listed


# category_texts' entry among per_category's answers.
_TEXTS = ("categories as str",)


def _cache_of(categories: pd.Index) -> dict[Hashable, Any]:
    # An Index is unhashable: key by id, and drop the entry when that Index is collected (its
    # id can be reused only after that).
    key = id(categories)
    entry = _PER_CATEGORIES.get(key)
    if entry is None or entry[0]() is not categories:
        ref = weakref.ref(categories, functools.partial(_forget, key))
        entry = (ref, {})
        _PER_CATEGORIES[key] = entry
    return entry[1]


def _forget(key: int, ref: weakref.ref[pd.Index]) -> None:
    entry = _PER_CATEGORIES.get(key)
    if entry is not None and entry[0] is ref:
        del _PER_CATEGORIES[key]
