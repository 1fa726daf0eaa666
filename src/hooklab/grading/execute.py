"""Executing a submission so that its scores can be trusted, as an nbgrader preprocessor.

:class:`GuardedExecute` is nbgrader's ``Execute`` with four additions:

- integrity: before the first cell the kernel takes a snapshot of what the tests rely on
  (:mod:`hooklab.grading.kernel_probe`); before and after each test cell the grader asks what
  changed, in the ``user_expressions`` of the code cell before the test and of the test itself
  (evaluated once the cell's code has run without an error), else in a request of its own.
  Anything changed, or a finding of the static scan
  (:class:`hooklab.grading.integrity.preprocessor.ScanSubmission`), holds the notebook for review;
- proof that each test ran: the copy being executed ends each test cell with an assignment to
  a name drawn afresh for that cell; a test that raised nothing but did not reach its end
  (rewritten, skipped, its exception swallowed) fails with "test did not run";
- a kernel that dies or ignores the interrupt costs only the cells from there on: those before
  keep their results, the rest fail with the reason;
- output limits: what the kernel sends is cut or dropped as it arrives
  (:class:`hooklab.grading.output_limits.OutputLimits`), so neither the worker's memory nor the autograded
  notebook and its feedback page grow with it;
- drivers: in a notebook whose tests are drivers (:mod:`hooklab.grading.judge`), with the run's ``seed``, every
  code cell is preceded by :func:`hooklab.observations.begin` with a seed drawn from it for that cell, test
  cells are sent without their expected values, and their observations, which the kernel sends on its
  observation channel as they are made (:class:`hooklab.grading.kernels.client.ObservationChannel`), between the
  cell's seed and a mark the test cell's request has it send once its code has run, are kept in the
  notebook's metadata for the grader to compare with the reference's.

A held notebook keeps its would-be scores in its metadata (for ``hooklab review``) and every
test cell gets a ``HeldForReview`` error, so nbgrader records 0 through its own machinery
(:class:`hooklab.grading.scores.SaveAutoGradesByErrors` scores a test cell by its errors).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import secrets
import time
from typing import Any

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Bool, Unicode

from hooklab import observations
from hooklab.grading import judge
from hooklab.grading.kernel_replies import expression_text, observation, probe_answer
from hooklab.grading.kernels import client, preloading, provisioner, server, working_copy
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.notes import Notes
from hooklab.grading.output_limits import KEPT, OutputLimits
from hooklab.grading.outputs import HELD, NOT_RUN, error_output
from hooklab.grading.repair import source_notebook

# Modules the tests import, and where they must come from: the grading environment, not the submission.
VERIFIED_MODULES = ("hooklab.checks", "torch", "numpy")
PROOF_PREFIX = "_hooklab_ran_"  # the name each executed test cell assigns last
# ends a test cell's observations
COLLECT = "__import__('hooklab.observations', fromlist=['collected']).collected({mark!r})"
# the notebooks' first cell does it too
EXPLAIN_ERRORS = "__import__('hooklab.hints', fromlist=['explain_errors']).explain_errors()"


def passed(cell: NotebookNode) -> bool:
    """A test cell passed when none of its outputs is an error (stderr doesn't count)."""
    return not any(output.output_type == "error" for output in cell.get("outputs", []))


class GuardedExecute(Execute):
    """nbgrader's Execute with integrity checks, proof of run and contained kernel failures."""

    report_changes = Bool(
        True, help="Hold a notebook whose kernel changed what the tests rely on (off only to test the other defences)."
    ).tag(config=True)

    spare_kernels = Bool(
        True, help="Start the next notebook's kernel while this one runs (kernels forked by hooklab: "
        "kernels.provisioner.SPARES)."
    ).tag(config=True)

    integrity = Bool(
        True, help="Take the probe's snapshot, check it around every test cell and prove each test ran (off: "
        "`hooklab autograde --no-integrity`, to show that the scores do not depend on them)."
    ).tag(config=True)

    seed = Unicode(
        "", help="The run's seed (`hooklab autograde` draws one per run): with it, tests that are drivers are "
        "observed and judged by the grader (hooklab.grading.judge), their inputs drawn from it."
    ).tag(config=True)

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        """This notebook's kernel: the spare started while the previous notebook ran, given a copy of this
        notebook's folder, or one started now; then the next notebook's spare is started."""
        if not (self.spare_kernels and server.SUPPORTED):
            return await super().async_start_new_kernel(**kwargs)
        kind = (self.kernel_name, *self._arguments())
        spare = provisioner.SPARES.take(
            kind, kwargs.get("cwd") or self.resources.get("metadata", {}).get("path") or os.getcwd())
        if spare is not None:
            self.km = spare
        else:
            await super().async_start_new_kernel(**kwargs)
        if isinstance(self.km.provisioner, provisioner.PreloadedProvisioner):  # not under plain `nbgrader autograde`
            await provisioner.SPARES.keep(kind,
                                          self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config),
                                          self._arguments())

    start_new_kernel = run_sync(async_start_new_kernel)  # nbclient's synchronous setup_kernel calls this one

    def _arguments(self) -> list[str]:
        """The kernel's extra arguments as nbclient gives them (IPython's history kept in memory)."""
        if not self.ipython_hist_file or any(argument.startswith("--HistoryManager.hist_file")
                                             for argument in self.extra_arguments):
            return list(self.extra_arguments)
        return [*self.extra_arguments, f"--HistoryManager.hist_file={self.ipython_hist_file}"]

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict,
                   km: Any = None) -> tuple[NotebookNode, ResourcesDict]:
        self._before_tests = _before_tests(nb)
        self._carried: dict[str, Any] | None = None  # the probe's answer carried by the last code cell
        self._baseline = ""
        self._stopped = ""
        self._changes: list[str] = []
        self._not_run: list[str] = []
        self._started, self._ready = time.perf_counter(), 0.0
        self._limits = OutputLimits(Sandbox(config=self.config))
        source = source_notebook(self, resources) if self.seed else None
        self._drivers = source is not None and judge.has_drivers(source)
        # a cell's seed is keyed by the source's cell it is: by id, else by its code (a notebook saved without ids)
        self._source_ids = {cell.get("id") for cell in source.cells} if self._drivers else set()
        self._source_code = ({cell.source: cell.get("id") for cell in source.cells if cell.cell_type == "code"}
                             if self._drivers else {})
        self._notebook = resources.get("nbgrader", {}).get("notebook", "")
        self._begun: int | None = None  # the index of the code cell that the last begin() was for
        self._seeds: dict[int, str] = {}  # code cell index → the seed its begin() was given
        self._observed: dict[str, list[Any]] = {}
        self._observed_size = 0
        self._code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source.strip()]
        nb, resources = super().preprocess(nb, resources, km)
        self._conclude(nb)
        return nb, resources

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        self._ready = self._ready or time.perf_counter()  # the first cell: the kernel is ready
        if self._stopped:
            if utils.is_grade(cell):
                cell.outputs = [error_output(NOT_RUN, f"not run: {self._stopped}")]
            return cell, resources
        if not self._baseline:
            self._snapshot()
        if self._drivers and index in self._code and self._begun != index:
            # the last cell raised, so its request carried neither this cell's begin nor the check before a test:
            # one request asks for both
            checking = self.integrity and utils.is_grade(cell)
            answer = self._ask(f"{preloading.PROBE}.check()" if checking else "None", "", self._begin(index))
            self._carried = answer if checking else None
        if cell.cell_type != "code" or not utils.is_grade(cell):
            check = f"{preloading.PROBE}.check()" if index in self._before_tests and self.integrity else ""
            return self._run(cell, resources, index, check)
        if self.integrity:
            self._check(f"before cell {index + 1}", answer=self._carried)
        original = cell.source
        proof = f"{PROOF_PREFIX}{secrets.token_hex(8)}"
        sent = judge.without_expectations(original) if self._drivers else original
        cell.source = f"{sent}\n{proof} = True\n" if self.integrity else sent
        try:
            cell, resources = self._run(cell, resources, index,
                                        f"{preloading.PROBE}.check({proof!r})" if self.integrity else "")
        finally:
            cell.source = original
        if not self._stopped and self.integrity:
            ran = self._check(f"in cell {index + 1}", proof, answer=self._carried)
            if not ran and passed(cell):
                self._not_run.append(f"test cell {index + 1} did not run to its end")
                cell.outputs.append(error_output(NOT_RUN,
                                                 "test did not run: it was skipped, rewritten or its error swallowed"))
        return cell, resources

    def _run(self, cell: NotebookNode, resources: ResourcesDict, index: int,
             probe: str = "") -> tuple[NotebookNode, ResourcesDict]:
        """Execute a cell; with ``probe``, the probe's answer to that expression, evaluated once the cell has
        run without an error, is kept in ``_carried`` (else None, once a code cell is executed)."""
        if cell.cell_type == "code" and cell.source.strip():  # executed: what it carries replaces the last
            self._carried = None
        carrier = self.kc if isinstance(self.kc, client.ReadyClient) else None
        following = self._next_code(index) if self._drivers else None
        # ends this cell's observations on the channel; unknown to the kernel until then
        self._mark = secrets.token_hex(16)
        expressions = {  # in this order: the observations are collected before the next cell's begin() clears them
            **({"observed": COLLECT.format(mark=self._mark)} if self._drivers and utils.is_grade(cell) else {}),
            **({"probe": probe} if probe else {}),
            **({"begin": self._begin(following)} if following is not None else {}),
        }
        if carrier is not None and expressions:
            carrier.expressions = expressions
        try:
            return super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            self._stop(cell, "CellTimeoutError",
                       f"cell {index + 1} still running {self.timeout} s after interrupt; kernel stopped")
        except DeadKernelError:
            self._stop(cell, "DeadKernelError",
                       f"the kernel died in cell {index + 1} (os._exit, a crash or out of memory)")
        finally:
            if carrier is not None:
                carrier.expressions = {}  # not sent (an empty cell is not executed): not for another cell
        return cell, resources

    def process_message(self, msg: dict[str, Any], cell: NotebookNode, cell_index: int) -> NotebookNode | None:
        """nbclient's handling of a kernel message, within the output limits (:class:`OutputLimits`)."""
        if msg["msg_type"] not in KEPT:
            return super().process_message(msg, cell, cell_index)
        display_id = (msg["content"].get("transient") or {}).get("display_id")
        shown = sum(map(len, self._display_id_map.get(display_id, {}).values())) if display_id else 0
        copies = shown if msg["msg_type"] == "update_display_data" else shown + 1  # nbclient updates each
        keep, marker = self._limits.admit(msg, cell_index, utils.is_grade(cell), copies)
        output = super().process_message(msg, cell, cell_index) if keep else None
        if marker is not None:
            cell.outputs.append(marker)
        return output

    def on_cell_executed(self, **kwargs: Any) -> None:
        """nbclient's hook after each code cell: nbgrader's adds the reply's error to a cell whose outputs lack
        it (a timeout's), cut here as any error is, and not where the output limits dropped one (the cell keeps
        an error if it is a test); then the probe's answer that the cell's request carried is kept."""
        reply = kwargs["execute_reply"]
        if reply["content"].get("status") == "error":
            self._limits.fit("error", reply["content"], self._limits.size)
        if kwargs["cell_index"] not in self._limits.dropped_errors:
            super().on_cell_executed(**kwargs)
        self._carried = probe_answer(reply)
        if "observed" in reply["content"].get("user_expressions", {}):
            self._keep_observations(kwargs["cell"], kwargs["cell_index"], reply)
        begun = reply["content"].get("user_expressions", {}).get("begin", {}).get("status") == "ok"
        self._begun = self._next_code(kwargs["cell_index"]) if begun else None

    def _next_code(self, index: int) -> int | None:
        """The index of the code cell executed after cell ``index`` (None after the last)."""
        return next((i for i in self._code if i > index), None)

    def _begin(self, index: int) -> str:
        """The expression that readies the kernel for code cell ``index`` (:func:`hooklab.observations.begin`),
        with a seed drawn from the run's for this notebook and cell: its grade_id, else the source cell it is (its
        id, which a given cell keeps when edited; else the source cell with its code, for a notebook saved without
        ids), else its code."""
        cell = self.nb.cells[index]
        key = (cell.metadata.get("nbgrader", {}).get("grade_id")
               or (cell.get("id") if cell.get("id") in self._source_ids else None)
               or self._source_code.get(cell.source) or hashlib.sha256(cell.source.encode()).hexdigest())
        seed = self._seeds[index] = observations.cell_seed(self.seed, self._notebook, key)
        test = utils.is_grade(cell)
        read = judge.builtins_read(cell.source) if test else ()
        return f"__import__('hooklab.observations', fromlist=['begin']).begin({seed!r}, {test!r}, {read!r})"

    def _keep_observations(self, cell: NotebookNode, index: int, reply: dict[str, Any]) -> None:
        """Keep what a test cell observed: the lines its kernel sent on the observation channel between the cell's
        seed and its mark, within the outputs' limit (past it, one marker that fails the test). Without them (the
        kernel did not send them) the observations are kept as unreadable, and so is a line that is not one."""
        channel = getattr(self.km.provisioner, "channel", None)
        sent = expression_text(reply, "observed") == self._mark and channel is not None and index in self._seeds
        lines = channel.take(self._seeds[index], self._mark) if sent else None
        self._observed_size += sum(map(len, lines or []))
        if lines is None:
            seen: list[Any] = [None]
        elif self._observed_size > self._limits.total:
            seen = ["too large"]
        else:
            seen = [observation(line) for line in lines]
        self._observed[cell.metadata.nbgrader["grade_id"]] = seen

    def _stop(self, cell: NotebookNode, ename: str, reason: str) -> None:
        self._stopped = reason
        self.shutdown_kernel = "immediate"
        cell.outputs.append(error_output(ename, reason))

    # -- talking to the probe in the kernel -------------------------------------------------
    def _ask(self, expression: str, code: str = "", *then: str) -> dict[str, Any] | None:
        """Evaluate ``expression`` in the kernel through user_expressions of a silent request (and each of
        ``then`` after it)."""
        expressions = {"probe": expression, **{f"then {i}": e for i, e in enumerate(then)}}
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions=expressions)
        return probe_answer(self.wait_for_reply(msg_id))

    def _snapshot(self) -> None:
        first = next(iter(self._code), None)
        begin = self._begin(first) if self._drivers and first is not None else "None"
        if not self.integrity:
            self._baseline = "not taken"
            self._ask(working_copy.FILL_WORKING_COPY if server.SUPPORTED else "None", "", begin)
            self._begun = first if self._drivers else None
            return
        expected = {name: importlib.util.find_spec(name).origin for name in VERIFIED_MODULES}
        # begin() first: it connects the observation channel, which the snapshot then holds; the notebooks'
        # short error messages are installed before it, so that their first cell installing them changes nothing
        answer = self._ask(f"{preloading.PROBE}.snapshot({expected!r})",
                           f"{preloading.LOAD_PROBE}\n{EXPLAIN_ERRORS}\n{begin}\n",
                           working_copy.FILL_WORKING_COPY)
        self._begun = first if self._drivers else None
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
        answer = answer if answer is not None else self._ask(f"{preloading.PROBE}.check({proof!r})")
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
        notes = Notes.read(nb)
        held = [*notes.findings, *self._changes, *self._not_run]
        notes.held, notes.stopped, notes.limits = held, self._stopped, self._limits.notes()
        if self.seed:
            notes.seed = self.seed
        if self._drivers:
            notes.observed = self._observed
        ready = self._ready or time.perf_counter()  # no cell reached: the kernel never started
        notes.seconds = {"kernel": ready - self._started, "cells": time.perf_counter() - ready}
        if held:
            notes.would_be = {
                cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"]) if passed(cell) else 0.0
                for cell in nb.cells
                if utils.is_grade(cell) and cell.cell_type == "code"
            }
        notes.write(nb)
        if not held:
            return
        reason = f"held for review: {held[0]}" + (f" and {len(held) - 1} more" if len(held) > 1 else "")
        for cell in nb.cells:
            if utils.is_grade(cell) and cell.cell_type == "code":
                cell.outputs.append(error_output(HELD, reason))



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

