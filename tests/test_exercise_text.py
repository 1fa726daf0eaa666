"""Every exercise states its answer's requirements as a numbered list, and its Checked bullets name them all.

The shape (STYLE.md, issue 30): ``### Exercise N — title (P points)`` (``Puzzle`` in 08), what to produce,
``**Requirements**`` with items ``1.``, ``2.``, …, then ``**Checked** (…):`` with bullets that start with the
requirement numbers they check (``- 1, 3–4:`` or ``- 2 (structurally):``). A requirement no test can check says
so in its own text: ``(not checked: …)``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from conftest import nbgrader_cells, notebook_id, solution_notebooks

SOLUTIONS = solution_notebooks()
HEADING = re.compile(r"^### (Exercise|Puzzle) (\d+) — .+ \((\d+) points?\)$", re.M)
REQUIREMENT = re.compile(r"^(\d+)\. ", re.M)
BULLET = re.compile(r"^- ((?:\d+(?:–\d+)?)(?:, \d+(?:–\d+)?)*)(?: \(structurally\))?: \S", re.M)
UNCHECKED = "(not checked: "


def exercise_texts(source: Path) -> list[tuple[str, str]]:
    """(heading, text) of every exercise: from its heading to the next heading or code cell."""
    nb = nbformat.read(source, as_version=4)
    texts, current = [], None
    for cell in nb.cells:
        match = HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = [match.group(0), cell.source[match.start():]]
            texts.append(current)
        elif cell.cell_type == "markdown" and current is not None and "**Checked**" not in current[1]:
            current[1] += "\n\n" + cell.source
        else:
            current = None
    return [tuple(text) for text in texts]


def numbers(refs: str) -> set[int]:
    """'1, 3–5' -> {1, 3, 4, 5}."""
    found = set()
    for part in refs.split(", "):
        low, _, high = part.partition("–")
        found.update(range(int(low), int(high or low) + 1))
    return found


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_every_exercise_has_a_heading(source: Path):
    nb = nbformat.read(source, as_version=4)
    assert len(exercise_texts(source)) == len(nbgrader_cells(nb, "solution")), "one heading per answer cell"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_every_requirement_is_numbered_and_checked(source: Path):
    for heading, text in exercise_texts(source):
        assert "**Requirements**" in text, f"{heading}: no **Requirements** list"
        assert "**Checked**" in text, f"{heading}: no **Checked** paragraph"
        requirements, checked = text.split("**Requirements**", 1)[1].split("**Checked**", 1)
        items = re.split(r"^\d+\. ", requirements, flags=re.M)[1:]
        listed = [int(n) for n in REQUIREMENT.findall(requirements)]
        assert listed == list(range(1, len(listed) + 1)) and listed, (f"{heading}: requirements are numbered 1, 2, … "
                                                                      f"({listed})")
        bullets = [line for line in checked.splitlines() if line.startswith("- ")]
        assert bullets, f"{heading}: the Checked paragraph has no bullets"
        named: set[int] = set()
        for bullet in bullets:
            match = BULLET.match(bullet)
            assert match, (f"{heading}: a Checked bullet starts with the requirements it checks ('- 1, 3:'): "
                           f"{bullet[:60]!r}")
            named |= numbers(match.group(1))
        unchecked = {n for n, item in zip(listed, items) if UNCHECKED in item}
        assert named <= set(listed), (f"{heading}: Checked names requirements that do not exist: "
                                      f"{sorted(named - set(listed))}")
        assert not named & unchecked, (f"{heading}: requirements {sorted(named & unchecked)} are both checked and not "
                                       "checked")
        missing = set(listed) - named - unchecked
        assert not missing, (f"{heading}: requirements {sorted(missing)} are neither checked nor marked '(not checked: "
                             "…)'")
