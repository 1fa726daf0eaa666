"""The grading package's small records, without a kernel: the ledger's journal and file, a worker's notes in a
notebook's metadata, and the two key formats."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from hooklab.grading.grades_csv import reasons
from hooklab.grading.keys import cell_key, split_cell_key, split_submission_key, submission_key
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.notes import METADATA, Notes


def entry(digest: str, score: float = 1.0) -> Entry:
    return Entry(digest=digest, ok=True, reason="", score=score, max_score=2.0)


def test_a_ledger_change_is_journalled_at_once_and_a_stopped_run_resumes_from_it(tmp_path: Path):
    ledger = Ledger(tmp_path / "grading.json")
    ledger.set("ada/02_forward_hooks", entry("a"))
    ledger.set("bob/02_forward_hooks", entry("b"))
    with open(ledger.journal, "a") as journal:
        journal.write('\n["eve/02_forward_hooks", {"dig')  # a line cut short by a stop
    resumed = Ledger(tmp_path / "grading.json")  # no save: read from the journal alone
    assert sorted(resumed.entries) == ["ada/02_forward_hooks", "bob/02_forward_hooks"]
    assert resumed.is_current("ada/02_forward_hooks", "a") and not resumed.is_current("ada/02_forward_hooks", "b")


def test_saving_folds_the_journal_into_the_file(tmp_path: Path):
    ledger = Ledger(tmp_path / "grading.json")
    ledger.set("ada/02_forward_hooks", entry("a", score=2.0))
    ledger.save()
    assert not ledger.journal.exists()
    assert json.loads(ledger.path.read_text())["ada/02_forward_hooks"]["score"] == 2.0
    assert Ledger(ledger.path).entries == ledger.entries


def finished_since_the_last_save(folder: Path) -> Ledger:
    """A ledger whose file holds ada's result and whose journal bo's and cy's (finished since the last save)."""
    ledger = Ledger(folder / "grading.json")
    ledger.set("ada/02_forward_hooks", entry("a", score=2.0))
    ledger.save()
    ledger.set("bo/02_forward_hooks", entry("b"))
    ledger.set("cy/02_forward_hooks", Entry("c", False, "no notebook submitted", 0.0, 2.0))
    return ledger


def before_file_operation(monkeypatch: pytest.MonkeyPatch, folder: Path, step: int, action: Callable[[], object]
                          ) -> list[bool]:
    """From now on, run ``action`` once, just before the ``step``-th operation on a file in ``folder`` (read, exists,
    write, rename, remove), as another process could; returns a list that holds True once it ran."""
    count, ran, busy = [0], [], [False]

    def before(path: str | Path) -> None:
        if busy[0] or folder not in Path(path).parents:
            return
        count[0] += 1
        if count[0] == step:
            busy[0] = True
            try:
                action()
            finally:
                busy[0] = False
            ran.append(True)

    def wrapped(original: Callable[..., object]) -> Callable[..., object]:
        def operation(self: Path, *args: object, **kwargs: object) -> object:
            before(self)
            return original(self, *args, **kwargs)
        return operation

    for name in ("read_text", "write_text", "exists", "unlink"):
        monkeypatch.setattr(Path, name, wrapped(getattr(Path, name)))
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: (before(target), replace(source, target))[1])
    return ran


def test_a_save_at_any_step_of_a_read_loses_the_reader_no_finished_result(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    """A run saves its ledger (the journal folded into the file) while another process reads it (hooklab review, a
    second run): whichever of the reader's file operations the save comes before, the reader sees every result."""
    for step in range(1, 20):
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        writer = finished_since_the_last_save(folder)
        with monkeypatch.context() as patch:
            ran = before_file_operation(patch, folder, step, writer.save)
            reader = Ledger(folder / "grading.json")
        if not ran:
            break  # past the reader's last operation
        assert sorted(reader.entries) == ["ada/02_forward_hooks", "bo/02_forward_hooks", "cy/02_forward_hooks"], (
            f"a save before the reader's file operation {step}")
        assert reader.entries == writer.entries
    assert step == 6, "5 operations: the last run's exists and read, the journal's read, the file's exists and read"


def test_a_read_at_any_step_of_a_save_sees_every_finished_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Another process reads the ledger before each file operation of a save: each reader sees every result."""
    for step in range(1, 20):
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        writer, readers = finished_since_the_last_save(folder), []
        with monkeypatch.context() as patch:
            ran = before_file_operation(patch, folder, step, lambda readers=readers, folder=folder:
                                        readers.append(Ledger(folder / "grading.json")))
            writer.save()
        if not ran:
            break  # past the save's last operation
        assert sorted(readers[0].entries) == ["ada/02_forward_hooks", "bo/02_forward_hooks", "cy/02_forward_hooks"], (
            f"a reader before the save's file operation {step}")
        assert readers[0].entries == writer.entries
    assert step == 6, "5 operations: the file written, renamed, the journal removed, the last run written, renamed"
    assert not writer.journal.exists() and Ledger(writer.path).entries == writer.entries


def test_the_csvs_reason_for_a_submission_the_last_run_did_not_finish_is_that_runs_problem(tmp_path: Path):
    """A submission recorded in the gradebook whose feedback nbgrader could not write has no ledger entry (the next
    run grades it again): grades.csv, which shows its gradebook score, gives that run's reason, not an empty one."""
    ledger = Ledger(tmp_path / "grading.json")
    ledger.set("ada/hw", entry("a"))
    failed = "the grading process failed (RuntimeError('nbgrader could not write the feedback: …')); run again to retry"
    ledger.last_run.problems = [f"bob/hw: {failed}", "ada/hw: an earlier problem", "notes.txt: a file outside any "
                                "student folder, ignored", f"eve: x/hw: {failed}"]
    assert reasons(ledger) == {"ada/hw": "", "bob/hw": failed}


def test_notes_are_written_whole_and_read_back_with_what_does_not_apply_left_out():
    nb = nbformat.v4.new_notebook()
    nb.metadata[METADATA] = {"held": ["planted by the submission"], "observed": {"x_test": []}}
    Notes(repairs=["restored x_test (cell 3)"]).write(nb)  # replaces whatever was there
    assert nb.metadata[METADATA]["repairs"] == ["restored x_test (cell 3)"]
    assert nb.metadata[METADATA]["held"] == [] and "observed" not in nb.metadata[METADATA]
    notes = Notes.read(nb)
    notes.observed, notes.seed = {}, "7"
    notes.write(nb)
    read = Notes.read(nb)
    assert read.observed == {} and read.would_be is None and read.seed == "7"  # {}: a driver notebook that saw nothing


def test_keys_split_back_into_their_parts_even_with_a_slash_after_the_first():
    assert split_submission_key(submission_key("ada", "02_forward_hooks")) == ("ada", "02_forward_hooks")
    assert split_cell_key(cell_key("forward_hooks", "collect_hooks_test")) == ("forward_hooks", "collect_hooks_test")
    assert split_cell_key("notebook/a/b") == ("notebook", "a/b")
