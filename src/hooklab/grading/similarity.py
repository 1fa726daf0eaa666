"""Answers more alike than chance: per exercise, the pairs of students whose answer cells share more of their code
than independently written answers do. It only informs the report; it never changes a score.

Each answer cell is normalised as copydetect's ``filter_code`` normalises code, with Python's own tokenizer (five
times faster than Pygments, which ``filter_code`` uses, and which takes over for a cell Python cannot tokenize):
names become ``V``, strings ``S``, comments and layout go, so renaming and reformatting change nothing. Its
fingerprints are copydetect's winnowed k-gram hashes (its ``winnow``, robust winnowing), less those of the released
template (the cell as students got it), so the given code counts for nobody; a set of hashes, so reordering
statements keeps them. A pair's score is the share of fingerprints the two answers have in common (of each one's,
averaged). An answer with fewer than :data:`MIN_LINES` lines of its own, or :data:`MIN_FINGERPRINTS`, is too
short to tell and is left out. A pair is flagged when its score reaches the exercise's threshold: the larger of a
level that falls with the answers' length (:func:`length_threshold`: short answers share more by chance) and the
exercise's own chance level (its pairs' median plus :data:`SPREADS` robust spreads), so an exercise whose answers
all look alike raises its own bar.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import keyword
import logging
import re
import statistics
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hooklab.grading.redaction import LINE, REDACTED, hidden_lines, hidden_lines_by_number

NOISE = 25  # copydetect's noise threshold: k, the length of a k-gram of normalised code (its default)
GUARANTEE = 30  # copydetect's guarantee threshold: a shared run this long is always seen (its default)
MIN_LINES = 3  # lines of an answer's own (not the template's, not blank or comment) to be compared at all
MIN_FINGERPRINTS = 4  # fingerprints of its own to be compared at all
SHORT, LONG = 0.85, 0.5  # the length threshold for an answer of MIN_FINGERPRINTS, and for a long one
SCALE = 30  # fingerprints at which the length threshold is halfway down from SHORT to LONG
PAIRS_SHOWN = 10  # flagged pairs of an exercise the report shows side by side (its CSV has all)
SPREADS = 5.0  # robust spreads (1.4826 × the median absolute deviation) above the median score: chance's bar
_SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION.*?^[ \t]*### END SOLUTION[^\n]*", re.MULTILINE | re.DOTALL)
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # what nbgrader's generate_assignment writes in its place


@dataclass(frozen=True)
class Pair:
    """Two students' answers to one exercise, their score and the threshold it was held to."""

    first: str
    second: str
    score: float
    threshold: float
    first_answer: str
    second_answer: str


@dataclass
class Exercise:
    """One exercise's comparison: every pair's score (the distribution), the flagged pairs, who was left out."""

    assignment: str
    grade_id: str
    compared: int  # answers compared
    short: list[str] = field(default_factory=list)  # students whose answer was too short to tell
    scores: list[float] = field(default_factory=list)  # every pair's score
    chance: float = 0.0  # the exercise's chance level (median + SPREADS robust spreads)
    thresholds: tuple[float, float] = (SHORT, SHORT)  # its pairs' thresholds: of its longest answers, its shortest
    flagged: list[Pair] = field(default_factory=list)  # highest first


def template_of(source: str) -> str:
    """An answer cell as released: its solution blocks replaced by nbgrader's stub."""
    return _SOLUTION.sub(STUB, source)


_POWERS = np.array([pow(1_000_003, NOISE - 1 - index, 2**64) for index in range(NOISE)], dtype=np.uint64)
_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
           tokenize.ENDMARKER}


@functools.lru_cache(maxsize=4096)  # a class's identical answers (the template left as it was) tokenized once
def normalised(code: str) -> str:
    """``code`` as copydetect compares it: every name ``V`` (keywords kept), every string ``S``, comments and layout
    gone; a cell Python cannot tokenize by :func:`copydetect.utils.filter_code`."""
    out = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in _LAYOUT:
                continue
            if token.type == tokenize.NAME:
                out.append(token.string if keyword.iskeyword(token.string) else "V")
            elif token.type == tokenize.STRING:
                out.append("S")
            else:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _filtered(code)
    return "".join(out)


def _filtered(code: str) -> str:
    from copydetect.utils import filter_code

    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # filter_code logs about files it cannot tokenize: not ours
    try:
        return filter_code(code, "answer.py", language="python")[0]
    finally:
        logger.setLevel(level)


