"""Executing a submission so that its scores can be trusted, as nbgrader preprocessors.

:class:`GuardedExecute` is nbgrader's ``Execute`` with three additions:

- integrity: before the first cell the kernel takes a snapshot of what the tests rely on
  (:mod:`hooklab.grading.kernel_probe`); before and after each test cell the grader asks what
  changed, in the ``user_expressions`` of the code cell before the test and of the test itself
  (evaluated once the cell's code has run without an error), else in a request of its own.
  Anything changed, or a finding of the static scan
  (:class:`hooklab.grading.integrity.ScanSubmission`), holds the notebook for review;
- proof that each test ran: the copy being executed ends each test cell with an assignment to
  a name drawn afresh for that cell; a test that raised nothing but did not reach its end
  (rewritten, skipped, its exception swallowed) fails with "test did not run";
- a kernel that dies or ignores the interrupt costs only the cells from there on: those before
  keep their results, the rest fail with the reason.

A held notebook keeps its would-be scores in its metadata (for ``hooklab review``) and every
test cell gets a ``HeldForReview`` error, so nbgrader records 0 through its own machinery.
:class:`SaveAutoGradesByErrors` scores a test cell by its errors only: output on stderr (a
warning, a log line) shows in the feedback but no longer zeroes a passing test.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import secrets
import time
from typing import Any

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool

from hooklab.grading import kernels
from hooklab.grading.repair import METADATA

# Modules the tests import, and where they must come from: the grading environment, not the submission.
VERIFIED_MODULES = ("hooklab.checks", "torch", "numpy")
HELD = "HeldForReview"
PROOF_PREFIX = "_hooklab_ran_"  # the name each executed test cell assigns last
NOT_RUN = "TestDidNotRun"


def error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def passed(cell: NotebookNode) -> bool:
    """A test cell passed when none of its outputs is an error (stderr doesn't count)."""
    return not any(output.output_type == "error" for output in cell.get("outputs", []))


class GuardedExecute(Execute):
    """nbgrader's Execute with integrity checks, proof of run and contained kernel failures."""

    report_changes = Bool(
        True, help="Hold a notebook whose kernel changed what the tests rely on (off only to test the other defences)."
    ).tag(config=True)

    spare_kernels = Bool(
        True, help="Start the next notebook's kernel while this one runs (kernels forked by hooklab: kernels.SPARES)."
    ).tag(config=True)

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        """This notebook's kernel: the spare started while the previous notebook ran, given a copy of this
        notebook's folder, or one started now; then the next notebook's spare is started."""
        if not (self.spare_kernels and kernels.SUPPORTED):
            return await super().async_start_new_kernel(**kwargs)
        kind = (self.kernel_name, *self._arguments())
        spare = kernels.SPARES.take(kind, kwargs.get("cwd") or self.resources.get("metadata", {}).get("path") or os.getcwd())
        if spare is not None:
            self.km = spare
        else:
            await super().async_start_new_kernel(**kwargs)
        if isinstance(self.km.provisioner, kernels.PreloadedProvisioner):  # not under plain `nbgrader autograde`
            await kernels.SPARES.keep(kind, self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config), self._arguments())

    start_new_kernel = run_sync(async_start_new_kernel)  # nbclient's synchronous setup_kernel calls this one

    def _arguments(self) -> list[str]:
        """The kernel's extra arguments as nbclient gives them (IPython's history kept in memory)."""
        if not self.ipython_hist_file or any(argument.startswith("--HistoryManager.hist_file") for argument in self.extra_arguments):
            return list(self.extra_arguments)
        return [*self.extra_arguments, f"--HistoryManager.hist_file={self.ipython_hist_file}"]

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict, km: Any = None) -> tuple[NotebookNode, ResourcesDict]:
        self._before_tests = _before_tests(nb)
        self._carried: dict[str, Any] | None = None  # the probe's answer carried by the last code cell
        self._baseline = ""
        self._stopped = ""
        self._changes: list[str] = []
        self._not_run: list[str] = []
        self._started, self._ready = time.perf_counter(), 0.0
        nb, resources = super().preprocess(nb, resources, km)
        self._conclude(nb)
        ready = self._ready or time.perf_counter()  # no cell reached: the kernel never started
        nb.metadata[METADATA]["seconds"] = {"kernel": ready - self._started, "cells": time.perf_counter() - ready}
        return nb, resources

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        self._ready = self._ready or time.perf_counter()  # the first cell: the kernel is ready
        if self._stopped:
            if utils.is_grade(cell):
                cell.outputs = [error_output(NOT_RUN, f"not run: {self._stopped}")]
            return cell, resources
        if not self._baseline:
            self._snapshot()
        if cell.cell_type != "code" or not utils.is_grade(cell):
            return self._run(cell, resources, index, f"{kernels.PROBE}.check()" if index in self._before_tests else "")
        self._check(f"before cell {index + 1}", answer=self._carried)
        original = cell.source
        proof = f"{PROOF_PREFIX}{secrets.token_hex(8)}"
        cell.source = f"{original}\n{proof} = True\n"
        try:
            cell, resources = self._run(cell, resources, index, f"{kernels.PROBE}.check({proof!r})")
        finally:
            cell.source = original
        if not self._stopped:
            ran = self._check(f"in cell {index + 1}", proof, answer=self._carried)
            if not ran and passed(cell):
                self._not_run.append(f"test cell {index + 1} did not run to its end")
                cell.outputs.append(error_output(NOT_RUN, "test did not run: it was skipped, rewritten or its error swallowed"))
        return cell, resources

    def _run(self, cell: NotebookNode, resources: ResourcesDict, index: int, probe: str = "") -> tuple[NotebookNode, ResourcesDict]:
        """Execute a cell; with ``probe``, the probe's answer to that expression, evaluated once the cell has
        run without an error, is kept in ``_carried`` (else None, once a code cell is executed)."""
        if cell.cell_type == "code" and cell.source.strip():  # executed: what it carries replaces the last
            self._carried = None
        carrier = self.kc if isinstance(self.kc, kernels.ReadyClient) else None
        if carrier is not None and probe:
            carrier.expressions = {"probe": probe}
        try:
            return super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            self._stop(cell, "CellTimeoutError", f"cell {index + 1} still running {self.timeout} s after interrupt; kernel stopped")
        except DeadKernelError:
            self._stop(cell, "DeadKernelError", f"the kernel died in cell {index + 1} (os._exit, a crash or out of memory)")
        finally:
            if carrier is not None:
                carrier.expressions = {}  # not sent (an empty cell is not executed): not for another cell
        return cell, resources

    def on_cell_executed(self, **kwargs: Any) -> None:
        """nbclient's hook after each code cell (nbgrader's records a timeout's error): also keep the probe's
        answer that the cell's request carried."""
        super().on_cell_executed(**kwargs)
        self._carried = _probe_answer(kwargs["execute_reply"])

    def _stop(self, cell: NotebookNode, ename: str, reason: str) -> None:
        self._stopped = reason
        self.shutdown_kernel = "immediate"
        cell.outputs.append(error_output(ename, reason))

    # -- talking to the probe in the kernel -------------------------------------------------
    def _ask(self, expression: str, code: str = "") -> dict[str, Any] | None:
        """Evaluate ``expression`` in the kernel through user_expressions of a silent request."""
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions={"probe": expression})
        return _probe_answer(self.wait_for_reply(msg_id))

    def _snapshot(self) -> None:
        expected = {name: importlib.util.find_spec(name).origin for name in VERIFIED_MODULES}
        answer = self._ask(f"{kernels.PROBE}.snapshot({expected!r})", code=kernels.LOAD_PROBE)
        if answer is None:
            self._baseline = "unavailable"
            self._changes.append("the integrity snapshot could not be taken")
            return
        self._baseline = answer["digest"]
        if self.report_changes:
            self._changes += answer["problems"]

    def _check(self, where: str, proof: str = "", answer: dict[str, Any] | None = None) -> bool:
        """Record what changed since the snapshot (``answer``: the probe's, carried by a cell; else asked
        now); returns whether ``proof`` was reached."""
        answer = answer if answer is not None else self._ask(f"{kernels.PROBE}.check({proof!r})")
        if answer is None:
            self._note(f"the kernel did not answer the integrity check ({where})")
            return False
        if not self.report_changes:
            return bool(answer["ran"])
        for change in answer["changes"]:
            self._note(f"{change} ({where})" if change.endswith("folder") else f"changed: {change} ({where})")
        if answer["digest"] != self._baseline and not answer["changes"]:
            self._note(f"the integrity snapshot was tampered with ({where})")
        return bool(answer["ran"])

    def _note(self, change: str) -> None:
        subject = change.rsplit(" (", 1)[0]
        if not any(known.rsplit(" (", 1)[0] == subject for known in self._changes):
            self._changes.append(change)

    # -- the verdict --------------------------------------------------------------------------
    def _conclude(self, nb: NotebookNode) -> None:
        notes = nb.metadata.setdefault(METADATA, {})
        held = [*notes.get("findings", []), *self._changes, *self._not_run]
        notes.update(stopped=self._stopped, held=held)
        if not held:
            return
        notes["would_be"] = {
            cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"]) if passed(cell) else 0.0
            for cell in nb.cells
            if utils.is_grade(cell) and cell.cell_type == "code"
        }
        reason = f"held for review: {held[0]}" + (f" and {len(held) - 1} more" if len(held) > 1 else "")
        for cell in nb.cells:
            if utils.is_grade(cell) and cell.cell_type == "code":
                cell.outputs.append(error_output(HELD, reason))


def _probe_answer(reply: dict[str, Any] | None) -> dict[str, Any] | None:
    """The probe's JSON answer in an execute reply's user_expressions, or None."""
    value = (reply or {}).get("content", {}).get("user_expressions", {}).get("probe", {})
    if value.get("status") != "ok":
        return None
    try:
        return json.loads(ast.literal_eval(value["data"]["text/plain"]))
    except (ValueError, SyntaxError, KeyError, TypeError):
        return None


def _before_tests(nb: NotebookNode) -> set[int]:
    """Indices of the code cells that come last before a test cell (not tests themselves): their requests
    carry the check before that test."""
    indices, last = set(), None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        if utils.is_grade(cell) and last is not None and not utils.is_grade(nb.cells[last]):
            indices.add(last)
        last = index
    return indices


class SaveAutoGradesByErrors(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score decided by its errors, not by stderr."""

    def _add_score(self, cell: NotebookNode, resources: ResourcesDict) -> None:
        outputs = [o for o in cell.get("outputs", []) if not (o.output_type == "stream" and o.name == "stderr")]
        super()._add_score(NotebookNode({**cell, "outputs": outputs}), resources)
