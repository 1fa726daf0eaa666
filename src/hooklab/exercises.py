"""How a notebook of the pack names its exercises: a markdown heading ``### Exercise N — title (P points)``
(``Puzzle`` in 08) above the exercise's answer and test cells."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

HEADING = re.compile(r"^#+ ((?:Exercise|Puzzle) \d+ — .+?)(?: \((\d+(?:\.\d+)?) points?\))?$", re.M)


def titled(cells: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """(title of its exercise, cell) for each of a notebook's cells, the title being that of the last exercise
    heading at or above it ("" before the first)."""
    title = ""
    for cell in cells:
        heading = HEADING.search(cell.get("source", "")) if cell.get("cell_type") == "markdown" else None
        title = heading.group(1) if heading else title
        yield title, cell


def test_cells(cells: Iterable[Any]) -> list[tuple[str, Any]]:
    """(title of its exercise, cell) for every test cell (nbgrader's ``grade`` and not ``solution``) of a notebook's
    cells (:func:`titled`)."""
    return [(title, cell) for title, cell in titled(cells)
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade")
            and not cell["metadata"]["nbgrader"].get("solution")]
