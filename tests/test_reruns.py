"""Reruns and resume are always right: what decides that a graded submission is up to date includes
the grader's side (hidden tests, configuration), the gradebook, and a run that was killed."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from catalogues import corpus
from conftest import make_course
from hooklab.grading.ledger import Entry, Ledger
from test_autograde import GRADE, grade, tree_digest
from test_ledger_notes_keys import before_file_operation as interleaved

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

A = corpus.ASSIGNMENT
NAME = corpus.notebook_name(A)


def submissions(root: Path, students: dict[str, dict[str, str]]) -> Path:
    cases = [corpus.Case(s, A, {NAME: corpus.notebook(A, answers)}, {}) for s, answers in students.items()]
    return corpus.write(root, cases)


def score(course: Path, student: str, test: str = "collect_hooks_test") -> float:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return gradebook.find_grade(test, Path(NAME).stem, A, student).score


@pytest.fixture
def course(tmp_path: Path) -> Path:
    return make_course(tmp_path / "course")


def test_a_changed_hidden_test_regrades_without_force(course: Path, tmp_path: Path):
    folder = submissions(tmp_path / "in", {"ada": corpus.solutions(A), "bo": {}})
    grade(course, folder)
    assert score(course, "ada") == 3
    source = course / "solutions" / A / NAME
    nb = nbformat.read(source, as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "collect_hooks_test")
    test.source = test.source.replace("### END HIDDEN TESTS",
                                      "raise AssertionError('a stricter hidden test')\n### END HIDDEN TESTS")
    nbformat.write(nb, source)
    second = grade(course, folder)
    assert "unchanged since the last run" not in second.stdout, "a changed hidden test must regrade"
    assert score(course, "ada") == 0, "the regrade must use the hidden test as it is now"


def test_force_regrades_everything_and_a_second_run_nothing(course: Path, tmp_path: Path):
    folder = submissions(tmp_path / "in", {"ada": corpus.solutions(A)})
    grade(course, folder)
    assert "1 unchanged since the last run" in grade(course, folder).stdout
    assert "unchanged" not in grade(course, folder, "--force").stdout
    assert "unchanged" not in grade(course, folder, "--timeout", "7").stdout, "other options regrade too"


def test_a_changed_submission_is_regraded(course: Path, tmp_path: Path):
    folder = submissions(tmp_path / "in", {"ada": {}})
    grade(course, folder)
    assert score(course, "ada") == 0
    submissions(folder, {"ada": corpus.solutions(A)})
    grade(course, folder)
    assert score(course, "ada") == 3


def test_a_deleted_gradebook_with_a_kept_ledger_regrades(course: Path, tmp_path: Path):
    folder = submissions(tmp_path / "in", {"ada": corpus.solutions(A), "bo": {}})
    grade(course, folder)
    (course / "gradebook.db").unlink()
    second = grade(course, folder)
    assert "unchanged" not in second.stdout
    assert score(course, "ada") == 3 and score(course, "bo") == 0
    assert "ada" in (course / "grades.csv").read_text()


def processes() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, start time) of every process on this machine."""
    table = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone while we looked
            continue
        table[int(stat_file.parent.name)] = (int(fields[1]), fields[19])
    return table


def descendants(pid: int) -> dict[int, str]:
    """pid → start time of every process below ``pid`` (workers, kernel servers, sandboxes, kernels)."""
    table, found, frontier = processes(), {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, started) in table.items():
            if ppid == parent and child not in found:
                found[child] = started
                frontier.append(child)
    return found


