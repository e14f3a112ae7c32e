"""Per-name tests (analyses/names.py): ``matcher`` answers as ``pattern.search`` (or ``.match``)
does, for every pattern the analyses use, on names of every case and script and on texts made
to match each pattern (its literal prefilter must let every match through); ``strings`` reads
a plain column as ``astype(str)`` would, missing values as NaN."""

from __future__ import annotations

import importlib
import pkgutil
import random
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gpuprofile.analyses
import gpuprofile.analyses.names as names_module
from gpuprofile.analyses.names import _constants, _parser, matcher, matches, strings


def _patterns() -> list[re.Pattern[str]]:
    found: dict[tuple[str, int], re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(
        gpuprofile.analyses.__path__, gpuprofile.analyses.__name__ + "."
    ):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[value.pattern, value.flags] = value
    return list(found.values())


PATTERNS = _patterns()


def _names(pattern: re.Pattern[str]) -> list[str]:
    """Texts around the pattern's own words: its source in three cases (a literal alternative
    then matches in some form), cut at each '|', with non-ASCII look-alikes (the Kelvin sign
    and the long s, which IGNORECASE takes for k and s; a dotted capital I) put in."""
    words = [w for w in re.split(r"[|()?*+\\^$\[\]{}]", pattern.pattern) if w]
    texts = ["", "void kernel<float>(float*)", "ncclDevKernel_AllReduce"]
    for word in words:
        for form in (word, word.upper(), word.title()):
            texts += [
                form,
                f"x_{form}_y",
                f"void ns::{form}<8>()",
                f"{form}\u212a",
                f"\u0130{form}",
            ]
            texts += [form.replace("k", "\u212a"), form.replace("s", "\u017f")]
            texts += [form.replace("i", "\u0130"), form.replace("K", "\u212a")]
    return texts


def _matching(pattern: re.Pattern[str], rng: random.Random, count: int) -> list[str]:
    """Texts made by walking the pattern's parse (a random branch, a repeat taken its least
    number of times or once more, a member of each class), also in kernel-name context and
    upper case; those the pattern matches are kept."""

    def walk(items: Any) -> str:
        out = []
        for op, arg in items:
            if op is _constants.LITERAL:
                out.append(chr(arg))
            elif op is _constants.IN:
                members = [chr(a) for o, a in arg if o is _constants.LITERAL]
                ranges = [chr(rng.randint(*a)) for o, a in arg if o is _constants.RANGE]
                out.append(rng.choice(members + ranges or ["7"]))
            elif op is _constants.ANY or op is _constants.NOT_LITERAL:
                out.append(rng.choice("xY7_<"))
            elif op is _constants.BRANCH:
                out.append(walk(rng.choice(arg[1])))
            elif op is _constants.SUBPATTERN:
                out.append(walk(arg[-1]))
            elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT):
                low = arg[0]
                out.append("".join(walk(arg[2]) for _ in range(low + rng.randint(0, 1))))
        return "".join(out)

    parsed = list(_parser.parse(pattern.pattern, pattern.flags))
    texts = []
    for _ in range(count):
        core = walk(parsed)
        for text in (core, f"void ns::{core}<float>(int)", f"x {core}", core.upper()):
            if pattern.search(text) is not None:
                texts.append(text)
    return texts


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@pytest.mark.parametrize("anchored", [False, True])
def test_matcher_answers_as_the_pattern(pattern: re.Pattern[str], anchored: bool) -> None:
    test = matcher(pattern, anchored)
    reference = pattern.match if anchored else pattern.search
    names = _names(pattern) + _matching(pattern, random.Random(pattern.pattern), 40)
    assert [test(n) for n in names] == [reference(n) is not None for n in names]


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@pytest.mark.parametrize("anchored", [False, True])
def test_matches_answers_as_the_pattern(pattern: re.Pattern[str], anchored: bool) -> None:
    """A column's names, searched all at once (Searchable: the pattern runs only where the
    joined names hold one of its literal runs), answer as the pattern on each name. Names
    that hold a newline, the joint, and a missing name are among them."""
    reference = pattern.match if anchored else pattern.search
    texts = _names(pattern) + _matching(pattern, random.Random(pattern.pattern), 40)
    texts += [f"{a}\n{b}" for a, b in zip(texts[::7], texts[3::7], strict=False)]
    column = pd.Series(pd.Categorical([*texts, None, *texts[:5]]))
    expected = [isinstance(n, str) and reference(n) is not None for n in column.tolist()]
    assert matches(column, pattern, anchored=anchored).tolist() == expected


