"""Executing a submission so that its scores can be trusted, as an nbgrader preprocessor.

:class:`GuardedExecute` is nbgrader's ``Execute`` with four additions:

- integrity: before the first cell the kernel takes a snapshot of what the tests rely on
  (:mod:`hooklab.grading.kernel_probe`); before and after each test cell the grader's agent in the kernel
  reports what changed, asked in the fields of the test cell's own request (:mod:`hooklab.grading.kernels.protocol`).
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
  code cell's request has the kernel's agent call :func:`hooklab.observations.begin` first, with a seed drawn
  from it for that cell, test cells are sent without their expected values, and their observations, which the
  kernel sends on its observation channel as they are made
  (:class:`hooklab.grading.kernels.client.ObservationChannel`), between the agent's start and end of the cell, are
  kept in the notebook's metadata for the grader to compare with the reference's.

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
from hooklab.grading.kernel_replies import observation, probe_answer
from hooklab.grading.kernels import client, protocol, provisioner, server
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.notes import Notes
from hooklab.grading.output_limits import KEPT, OutputLimits
from hooklab.grading.outputs import HELD, NOT_RUN, error_output, failed, would_be
from hooklab.grading.redaction import PROOF_PREFIX
from hooklab.grading.repair import source_notebook

# Modules the tests import, and where they must come from: the grading environment, not the submission.
VERIFIED_MODULES = ("hooklab.checks", "torch", "numpy")


def cell_key(cell: NotebookNode, source_ids: set[str] | None = None, source_code: dict[str, str] | None = None) -> str:
    """What a cell's seed is drawn for (:func:`hooklab.observations.cell_seed`): its grade_id, else the source cell it
    is (its id, which a given cell keeps when edited, among ``source_ids``; else the source cell with its code, in
    ``source_code``, for a notebook saved without ids), else its code."""
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    if grade_id:
        return grade_id
    if cell.get("id") is not None and cell.get("id") in (source_ids or ()):
        return cell["id"]
    return (source_code or {}).get(cell.source) or hashlib.sha256(cell.source.encode()).hexdigest()


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

    def create_kernel_manager(self) -> Any:
        """nbclient's kernel manager, whose clients send the grading protocol's fields (also under plain nbgrader)."""
        manager = super().create_kernel_manager()
        manager.client_class = client.READY_CLIENT
        return manager

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        """This notebook's kernel: the spare started while the previous notebook ran, given a copy of this
        notebook's folder, or one started now; then the next notebook's spare is started. Every kernel is of the
        class that speaks the grading protocol (:mod:`hooklab.grading.kernels.agent`)."""
        if protocol.KERNEL_ARGUMENT not in self.extra_arguments:
            self.extra_arguments = [*self.extra_arguments, protocol.KERNEL_ARGUMENT]
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
        self._answers = client.Answers()  # what the kernel's agent sent about the last request
        self._channel: client.ObservationChannel | None = None  # where the agent answers: None if it did not
        self._by_reply = False  # the agent answers in the replies: a kernel without a channel (plain nbgrader)
        self._reply: dict[str, Any] | None = None  # the last execute reply
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
            self._start()
        if cell.cell_type != "code" or not utils.is_grade(cell):
            return self._run(cell, resources, index)
        original = cell.source
        proof = f"{PROOF_PREFIX}{secrets.token_hex(8)}"
        sent = judge.without_expectations(original) if self._drivers else original
        cell.source = _with_proof(sent, proof) if self.integrity else sent
        try:
            cell, resources = self._run(cell, resources, index, proof)
        finally:
            cell.source = original
        if self._stopped:
            return cell, resources
        if self._drivers:
            self._keep_observations(cell, self._answers.observed)
        if self.integrity:
            self._check(f"before cell {index + 1}", self._answers.words.get(protocol.BEFORE))
            ran = self._check(f"in cell {index + 1}", self._answers.words.get(protocol.AFTER))
            if not ran and not failed(cell.get("outputs", [])):
                self._not_run.append(f"test cell {index + 1} did not run to its end")
                cell.outputs.append(error_output(NOT_RUN,
                                                 "test did not run: it was skipped, rewritten or its error swallowed"))
        return cell, resources

    def _run(self, cell: NotebookNode, resources: ResourcesDict, index: int,
             proof: str = "") -> tuple[NotebookNode, ResourcesDict]:
        """Execute a cell, its request carrying the protocol's fields for it (``proof``: a test cell's, with
        integrity checks); what the kernel's agent answered is then in ``_answers``."""
        self._answers = client.Answers()
        fields = self._fields(index, proof) if index in self._code else None
        channel = self._channel
        if fields is not None and isinstance(self.kc, client.ReadyClient):
            self.kc.fields = fields
            if channel is not None:
                channel.expect(fields["nonce"])
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            self._stop(cell, "CellTimeoutError",
                       f"cell {index + 1} still running {self.timeout} s after interrupt; kernel stopped")
        except DeadKernelError:
            self._stop(cell, "DeadKernelError",
                       f"the kernel died in cell {index + 1} (os._exit, a crash or out of memory)")
        else:
            if fields is not None and channel is not None:
                self._answers = channel.take()
                if not self._answers.ended:  # its agent no longer ends its answers: no later request waits for them
                    self._channel = None
            elif fields is not None and self._by_reply:
                self._answers = _replied(self._reply)
        finally:
            if isinstance(self.kc, client.ReadyClient):
                self.kc.fields = None  # not sent (an empty cell is not executed): not for another cell
        return cell, resources

    def _fields(self, index: int, proof: str) -> dict[str, Any] | None:
        """The protocol's fields for code cell ``index`` (:mod:`hooklab.grading.kernels.protocol`): its seed in a
        notebook of drivers, the probe's questions around a test; None when it needs none."""
        cell = self.nb.cells[index]
        test = utils.is_grade(cell)
        fields: dict[str, Any] = {}
        if self._drivers:
            key = cell_key(cell, self._source_ids, self._source_code)
            # read from the test as sent without its proof line, a fresh name each time that would defeat the cache
            read = judge.builtins_read(cell.source.removesuffix(_with_proof("", proof))) if test else ()
            fields["begin"] = [observations.cell_seed(self.seed, self._notebook, key), test, list(read)]
            fields["observe"] = test
        if test and self.integrity:
            fields.update(check=True, proof=proof)
        return {**fields, "nonce": secrets.token_hex(16)} if fields else None

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
        an error if it is a test)."""
        reply = kwargs["execute_reply"]
        if reply["content"].get("status") == "error":
            self._limits.fit("error", reply["content"], self._limits.size)
        if kwargs["cell_index"] not in self._limits.dropped_errors:
            super().on_cell_executed(**kwargs)
        self._reply = reply

    def _keep_observations(self, cell: NotebookNode, lines: list[str] | None) -> None:
        """Keep what a test cell observed: the lines its kernel sent on the observation channel between the agent's
        start and end of the cell, within the outputs' limit (past it, one marker that fails the test). Without them
        (the kernel did not send its start or end, or too much) the observations are kept as unreadable, and so is a
        line that is not one."""
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
    def _start(self) -> None:
        """The notebook's first request, before its first cell: the kernel's agent installs the notebooks' error
        messages, takes the probe's snapshot (with integrity checks) and moves the submission's files in."""
        expected = ({name: importlib.util.find_spec(name).origin for name in VERIFIED_MODULES}
                    if self.integrity else None)
        fields = {"start": {"expected": expected}, "nonce": secrets.token_hex(16)}
        channel = getattr(self.km.provisioner, "channel", None)
        answer = None
        if isinstance(self.kc, client.ReadyClient):
            self.kc.fields = fields
            if channel is not None:
                channel.expect(fields["nonce"])
            reply = self.wait_for_reply(self.kc.execute("", silent=True, store_history=False))
            # an agent that did not end its first request speaks no protocol: no later request waits for it
            answers = channel.take() if channel is not None else _replied(reply)
            answer = probe_answer(answers.words.get(protocol.SNAPSHOT))
            self._channel = channel if channel is not None and answers.ended else None
            self._by_reply = channel is None and answers.ended
        if not self.integrity:
            self._baseline = "not taken"
            return
        if answer is None:
            self._baseline = "unavailable"
            self._changes.append("the integrity snapshot could not be taken")
            return
        self._baseline = answer["digest"]
        if self.report_changes:
            self._changes += answer["problems"]

    def _check(self, where: str, text: str | None) -> bool:
        """Record what changed since the snapshot (``text``: the probe's answer, as the kernel's agent sent it);
        returns whether the test's proof was reached."""
        answer = probe_answer(text)
        if answer is None:
            self._note(f"the kernel did not answer the integrity check ({where})")
            return False
        if not self.report_changes:
            return bool(answer.get("ran"))
        for change in answer["changes"]:
            self._note(f"{change} ({where})" if change.endswith("folder") else f"changed: {change} ({where})")
        if answer["digest"] != self._baseline and not answer["changes"]:
            self._note(f"the integrity snapshot was tampered with ({where})")
        return bool(answer.get("ran"))

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
            notes.would_be = would_be(nb)
        notes.write(nb)
        if not held:
            return
        reason = f"held for review: {held[0]}" + (f" and {len(held) - 1} more" if len(held) > 1 else "")
        for cell in nb.cells:
            if utils.is_grade(cell) and cell.cell_type == "code":
                cell.outputs.append(error_output(HELD, reason))


def _with_proof(source: str, proof: str) -> str:
    """A test cell's code as sent with integrity checks: ending with the assignment that proves it ran to its end."""
    return f"{source}\n{proof} = True\n"


def _replied(reply: dict[str, Any] | None) -> client.Answers:
    """What the agent of a kernel without a channel answered in an execute reply (its words; no observations)."""
    words = ((reply or {}).get("content") or {}).get(protocol.FIELD)
    if not isinstance(words, dict):
        return client.Answers()
    return client.Answers(words={str(k): v for k, v in words.items() if isinstance(v, str)},
                          ended=protocol.END in words)