def test_a_killed_grader_leaves_no_process_and_the_run_resumes(course: Path, tmp_path: Path):
    students = {f"s{i}": corpus.solutions(A) for i in range(4)}
    folder = submissions(tmp_path / "in", students)
    command = [*GRADE, "--jobs", "1", "--config", str(course / "nbgrader_config.py"), str(folder)]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ledger = course / "grading.json"
    deadline = time.monotonic() + 300
    while not Ledger(ledger).entries and time.monotonic() < deadline:
        time.sleep(0.2)
    while len(below := descendants(run.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)  # until the next submission's kernel is running
    assert len(below) >= 3, f"expected a worker, its kernel server and a kernel below the grader: {below}"
    run.send_signal(signal.SIGKILL)  # the grader alone: what is below it must follow by itself
    run.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (left := {p for p, started in below.items()
                                                    if processes().get(p, (0, ""))[1] == started}):
        time.sleep(0.2)
    assert not left, f"processes of the killed run still alive: {sorted(left)}"
    done = len(Ledger(ledger).entries)
    assert 0 < done < len(students), "the run should be killed mid-way"
    second = grade(course, folder)
    assert f"{done} unchanged since the last run" in second.stdout
    assert all(score(course, s) == 3 for s in students)


def test_a_read_only_class_folder_is_read_and_left_as_it_was(course: Path, tmp_path: Path):
    folder = submissions(tmp_path / "in", {"ada": corpus.solutions(A)})
    before = tree_digest(folder)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        grade(course, folder)
    finally:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert tree_digest(folder) == before
    assert score(course, "ada") == 3


def test_the_ledger_keeps_each_result_as_it_comes_without_rewriting_itself(tmp_path: Path):
    """A result costs one line in the journal, however many the ledger holds; a stop loses no finished result."""
    path = tmp_path / "grading.json"
    ledger = Ledger(path)
    ledger.set("ada/hw", Entry("d1", True, "", 3.0, 3.0))
    ledger.save()
    saved = path.read_text()
    ledger.set("bo/hw", Entry("d2", True, "", 1.0, 3.0))
    ledger.set("ada/hw", Entry("d3", True, "", 2.0, 3.0, released=True))
    assert path.read_text() == saved, "a result rewrote the whole ledger"
    with open(ledger.journal, "a") as journal:  # a stop while writing the next result
        journal.write('\n["cy/hw", {"digest": "d4", "ok": tr')
    resumed = Ledger(path)
    assert {key: (entry.digest, entry.released) for key, entry in resumed.entries.items()} == {
        "ada/hw": ("d3", True), "bo/hw": ("d2", False)}
    resumed.set("cy/hw", Entry("d5", False, "no notebook submitted", 0.0, 3.0))  # after the line cut short
    resumed.save()
    assert not resumed.journal.exists()
    assert sorted(json.loads(path.read_text())) == ["ada/hw", "bo/hw", "cy/hw"]
    assert Ledger(path).entries == resumed.entries


def ledger_with_a_journal(folder: Path) -> Ledger:
    """A ledger whose file holds ada's result and whose journal bo's and cy's (finished since the last save)."""
    ledger = Ledger(folder / "grading.json")
    ledger.set("ada/hw", Entry("d1", True, "", 3.0, 3.0))
    ledger.save()
    ledger.set("bo/hw", Entry("d2", True, "", 1.0, 3.0))
    ledger.set("cy/hw", Entry("d3", False, "no notebook submitted", 0.0, 3.0))
    return ledger


def test_a_save_while_the_ledger_is_read_loses_no_finished_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A run saves its ledger (the journal folded into the file) while another process reads it (hooklab review,
    a second run): at whichever step of the read the save happens, the reader sees every finished result."""
    for step in range(1, 20):
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        writer = ledger_with_a_journal(folder)
        with monkeypatch.context() as patch:
            ran = interleaved(patch, folder, step, writer.save)
            reader = Ledger(folder / "grading.json")
        if not ran:
            break  # past the reader's last step
        assert reader.entries == writer.entries, (f"a save before the reader's file operation {step} lost "
                                                  f"{set(writer.entries) - set(reader.entries)}")
    assert step > 2, "the reader reads the file and its journal"


def test_a_read_while_the_ledger_is_saved_loses_no_finished_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Another process reads the ledger at each step of a save: each reader sees every finished result."""
    for step in range(1, 20):
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        writer, readers = ledger_with_a_journal(folder), []
        with monkeypatch.context() as patch:
            ran = interleaved(patch, folder, step, lambda readers=readers,
                              folder=folder: readers.append(Ledger(folder / "grading.json")))
            writer.save()
        if not ran:
            break  # past the save's last step
        assert readers[0].entries == writer.entries, (f"a reader before the save's file operation {step} lost "
                                                      f"{set(writer.entries) - set(readers[0].entries)}")
    assert step > 2, "a save writes the file and removes the journal"
    assert not writer.journal.exists() and Ledger(writer.path).entries == writer.entries
