"""`hooklab autograde` on Dask: a local cluster grades the corpus as the local pool does, and a worker
killed in the middle of a submission loses nothing (the submission is run again on another worker)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster

from catalogues import corpus
from conftest import make_course
from test_autograde import GRADE, scores_in_gradebook

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

ASSIGNMENT = corpus.ASSIGNMENT
SLOW = "slow"  # the submission the worker is killed under: right answers, and a cell that takes 4 s
# what the slow cell names its kernel's process as it starts its 4 s (a sandboxed kernel can tell the world little else)
IN_THE_SLOW_CELL = f"hooklab-{os.getpid() % 10**6}"


# One submission of each way a submission travels and ends on a worker: graded in full, in part or not at all,
# with files of its own, a kernel that dies or loops, not sent (broken, missing), held for review; the
# other kinds are graded by the same worker code as in the local mode (test_autograde).
ON_A_WORKER = ("full", "partial", "blank", "exits", "infinite_loop", "extra_files", "invalid_json", "no_notebook",
               "flagged_but_honest")


def sample() -> list[corpus.Case]:
    """Structural cases of each kind that travels differently, cheats of two kinds, and honest answers of
    another notebook."""
    structural = [case for case in corpus.structural_cases() if case.student in ON_A_WORKER]
    attacks = [case for case in corpus.attack_cases() if case.held not in ("", None)][:2]
    honest = [case for case in corpus.honest_cases() if case.assignment == "05_autograd_function"][:1]
    return structural + attacks + honest


def slow_case() -> corpus.Case:
    answers = {**corpus.solutions(ASSIGNMENT)}
    answers["collect_hooks"] = ("import time\n\nwith open('/proc/self/comm', 'w') as name:\n    "
                                f"name.write({IN_THE_SLOW_CELL!r})\ntime.sleep(4)\n\n{answers['collect_hooks']}")
    return corpus.Case(SLOW, ASSIGNMENT, {corpus.notebook_name(ASSIGNMENT): corpus.notebook(ASSIGNMENT, answers)},
                       corpus.scores(ASSIGNMENT))


def graded_like_expected(course: Path, cases: list[corpus.Case]) -> None:
    ledger = json.loads((course / "grading.json").read_text())
    runnable = [case for case in cases if ledger[f"{case.student}/{case.assignment}"]["ok"]]
    got = scores_in_gradebook(course, runnable)
    for case in cases:
        key = f"{case.student}/{case.assignment}"
        entry = ledger[key]
        if not entry["ok"]:
            assert case.reason and case.reason in entry["reason"], (key, entry["reason"])
            continue
        assert not case.reason, f"{key} should not have run"
        held = bool(entry["held"])
        if case.held is not None:
            assert held == bool(case.held), (key, entry["held"])
        assert got[key] == (corpus.zero(case.assignment) if held else case.scores), key
        feedback = course / "autograder" / "feedback" / case.student / case.assignment
        assert any(feedback.glob("*.html")), f"{key}: no feedback"


def test_a_local_dask_cluster_grades_the_corpus_like_the_local_pool(tmp_path: Path):
    cases = sample()
    course = make_course(tmp_path / "course")
    submissions = corpus.write(tmp_path / "submissions", cases)
    result = subprocess.run([*GRADE, "--dask", "--jobs", "2", "--config", str(course / "nbgrader_config.py"),
                             str(submissions)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    graded_like_expected(course, cases)
    assert "Run again on another worker" not in result.stdout


def _executing(client: Client, key_part: str) -> str | None:
    """The address of the worker that is running (not merely holding) a task whose key contains ``key_part``."""

    def executing(dask_worker) -> list[str]:
        return [str(key) for key, task in dask_worker.state.tasks.items() if task.state == "executing"]

    for address, keys in client.run(executing).items():
        if any(key_part in key for key in keys):
            return address
    return None


def _in_the_slow_cell_under(worker: int) -> bool:
    """Whether a kernel that descends from the process ``worker`` runs the slow cell."""
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{entry}/comm").read_text().strip() != IN_THE_SLOW_CELL:
                continue
            pid = int(entry)
            while pid > 1 and pid != worker:
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue  # ended meanwhile
        if pid == worker:
            return True
    return False


def test_a_worker_killed_mid_submission_loses_nothing(tmp_path: Path):
    cases = [slow_case(), *[case for case in corpus.structural_cases() if case.student in ("full", "partial", "blank")]]
    course = make_course(tmp_path / "course")
    submissions = corpus.write(tmp_path / "submissions", cases)
    # no work stealing: a submission queued behind another could move between the check and the kill
    settings = {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.work-stealing": False}
    with (dask.config.set(settings),
          LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
          Client(cluster) as client):
        grading = subprocess.Popen([*GRADE, "--scheduler", cluster.scheduler_address, "--jobs", "1",
                                    "--config", str(course / "nbgrader_config.py"), str(submissions)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline, victim = time.monotonic() + 300, None
            while victim is None and grading.poll() is None and time.monotonic() < deadline:
                victim = _executing(client, f"-{SLOW}-")
                time.sleep(0.05)
            assert victim is not None, "the slow submission never ran on a worker"
            pid = client.run(os.getpid, workers=[victim])[victim]
            while not _in_the_slow_cell_under(pid) and grading.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _in_the_slow_cell_under(pid), "the slow submission's kernel never reached its slow cell"
            assert _executing(client, f"-{SLOW}-") == victim, "the slow submission finished before the kill"
            os.kill(pid, signal.SIGKILL)
            out, err = grading.communicate(timeout=600)
        finally:
            grading.kill()
    assert grading.returncode == 0, out + err
    graded_like_expected(course, cases)
    assert f"{SLOW}/{ASSIGNMENT}: once" in out, out


def test_files_travel_as_bytes_and_never_land_outside_their_folder(tmp_path: Path):
    from hooklab.grading.cluster import folder_bytes, unpack

    (tmp_path / "a" / "data").mkdir(parents=True)
    (tmp_path / "a" / "nb.ipynb").write_bytes(b"{}")
    (tmp_path / "a" / "data" / "x.npy").write_bytes(b"\x00\x01")
    files = folder_bytes(tmp_path / "a")
    assert files == {"data/x.npy": b"\x00\x01", "nb.ipynb": b"{}"}
    unpack(files, tmp_path / "b")
    assert folder_bytes(tmp_path / "b") == files
    for escape in ("../outside", "/etc/evil", "data/../../outside"):
        with pytest.raises(ValueError, match="outside"):
            unpack({escape: b"x"}, tmp_path / "c")
    assert not (tmp_path / "outside").exists()
