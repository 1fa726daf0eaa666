"""Short messages for the two errors a student meets first in the notebooks, and a summary of the tests.

An exercise not written yet raises the ``NotImplementedError`` of its template, deep inside the test
that calls it; a cell that uses a name from a cell that has not run (or failed) raises ``NameError``.
:func:`explain_errors` has IPython show the first as one line that names the unwritten function, and
adds to the second what to run. Any other error is shown as IPython shows it. It also notes how each
cell's last run ended, from which :func:`progress` (a notebook's last cell) sums up its tests.
"""

from __future__ import annotations

import linecache
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import nbformat

from hooklab import observations
from hooklab.exercises import test_cells
from hooklab.messages import NOT_WRITTEN

_installed: dict[str, Any] = {}  # the handler IPython made of _show, once installed
_outcomes: dict[str, str] = {}  # a cell's source → "" when its last run ended well, else its error in one line
MESSAGE = 160  # characters of an error shown in the summary
GRADED = ("Graded: each exercise's score, hidden tests included, and what its tests found are shown above, at its "
          "test cell.")


def explain_errors(shell: Any = None) -> None:
    """In IPython (a notebook's kernel, or ``shell``), explain ``NotImplementedError`` from an answer's template
    and ``NameError``; elsewhere, do nothing. Called again, it leaves the handler it installed as it is (the
    grader's agent installs it before a notebook's first cell, and the grader watches that nothing changes it)."""
    if shell is None:
        try:
            shell = get_ipython()  # IPython's builtin, while a cell runs in a kernel only
        except NameError:
            return
    if _installed and shell.CustomTB is _installed.get("handler"):
        return
    shell.set_custom_exc((NotImplementedError, NameError), _show)
    _installed["handler"] = shell.CustomTB
    if not _installed.get("recording"):
        shell.events.register("post_run_cell", _note_outcome)
        _installed["recording"] = True


def _note_outcome(result: Any) -> None:
    error = result.error_before_exec or result.error_in_exec
    if error is None:
        _outcomes[result.info.raw_cell] = ""
    elif _installed.get("unwritten", (None,))[0] == id(error):  # "pre_hook is not written yet"
        _outcomes[result.info.raw_cell] = _installed["unwritten"][1]
    elif NOT_WRITTEN in str(error):  # a checker's sentence: "Mul.backward is not written yet: …"
        _outcomes[result.info.raw_cell] = str(error).split(NOT_WRITTEN)[0] + NOT_WRITTEN
    else:
        text = str(error).strip().splitlines()
        _outcomes[result.info.raw_cell] = (text[0] if text else type(error).__name__)[:MESSAGE]


def progress(notebook: str) -> None:
    """Print how the test cells of ``notebook`` (a file beside the kernel's folder) ended when they last ran in this
    kernel: how many exercises pass, then each exercise with ✓, ✗ and its first failure, or · and "<function> is not
    written yet" or "not run yet". Without the file, one line says where to put it. In a kernel the grader runs,
    whose test cells are the graded ones (hidden tests included), one line points to the scores instead."""
    if observations.graded():
        print(GRADED)
        return
    path = Path(notebook)
    if not path.is_file():
        print(f"{notebook} is not in this folder ({Path.cwd()}), and the summary reads the notebook's tests from it: "
              "put a copy of the notebook there under that name (on Colab: upload it in the Files panel), then run "
              "this cell again.")
        return
    tests = test_cells(nbformat.read(path, as_version=4).cells)
    lines, passed = [], 0
    for title, cell in tests:
        outcome = _outcomes.get(cell.source)
        passed += outcome == ""
        mark = "✓" if outcome == "" else "·" if outcome is None or outcome.endswith(NOT_WRITTEN) else "✗"
        lines.append(f"{mark} {title or cell.metadata.nbgrader.grade_id}" + ("" if outcome == "" else
                     ": not run yet" if outcome is None else f": {outcome}"))
    print(f"{passed} of {len(tests)} exercises pass their visible tests (hidden tests run when it is graded).")
    print("\n".join(lines))


def _show(shell: Any, etype: type, value: BaseException, tb: TracebackType | None,
          tb_offset: int | None = None) -> None:
    where = _unwritten(tb) if etype is NotImplementedError else None
    if where is not None:
        function, line = where
        outer, nested, inner = function.rpartition(".<locals>.")
        function = f"{inner} (inside {outer})" if nested else function
        _installed["unwritten"] = (id(value), NOT_WRITTEN if function == "<module>" else f"{function} is {NOT_WRITTEN}")
        value.add_note(f"This cell's answer is not written yet: replace `raise NotImplementedError()` (line {line}) "
                       "with it, and run the cell again." if function == "<module>" else
                       f"{function} is not written yet: replace `raise NotImplementedError()` (line {line} of its "
                       "cell) with your answer, run that cell, then run this one again.")
        # the error and its note alone (showtraceback's exception_only would add IPython's "use %tb" line first)
        shell._showtraceback(etype, value, shell.InteractiveTB.get_exception_only(etype, value))
        return
    if etype is NameError and getattr(value, "name", None):
        value.add_note(f"If {value.name!r} is defined in a cell above, run that cell first (or Run All Above), "
                       "and fix the first cell that fails; otherwise check its spelling.")
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _unwritten(tb: TracebackType | None) -> tuple[str, int] | None:
    """The function and line of the template's ``raise NotImplementedError()`` that raised, if it did (torch's own, a
    Module's or Function's method left undefined, is not an exercise's)."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    code = tb.tb_frame.f_code
    torch = sys.modules.get("torch")
    if torch is not None and code.co_filename.startswith(os.path.dirname(torch.__file__) + os.sep):
        return None
    if "raise NotImplementedError" not in linecache.getline(code.co_filename, tb.tb_lineno):
        return None
    return code.co_qualname, tb.tb_lineno
