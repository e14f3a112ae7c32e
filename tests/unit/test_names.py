"""Per-name tests (analyses/names.py): ``matcher`` answers as ``pattern.search`` (or ``.match``)
does, for every case-insensitive pattern the analyses use, on names of every case and script;
``strings`` reads a plain column as ``astype(str)`` would, missing values as NaN."""

from __future__ import annotations

import importlib
import pkgutil
import re

import numpy as np
import pandas as pd
import pytest

import gpuprofile.analyses
from gpuprofile.analyses.names import matcher, strings


def _case_insensitive_patterns() -> list[re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(
        gpuprofile.analyses.__path__, gpuprofile.analyses.__name__ + "."
    ):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, re.Pattern) and value.flags & re.IGNORECASE:
                found[value.pattern] = value
    return list(found.values())


PATTERNS = _case_insensitive_patterns()


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


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@pytest.mark.parametrize("anchored", [False, True])
def test_tester_answers_as_the_pattern(pattern: re.Pattern[str], anchored: bool) -> None:
    test = matcher(pattern, anchored)
    reference = pattern.match if anchored else pattern.search
    names = _names(pattern)
    assert [test(n) for n in names] == [reference(n) is not None for n in names]


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
