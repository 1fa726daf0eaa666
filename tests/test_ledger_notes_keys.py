"""The grading package's small records, without a kernel: the ledger's journal and file, a worker's notes in a
notebook's metadata, and the two key formats."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

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
