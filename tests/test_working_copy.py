"""``make lab``'s working copy: the release is copied once, and a student's file is never overwritten."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import REPO
from lab.working_copy import RECORD, update


def release_of(root: Path, text: str) -> Path:
    release = root / "notebooks"
    (release / "01_module_basics").mkdir(parents=True, exist_ok=True)
    (release / "01_module_basics" / "module_basics.ipynb").write_text(text)
    return release


def test_the_first_start_copies_the_release_in_the_graders_layout(tmp_path: Path):
    release, work = release_of(tmp_path, "release 1"), tmp_path / "work"
    assert update(release, work) == ["copied 01_module_basics/module_basics.ipynb"]
    assert (work / "01_module_basics" / "module_basics.ipynb").read_text() == "release 1"
    assert update(release, work) == [], "a second start changes nothing"


OFFERED = ("01_module_basics/module_basics.ipynb has a new release: it is beside yours as "
           "module_basics (new release).ipynb; yours is unchanged")


def started(tmp_path: Path, mine: str | None = "my answers") -> tuple[Path, Path, Path, Path]:
    """A working copy of release 1, the student's file changed to ``mine`` (unless None), and release 2 out."""
    release, work = release_of(tmp_path, "release 1"), tmp_path / "work"
    update(release, work)
    notebook = work / "01_module_basics" / "module_basics.ipynb"
    if mine is not None:
        notebook.write_text(mine)
    release_of(tmp_path, "release 2")
    return release, work, notebook, work / "01_module_basics" / "module_basics (new release).ipynb"


def test_a_new_release_is_offered_beside_the_students_file_and_never_over_it(tmp_path: Path):
    release, work, mine, offered = started(tmp_path)
    assert update(release, work) == [OFFERED]
    assert mine.read_text() == "my answers"
    assert offered.read_text() == "release 2"
    assert json.loads((work / RECORD).read_text()) != {}, "what was copied is recorded"


def test_a_notebook_the_student_never_changed_is_replaced_by_its_new_release(tmp_path: Path):
    release, work, mine, offered = started(tmp_path, mine=None)
    assert update(release, work) == ["updated 01_module_basics/module_basics.ipynb to its new release (you had not "
                                     "changed it)"]
    assert mine.read_text() == "release 2" and not offered.exists()
    assert update(release, work) == []


def test_a_new_release_is_offered_once_and_work_in_the_offer_is_kept(tmp_path: Path):
    release, work, mine, offered = started(tmp_path)
    update(release, work)
    assert update(release, work) == [], "the offer is not announced again"
    offered.write_text("release 2 and my answers")
    assert update(release, work) == [] and offered.read_text() == "release 2 and my answers"
    offered.unlink()
    assert update(release, work) == [] and not offered.exists(), "a deleted offer of the same release is not made again"


def test_a_newer_release_replaces_an_untouched_offer(tmp_path: Path):
    release, work, mine, offered = started(tmp_path)
    update(release, work)
    release_of(tmp_path, "release 3")
    assert update(release, work) == [OFFERED]
    assert offered.read_text() == "release 3" and mine.read_text() == "my answers"


def test_a_newer_release_never_overwrites_an_offer_the_student_edited_and_says_so(tmp_path: Path):
    release, work, mine, offered = started(tmp_path)
    update(release, work)
    offered.write_text("release 2 and my answers")
    release_of(tmp_path, "release 3")
    said = update(release, work)
    assert said == ["01_module_basics/module_basics.ipynb has a new release, not offered: module_basics (new "
                    "release).ipynb holds your changes (rename it, and the next start puts the new release there)"]
    assert offered.read_text() == "release 2 and my answers" and mine.read_text() == "my answers"
    offered.rename(offered.with_name("module_basics (mine).ipynb"))
    assert update(release, work) == [OFFERED] and offered.read_text() == "release 3"


def test_a_student_who_adopted_the_new_release_is_offered_only_the_next_one(tmp_path: Path):
    release, work, mine, offered = started(tmp_path)
    update(release, work)
    mine.rename(mine.with_name("module_basics (old).ipynb"))
    offered.write_text("release 2 and my answers")
    offered.rename(mine)
    assert update(release, work) == [] and mine.read_text() == "release 2 and my answers"
    release_of(tmp_path, "release 3")
    assert update(release, work) == [OFFERED] and mine.read_text() == "release 2 and my answers"


def test_a_notebook_the_student_deleted_comes_back_from_the_release(tmp_path: Path):
    release, work = release_of(tmp_path, "release 1"), tmp_path / "work"
    update(release, work)
    (work / "01_module_basics" / "module_basics.ipynb").unlink()
    assert update(release, work) == ["copied 01_module_basics/module_basics.ipynb"]


def test_make_lab_updates_the_working_copy_and_serves_it():
    command = subprocess.run(["make", "-n", "lab"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "lab/working_copy.py notebooks work" in command and "--ServerApp.root_dir=work " in command
    assert "work/" in (REPO / ".gitignore").read_text().splitlines(), "the working copy is not tracked"


def test_the_student_and_instructor_labs_keep_their_own_workspaces():
    def workspaces(target: str) -> str:
        command = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, check=True).stdout
        return re.search(r"JUPYTERLAB_WORKSPACES_DIR=(\S+) ", command)[1]

    assert workspaces("lab") == f"{REPO}/build/lab-workspaces/student"
    assert workspaces("instructor") == f"{REPO}/build/lab-workspaces/instructor"


def test_readme_starts_the_lab_without_make_as_make_lab_does():
    command = subprocess.run(["make", "-n", "lab", "ARGS="], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout
    readme = (REPO / "README.md").read_text()
    assert "export JUPYTER_PREFER_ENV_PATH := 1" in (REPO / "Makefile").read_text()
    for line in command.splitlines():
        if "working_copy.py" in line or " lab " in line:
            line = line.replace(str(REPO), "$PWD").replace(".venv/bin/", "").replace(" --allow-root", "").strip()
            if " lab " in line:
                line = f"JUPYTER_PREFER_ENV_PATH=1 {line}"
            assert f"\n{line}\n" in readme, f"README's commands without make should include {line!r}"