def test_made_texts_match() -> None:
    """Most patterns get texts that match them: the check above sees matches, not only
    names that fail the prefilter."""
    rng = random.Random(0)
    assert sum(bool(_matching(p, rng, 5)) for p in PATTERNS) >= 0.8 * len(PATTERNS)


@pytest.mark.parametrize(
    "source",
    [r"moe_|\bep\b", r"MoE", r"[KMGT]iB", r"\x41b", "\u212a", r"[A-z]", r"[\.-Z]x", r"[0-Z]"],
)
def test_lowered_where_alike(source: str) -> None:
    """Patterns lowering serves (lower- and upper-case letters, classes of letters) and those
    it would change (a hex escape, a non-ASCII letter, ranges across a case: [A-z] holds
    [\\]^_`, [.-Z] holds no lower-case letter) answer alike on these texts."""
    pattern = re.compile(source, re.IGNORECASE)
    texts = ["ab", "AB", "moe", "MOE", "k", "K", "[", "_", "`", "b", "B", "bx", "BX", "gib", "z"]
    assert [matcher(pattern)(t) for t in texts] == [pattern.search(t) is not None for t in texts]


def test_strings_of_a_plain_column() -> None:
    column = pd.Series(["a", None, ("x", 1), np.nan, 2.5], dtype=object)
    got = strings(column)
    assert got.dtype == object
    assert [g if isinstance(g, str) else "missing" for g in got] == [
        "a",
        "missing",
        "('x', 1)",
        "missing",
        "2.5",
    ]
    assert list(strings(column, rows=np.array([4, 0]))) == ["2.5", "a"]
    categorical = column.iloc[[0, 4]].astype(str).astype("category")
    assert list(strings(categorical)) == ["a", "2.5"]


@pytest.mark.parametrize(
    "source", [r"a(?i:BC)d", r"(?i:Kernel)_x", r"(?i:Kernel)|zz", r"q(?:ab|cd){2}y", r"z(?:e|)w"]
)
def test_prefilter_of_inline_flags_and_branches(source: str) -> None:
    """Case-sensitive patterns with a case-insensitive group, a repeated branch or an empty
    branch: the prefilter lets every match through."""
    pattern = re.compile(source)
    texts = ["aBCd", "abcd", "aBcd", "KERNEL_x", "kernel_x", "qabcdy", "qcdaby", "zw", "zew", "x"]
    assert [matcher(pattern)(t) for t in texts] == [pattern.search(t) is not None for t in texts]


@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_text_column_is_the_column_a_frame_makes(
    monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    """text_column(texts, at) is the column pandas makes of the object array texts[at] (at -1:
    missing), in the storage its "str" has: dtype, values and NaNs alike."""
    dtype = pd.StringDtype(storage, na_value=np.nan)
    monkeypatch.setattr(names_module, "_STR", dtype)
    texts = ["computed", "", "unknown", "Ωmega", "a\nb"]
    at = np.array([0, 1, -1, 2, 3, 3, 4, 0, -1], np.int64)
    objects = np.array([*texts, np.nan], object)[at]
    column = pd.Series(names_module.text_column(texts, at))
    expected = pd.Series(pd.array(objects, dtype=dtype))
    assert column.dtype == expected.dtype
    pd.testing.assert_series_equal(column, expected)
    if storage == "pyarrow":  # the default here: what a frame infers from object text
        pd.testing.assert_series_equal(column, pd.DataFrame({"c": objects})["c"], check_names=False)
