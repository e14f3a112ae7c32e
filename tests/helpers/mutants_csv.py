"""Mutants of an Nsight Compute CSV (``ncu --csv``) (issue 16): cells changed, columns dropped,
rows cut or repeated, numbers that do not parse, the file cut short. Every choice comes from a
``random.Random``, so hypothesis can hand one in and shrink what fails."""

from __future__ import annotations

import csv
import io
import random

CELLS = (
    "", "-1", "0", "nan", "inf", "-inf", "1e400", "True", "9223372036854775808",
    "1,2,3", "(0, 0, 0)", "(-1, 2, 3)", "(1, 2)", "x", "\x1b[2Jgone", "12.0.1", "n/a", '"',
)  # fmt: skip


def _split(text: str) -> tuple[list[str], list[list[str]]]:
    """The lines before the CSV header (program output ncu lets through) and the CSV rows."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), 0)
    return lines[:start], list(csv.reader(lines[start:]))


def _change_cells(rows: list[list[str]], rng: random.Random) -> None:
    body = rows[1:]
    if not body:
        return
    column = rng.randrange(len(rows[0]))
    value = rng.choice(CELLS)
    for row in rng.sample(body, k=rng.choice((1, 1, max(1, len(body) // 3), len(body)))):
        if column < len(row):
            row[column] = value


def _drop_column(rows: list[list[str]], rng: random.Random) -> None:
    column = rng.randrange(len(rows[0]))
    for row in rows:
        if column < len(row):
            del row[column]


def _cut_rows(rows: list[list[str]], rng: random.Random) -> None:
    if len(rows) > 1:
        del rows[rng.randrange(1, len(rows)) :]


def _delete_rows(rows: list[list[str]], rng: random.Random) -> None:
    for index in sorted(rng.sample(range(1, len(rows)), k=min(len(rows) - 1, 3)), reverse=True):
        del rows[index]


def _repeat_rows(rows: list[list[str]], rng: random.Random) -> None:
    if len(rows) > 1:
        rows.extend([list(row) for row in rows[1:]] * rng.choice((1, 2)))


def _short_row(rows: list[list[str]], rng: random.Random) -> None:
    if len(rows) > 1:
        row = rng.choice(rows[1:])
        del row[rng.randrange(len(row) + 1) :]


def _swap_header(rows: list[list[str]], rng: random.Random) -> None:
    header = rows[0]
    if len(header) > 1:
        a, b = rng.sample(range(len(header)), 2)
        header[a], header[b] = header[b], header[a]


MUTATIONS = (_change_cells, _change_cells, _change_cells, _drop_column, _cut_rows)
MUTATIONS += (_delete_rows, _repeat_rows, _short_row, _swap_header)


def mutate_csv(data: bytes, rng: random.Random) -> bytes:
    """The bytes of one mutant of an ncu CSV.

    Parameters:
        data: the CSV file's bytes (a UTF-8 BOM and program output before the header are kept).
        rng: where every choice comes from.

    Returns:
        The mutant's bytes, sometimes cut short.
    """
    text = data.decode("utf-8-sig")
    preamble, rows = _split(text)
    if rows:
        for _ in range(rng.choice((1, 1, 2, 3))):
            rng.choice(MUTATIONS)(rows, rng)
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    mutant = ("\n".join(preamble) + "\n" if preamble else "") + out.getvalue()
    raw = (b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b"") + mutant.encode()
    if rng.random() < 0.1:
        return raw[: rng.randrange(len(raw))]
    return raw
