"""Puzzle mode: predict first, then step. The state machines are plain Python (:class:`OrderPuzzle`,
:class:`Prediction`); :class:`OrderPicker` is their ipywidgets face. Predictions are not graded: a
puzzle only counts the tries it took.
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as widgets

from hooklab.widgets.view import SteppedView

WRONG_CLASS = "hooklab-wrong"  # CSS class of what a prediction got wrong, once revealed
WRONG_STYLE = "background:#f8c4c4"
WRONG_MARK, RIGHT_MARK = "✗", "✓"


class PuzzleError(ValueError):
    """A move the puzzle does not allow; the message says why, in the student's terms."""


def attempt(move: Callable[[], object]) -> str:
    """Make a puzzle move; returns why the puzzle refused it, or ""."""
    try:
        move()
    except PuzzleError as error:
        return str(error)
    return ""


def tries_text(tries: int) -> str:
    return f"{tries} {'try' if tries == 1 else 'tries'}"


class _Tries:
    """What both puzzles keep: the tries (one per check), what the last check got wrong, and whether it is
    over (solved, or the answer revealed)."""

    subject = ""  # what the student checks, in the messages
    shown = ""  # what the outcome adds once the answer is revealed

    def __init__(self) -> None:
        self.tries = 0
        self.wrong: list = []  # what the last check got wrong
        self.checked = False  # the current picks are the ones last checked
        self.solved = False
        self.revealed = False

    @property
    def over(self) -> bool:
        return self.solved or self.revealed

    def _scored(self, wrong: list) -> list:
        self.tries += 1
        self.wrong = wrong
        self.checked = True
        self.solved = not wrong
        return list(wrong)

    def reveal(self) -> None:
        """Give up: show the answer (allowed after a check)."""
        if not self.tries:
            raise PuzzleError(f"check your {self.subject} first: Check, then Show answer")
        self.revealed = True

    def outcome(self) -> str:
        """How the puzzle went, in one line ('' while it is not over)."""
        if self.solved:
            return f"solved in {tries_text(self.tries)}"
        if self.revealed:
            return f"answer shown after {tries_text(self.tries)}{self.shown}"
        return ""


