"""``make lab``'s working copy: the release is copied once, and a student's file is never overwritten."""

from __future__ import annotations

import json
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


def test_a_new_release_is_offered_beside_the_students_file_and_never_over_it(tmp_path: Path):
    release, work = release_of(tmp_path, "release 1"), tmp_path / "work"
    update(release, work)
    mine = work / "01_module_basics" / "module_basics.ipynb"
    mine.write_text("my answers")
    release_of(tmp_path, "release 2")
    said = update(release, work)
    assert said == ["01_module_basics/module_basics.ipynb has a new release: it is beside yours as "
                    "module_basics (new release).ipynb; yours is unchanged"]
    assert mine.read_text() == "my answers"
    assert (work / "01_module_basics" / "module_basics (new release).ipynb").read_text() == "release 2"
    assert json.loads((work / RECORD).read_text()) != {}, "what was copied is recorded"


def test_a_notebook_the_student_deleted_comes_back_from_the_release(tmp_path: Path):
    release, work = release_of(tmp_path, "release 1"), tmp_path / "work"
    update(release, work)
    (work / "01_module_basics" / "module_basics.ipynb").unlink()
    assert update(release, work) == ["copied 01_module_basics/module_basics.ipynb"]


def test_make_lab_updates_the_working_copy_and_serves_it():
    command = subprocess.run(["make", "-n", "lab"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "lab/working_copy.py notebooks work" in command and "--ServerApp.root_dir=work " in command
    assert "work/" in (REPO / ".gitignore").read_text().splitlines(), "the working copy is not tracked"