def fingerprints(code: str, boilerplate: Iterable[int] = ()) -> set[int]:
    """The winnowed hashes of ``code``'s normalised text (copydetect's ``winnow`` over its k-grams), less
    ``boilerplate``'s. The k-grams are hashed by a fixed polynomial, not Python's salted ``hash`` (as copydetect's
    own ``hashed_kgrams`` does), so a class gets the same pairs in every run."""
    from copydetect.utils import winnow  # its package imports pyplot: 0.8 s, when needed only

    text = normalised(code)
    if len(text) < NOISE:
        return set()
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    if len(data) < NOISE:
        return set()
    # a polynomial hash of each k-gram of bytes, modulo 2**64 (numpy's unsigned arithmetic wraps)
    windows = np.lib.stride_tricks.sliding_window_view(data, NOISE).astype(np.uint64)
    hashes = (windows @ _POWERS).view(np.int64)
    selected, _ = winnow(hashes, GUARANTEE - NOISE + 1, remove_duplicates=False)
    return {int(value) for value in selected} - set(boilerplate)


def own_lines(answer: str, template: str) -> int:
    """Lines of code of ``answer`` that are not the template's (blank lines and comments not counted)."""
    given = {line.strip() for line in template.splitlines()}
    return sum(1 for line in answer.splitlines()
               if line.strip() and not line.strip().startswith("#") and line.strip() not in given)


def length_threshold(size: Any) -> Any:
    """The score a pair must reach when the smaller answer has ``size`` fingerprints (a number or an array): SHORT
    for the shortest, falling towards LONG as answers grow (two short answers share more by chance)."""
    return LONG + (SHORT - LONG) * SCALE / (SCALE + np.maximum(0, np.asarray(size) - MIN_FINGERPRINTS))


def score(first: set[int], second: set[int]) -> float:
    """The share of fingerprints two answers have in common, of each one's, averaged."""
    common = len(first & second)
    return (common / len(first) + common / len(second)) / 2 if first and second else 0.0


