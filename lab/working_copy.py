"""A student's working copy of the release: ``make lab`` opens ``work/``, never the tracked ``notebooks/``.

On each start, a notebook of the release that ``work/`` lacks is copied there (the same
``<assignment>/<notebook>.ipynb`` layout the grader expects). A notebook already there is never overwritten:
when the release has changed since it was copied, the new release is put beside it as
``<notebook> (new release).ipynb`` and a line says so. What was copied is recorded in ``work/.releases.json``.

Usage: python lab/working_copy.py RELEASE_DIR WORK_DIR
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

RECORD = ".releases.json"  # in the working copy: each notebook's release digest when it was copied
NEW_RELEASE = " (new release)"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update(release: Path, work: Path) -> list[str]:
    """Copy what ``work`` lacks from ``release`` and offer newer releases beside the student's files; says what it did."""
    record_path = work / RECORD
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    said = []
    for source in sorted(release.glob("*/*.ipynb")):
        relative = source.relative_to(release).as_posix()
        target = work / relative
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            record[relative] = digest(source)
            said.append(f"copied {relative}")
        elif record.get(relative) != digest(source):
            offer = target.with_name(f"{target.stem}{NEW_RELEASE}{target.suffix}")
            shutil.copyfile(source, offer)
            said.append(f"{relative} has a new release: it is beside yours as {offer.name}; yours is unchanged")
    work.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return said


if __name__ == "__main__":
    for line in update(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"  {line}")