class OrderPuzzle(_Tries):
    """Put items in order by picking them one at a time.

    ``answer`` is the right order of item keys (a key may repeat: equal keys are interchangeable);
    ``choices`` is how they are offered (by default ``answer`` shuffled with ``seed``); ``labels``
    maps a key to what the student reads. ``picks`` holds the indices into ``choices`` picked so far.
    :meth:`check` counts a try and returns the wrong positions; once solved, or after
    :meth:`reveal`, the puzzle is over and ``wrong`` keeps the positions the last check got wrong.
    """

    subject = "order"
    shown = f"; {WRONG_MARK} marks what the last try got wrong"

    def __init__(
        self,
        answer: Sequence[str],
        choices: Sequence[str] | None = None,
        labels: Mapping[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        self.answer = list(answer)
        if choices is None:
            choices = list(answer)
            shuffle = random.Random(seed)
            while len(set(choices)) > 1 and choices == self.answer:  # never offered already in order
                shuffle.shuffle(choices)
        if sorted(choices) != sorted(self.answer):
            raise ValueError("choices must hold the items of answer, each as often")
        self.choices = list(choices)
        self.labels = dict(labels or {})
        self.picks: list[int] = []
        super().__init__()

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    @property
    def picked(self) -> list[str]:
        """The keys picked so far, in order."""
        return [self.choices[i] for i in self.picks]

    @property
    def remaining(self) -> list[int]:
        """Indices of the choices not picked yet."""
        return [i for i in range(len(self.choices)) if i not in self.picks]

    @property
    def complete(self) -> bool:
        return len(self.picks) == len(self.choices)

    def _playing(self) -> None:
        if self.over:
            raise PuzzleError("the puzzle is over: the real order is shown")

    def pick(self, choice: int | str) -> None:
        """Pick a choice by index, or by key (its first unpicked copy), as the next in order."""
        self._playing()
        if isinstance(choice, str):
            free = [i for i in self.remaining if self.choices[i] == choice]
            if not free:
                known = choice in self.choices
                why = "already picked" if known else "not one of the choices"
                raise PuzzleError(f"{self.label(choice)!r} is {why}")
            choice = free[0]
        if not 0 <= choice < len(self.choices):
            raise PuzzleError(f"there is no choice {choice}: pick 0 to {len(self.choices) - 1}")
        if choice in self.picks:
            raise PuzzleError(f"{self.label(self.choices[choice])!r} is already picked (Undo takes back the last pick)")
        self.picks.append(choice)
        self.checked = False

    def undo(self) -> None:
        """Take back the last pick."""
        self._playing()
        if not self.picks:
            raise PuzzleError("nothing to undo: nothing picked yet")
        self.picks.pop()
        self.checked = False

    def clear(self) -> None:
        """Take back every pick."""
        self._playing()
        self.picks.clear()
        self.checked = False

    def check(self) -> list[int]:
        """Count a try; return the positions (0-based) where the picked order differs from the real one."""
        self._playing()
        if not self.complete:
            left = len(self.choices) - len(self.picks)
            raise PuzzleError(f"pick all {len(self.choices)} first: {left} left")
        return self._scored([i for i, (key, right) in enumerate(zip(self.picked, self.answer)) if key != right])

    def status(self) -> str:
        """The picks so far, marked right or wrong once checked, and the tries."""
        marks = [
            f"{position + 1}. {self.label(key)}"
            + (f" {WRONG_MARK if position in self.wrong else RIGHT_MARK}" if self.checked else "")
            for position, key in enumerate(self.picked)
        ]
        lines = ["your order: " + ("; ".join(marks) if marks else "(nothing picked yet)")]
        if self.over:
            lines.append(self.outcome())
        elif self.checked:
            wrong = ", ".join(str(position + 1) for position in self.wrong)
            lines.append(f"try {self.tries}: {len(self.wrong)} wrong (position {wrong}): Undo to change them, or Show "
                         "answer")
        elif self.tries:
            lines.append(f"{tries_text(self.tries)} so far")
        return "\n".join(lines)

    def text(self, prompt: str) -> str:
        """The puzzle as text: the prompt, the choices (lettered), the status."""
        letters = [f"  {chr(ord('a') + i) if i < 26 else i}) {self.label(key)}" for i, key in enumerate(self.choices)]
        return "\n".join([prompt, "choices:", *letters, self.status()])


class OrderPicker:
    """The widgets of an :class:`OrderPuzzle`: one button per choice, Undo, Check and Show answer, and
    a status line. ``on_over`` runs once the puzzle is over (solved or revealed); ``indents[i]`` indents
    choice ``i`` (in em), for a tree."""

    def __init__(
        self,
        puzzle: OrderPuzzle,
        prompt: str,
        on_over: Callable[[], None],
        indents: Sequence[int] = (),
    ) -> None:
        self.puzzle, self.on_over = puzzle, on_over
        self.buttons = []
        for i, key in enumerate(puzzle.choices):
            button = widgets.Button(description=puzzle.label(key), tooltip="pick as the next one",
                                    layout=widgets.Layout(width="auto",
                                                          margin="2px 2px 2px "
                                                                 f"{indents[i] if i < len(indents) else 0}em"))
            button.add_class("hooklab-choice")
            button.on_click(lambda _, i=i: self._act(lambda: puzzle.pick(i)))
            self.buttons.append(button)
        self.undo = widgets.Button(description="Undo", icon="undo", tooltip="take back the last pick")
        self.check = widgets.Button(description="Check", icon="check", button_style="primary",
                                    tooltip="check your order")
        self.show = widgets.Button(description="Show answer", icon="eye", tooltip="show the real order")
        self.undo.on_click(lambda _: self._act(puzzle.undo))
        self.check.on_click(lambda _: self._act(puzzle.check))
        self.show.on_click(lambda _: self._act(puzzle.reveal))
        self.status = widgets.HTML()
        layout = widgets.Layout(flex_flow="row wrap" if not indents else "column")
        choices = (widgets.VBox if indents else widgets.HBox)(self.buttons, layout=layout)
        self.controls = widgets.VBox([choices, widgets.HBox([self.undo, self.check, self.show])])
        self.widget = widgets.VBox([widgets.HTML(f"<b>Puzzle:</b> {html.escape(prompt)}"), self.controls, self.status])
        self.widget.add_class("hooklab-puzzle")
        self.message = ""
        self._render()

    def _act(self, move: Callable[[], object]) -> None:
        was_over = self.puzzle.over
        self.message = attempt(move)
        self._render()
        if self.puzzle.over and not was_over:
            self.on_over()

    def _render(self) -> None:
        puzzle = self.puzzle
        for i, button in enumerate(self.buttons):
            button.disabled = puzzle.over or i in puzzle.picks
        self.undo.disabled = puzzle.over or not puzzle.picks
        self.check.disabled = puzzle.over or not puzzle.complete or puzzle.checked
        self.show.disabled = puzzle.over or not puzzle.tries
        self.controls.layout.display = "none" if puzzle.over else None
        lines = puzzle.status().splitlines()
        rows = []
        for position, key in enumerate(puzzle.picked):
            wrong = puzzle.checked and position in puzzle.wrong
            mark = f" {WRONG_MARK if wrong else RIGHT_MARK}" if puzzle.checked else ""
            attributes = f" class='{WRONG_CLASS}' style='{WRONG_STYLE}'" if wrong else ""
            rows.append(f"<li{attributes}>{html.escape(puzzle.label(key))}{mark}</li>")
        order = f"<ol style='margin:2px 0'>{''.join(rows)}</ol>" if rows else " (nothing picked yet)"
        notes = "".join(f"<br>{html.escape(line)}" for line in lines[1:])
        message = f"<br><i>{html.escape(self.message)}</i>" if self.message else ""
        self.status.value = f"<div style='font-size:12px'>your order:{order}{notes}{message}</div>"


class OrderPuzzleView(SteppedView):
    """A stepped view that can ask first for an order (:meth:`_ask`): until the puzzle is over, its stepping
    part (``stepping``) is hidden and its page holds nothing of the answer; once it is over, the view moves
    to ``answer_step`` and shows as without a puzzle."""

    stepping: widgets.Box
    answer_step = 0
    puzzle: OrderPuzzle | None = None
    prompt = ""

    def _ask(self, puzzle: OrderPuzzle, prompt: str, indents: Sequence[int] = ()) -> None:
        self.puzzle, self.prompt = puzzle, prompt
        self.picker = OrderPicker(puzzle, prompt, on_over=self._show_answer, indents=indents)
        self.widget = widgets.VBox([self.picker.widget, self.stepping])

    @property
    def hidden(self) -> bool:
        """A puzzle is on: the real order is not shown yet."""
        return self.puzzle is not None and not self.puzzle_over

    @property
    def puzzle_over(self) -> bool:
        """A puzzle was asked and is over (solved or given up)."""
        return self.puzzle is not None and self.puzzle.over

    def _show_answer(self) -> None:
        if self.step == self.answer_step:
            self._render()
        else:
            self.step = self.answer_step  # the stepper renders; Back and Next replay

    def _show_stepping(self) -> bool:
        """Hide the stepping part while the puzzle is on; returns whether it is shown."""
        self.stepping.layout.display = "none" if self.hidden else None
        return not self.hidden

    def puzzle_text(self) -> str:
        assert self.puzzle is not None
        return self.puzzle.text("Puzzle: " + self.prompt)

    def _render(self) -> None:
        raise NotImplementedError


class Prediction(_Tries):
    """One pick among ``choices`` for each question; ``answers[question]`` is the right choice.

    :meth:`pick` sets (or changes) a prediction; :meth:`check` needs every question answered, counts a
    try and returns the questions answered wrong. Once solved, or after :meth:`reveal`, it is over and
    ``wrong`` keeps what the last check got wrong.
    """

    subject = "prediction"

    def __init__(self, answers: Mapping[str, str], choices: Sequence[str]) -> None:
        unknown = sorted(set(answers.values()) - set(choices))
        if unknown:
            raise ValueError(f"answers not among the choices: {unknown}")
        self.answers, self.choices = dict(answers), list(choices)
        self.picks: dict[str, str] = {}
        super().__init__()

    @property
    def questions(self) -> list[str]:
        return list(self.answers)

    def pick(self, question: str, choice: str) -> None:
        if self.over:
            raise PuzzleError("the puzzle is over: the answer is shown")
        if question not in self.answers:
            raise PuzzleError(f"no question {question!r}: the questions are {', '.join(self.answers)}")
        if choice not in self.choices:
            raise PuzzleError(f"{choice!r} is not one of the choices: {', '.join(self.choices)}")
        self.picks[question] = choice
        self.checked = False

    def check(self) -> list[str]:
        if self.over:
            raise PuzzleError("the puzzle is over: the answer is shown")
        missing = [q for q in self.answers if q not in self.picks]
        if missing:
            raise PuzzleError(f"predict {', '.join(missing)} first")
        return self._scored([q for q, answer in self.answers.items() if self.picks[q] != answer])

    def status(self) -> str:
        lines = []
        for question in self.answers:
            pick = self.picks.get(question)
            mark = f" {WRONG_MARK if question in self.wrong else RIGHT_MARK}" if self.checked and pick else ""
            answer = f" (answer: {self.answers[question]})" if self.over and question in self.wrong else ""
            lines.append(f"{question}: {pick or '?'}{mark}{answer}")
        if self.over:
            lines.append(self.outcome())
        elif self.checked:
            lines.append(f"try {self.tries}: {len(self.wrong)} wrong: change your prediction, or Show answer")
        return "\n".join(lines)