def pair_scores(prints: list[set[int]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`score` of every pair of non-empty fingerprint sets at once (a sparse product), and each set's size."""
    from scipy.sparse import csr_matrix

    columns: dict[int, int] = {}
    indices = [columns.setdefault(value, len(columns)) for found in prints for value in found]
    sizes = np.array([len(found) for found in prints], dtype=float)
    pointers = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    matrix = csr_matrix((np.ones(len(indices)), indices, pointers), shape=(len(prints), max(1, len(columns))))
    common = (matrix @ matrix.T).toarray()
    with np.errstate(divide="ignore", invalid="ignore"):
        return (common / sizes[:, None] + common / sizes[None, :]) / 2, sizes


def compare(assignment: str, grade_id: str, answers: Mapping[str, str], template: str = "") -> Exercise:
    """One exercise's answers (student → cell source) compared pair by pair."""
    boilerplate = fingerprints(template) if template.strip() else set()
    prints = {}
    short = []
    for student, answer in sorted(answers.items()):
        found = fingerprints(answer, boilerplate)
        if own_lines(answer, template) < MIN_LINES or len(found) < MIN_FINGERPRINTS:
            short.append(student)
        else:
            prints[student] = found
    exercise = Exercise(assignment, grade_id, len(prints), short)
    students = sorted(prints)
    scores, sizes = pair_scores([prints[student] for student in students])
    first, second = np.triu_indices(len(students), 1)
    exercise.scores = scores[first, second].tolist()
    if len(exercise.scores) >= 2:
        median = statistics.median(exercise.scores)
        spread = 1.4826 * statistics.median(abs(value - median) for value in exercise.scores)
        exercise.chance = median + SPREADS * spread
    if len(students):
        exercise.thresholds = (max(float(length_threshold(sizes.max())), exercise.chance),
                               max(float(length_threshold(sizes.min())), exercise.chance))
    thresholds = np.maximum(length_threshold(np.minimum.outer(sizes, sizes)), exercise.chance)
    for i, j in zip(*np.nonzero(np.triu(scores >= thresholds, 1)), strict=True):
        a, b = students[i], students[j]
        exercise.flagged.append(Pair(a, b, float(scores[i, j]), float(thresholds[i, j]), answers[a], answers[b]))
    exercise.flagged.sort(key=lambda pair: (-pair.score, pair.first, pair.second))
    return exercise


def answer_cells(notebook: Path) -> dict[str, str]:
    """A notebook's answer cells by grade_id (nbgrader's ``solution`` cells), read as JSON (nbformat's validation
    would take most of the time; a graded notebook was validated before it ran)."""
    cells = {}
    for cell in json.loads(notebook.read_bytes()).get("cells", []):
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) and all(isinstance(s, str) for s in source) else source
        if (cell.get("cell_type") == "code" and isinstance(meta, dict) and meta.get("solution")
                and isinstance(meta.get("grade_id"), str) and isinstance(source, str)):
            cells.setdefault(meta["grade_id"], source)
    return cells


def _redacted(text: str, hidden: set[str], markers: tuple[str, str]) -> str:
    """``text`` with every line that holds a line of a hidden test (or its delimiters) replaced, as the report shows
    it: a short generic line of a hidden test (``with torch.no_grad():``) is in many answers too."""
    return "\n".join(REDACTED if any(marker in line for marker in markers) or any(secret in line for secret in hidden)
                     else line for line in text.splitlines())


def _hidden(source: Path, markers: tuple[str, str]) -> set[str]:
    """The lines of the hidden tests of the course's source notebooks (:func:`hidden_lines`) that no other part of
    them holds: a line that is also in a given cell, a visible test or a solution (``with torch.no_grad():``) is
    no secret, and a student's own answer often holds it."""
    found, elsewhere = set(), set()
    for notebook in sorted(source.glob("*/*.ipynb")):
        for cell in json.loads(notebook.read_bytes()).get("cells", []):
            text = cell.get("source", "")
            text = text if isinstance(text, str) else "".join(text)
            hidden = hidden_lines_by_number(text, *markers) if cell.get("metadata", {}).get("nbgrader", {}).get(
                "grade") else {}
            found |= hidden_lines(text, *markers) if hidden else set()
            elsewhere |= {line.strip() for number, line in enumerate(LINE.findall(text), start=1)
                          if number not in hidden}
    return found - elsewhere


def class_similarity(source: Path, submitted: Path, submissions: Iterable[tuple[str, str]],
                     markers: tuple[str, str] = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")) -> list[Exercise]:
    """Every exercise of the ``(student, assignment)`` submissions found in ``submitted/<student>/<assignment>/``,
    compared with the templates of the assignments' sources in ``source/<assignment>/``. The first
    :data:`PAIRS_SHOWN` flagged pairs of an exercise keep their answers, for the report to show, with no line of any
    hidden test of the course (``markers``: nbgrader's delimiters of them); the others keep their scores only."""
    by_assignment: dict[str, list[str]] = {}
    for student, assignment in submissions:
        by_assignment.setdefault(assignment, []).append(student)
    hidden = _hidden(source, markers)
    exercises = []
    for assignment, students in sorted(by_assignment.items()):
        for notebook in sorted((source / assignment).glob("*.ipynb")):
            templates = {grade_id: template_of(text) for grade_id, text in answer_cells(notebook).items()}
            answers: dict[str, dict[str, str]] = {grade_id: {} for grade_id in templates}
            for student in students:
                path = submitted / student / assignment / notebook.name
                try:
                    cells = answer_cells(path) if path.is_file() and not path.is_symlink() else {}
                except Exception:  # a notebook that is not JSON: not graded either, nothing to compare
                    continue
                for grade_id, text in cells.items():
                    if grade_id in answers:
                        answers[grade_id][student] = text
            for grade_id in templates:
                if answers[grade_id]:
                    exercise = compare(assignment, grade_id, answers[grade_id], templates[grade_id])
                    exercise.flagged = [
                        dataclasses.replace(pair, first_answer=_redacted(pair.first_answer, hidden, markers),
                                            second_answer=_redacted(pair.second_answer, hidden, markers))
                        if rank < PAIRS_SHOWN else dataclasses.replace(pair, first_answer="", second_answer="")
                        for rank, pair in enumerate(exercise.flagged)]
                    exercises.append(exercise)
    return exercises


BANDS = 10  # the distribution's bands of scores, each 1/BANDS wide


def bands(scores: Iterable[float]) -> list[int]:
    """How many pair scores fall in each band [0, 0.1), …, [0.9, 1.0]."""
    counts = [0] * BANDS
    for value in scores:
        counts[min(BANDS - 1, int(value * BANDS))] += 1
    return counts
