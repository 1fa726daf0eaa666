"""A student's working copy of the release: ``make lab`` opens ``work/``, never the tracked ``notebooks/``.

On each start, for each notebook of the release (the same ``<assignment>/<notebook>.ipynb`` layout the grader
expects):

- ``work/`` lacks it: it is copied there;
- the student's file is still what was last copied (never changed): a newer release replaces it in place;
- the student changed it: it is never overwritten. A newer release is put beside it as
  ``<notebook> (new release).ipynb``, once per release: that file is written only when it is absent or still
  what was last written there (an offer the student edited is never overwritten; a line says the newest release
  could not be offered), and a deleted offer is not offered again until the next release.

``work/.releases.json`` records what was written: each file's path → the digest of the release copied into it.

Usage: python lab/working_copy.py RELEASE_DIR WORK_DIR
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

RECORD = ".releases.json"  # in the working copy: each file written (student's and offers) → its release's digest
NEW_RELEASE = " (new release)"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update(release: Path, work: Path) -> list[str]:
    """Bring ``work`` up to date with ``release`` without losing a student's changes; says what it did."""
    record_path = work / RECORD
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    said = []
    for source in sorted(release.glob("*/*.ipynb")):
        relative = source.relative_to(release).as_posix()
        target, newest = work / relative, digest(source)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            record[relative] = newest
            said.append(f"copied {relative}")
            continue
        if record.get(relative) == newest:
            continue
        mine = digest(target)
        if mine == newest:  # already the newest release (a working copy from before the record)
            record[relative] = newest
        elif mine == record.get(relative):  # never changed by the student
            shutil.copyfile(source, target)
            record[relative] = newest
            said.append(f"updated {relative} to its new release (you had not changed it)")
        else:
            said.extend(offer(source, target, newest, record, relative))
    work.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return said


def offer(source: Path, target: Path, newest: str, record: dict[str, str], relative: str) -> list[str]:
    """Put the newest release beside the student's changed ``target``, once, never over an offer the student edited."""
    beside = target.with_name(f"{target.stem}{NEW_RELEASE}{target.suffix}")
    key = f"{Path(relative).parent.as_posix()}/{beside.name}"
    if record.get(key) == newest:  # offered already (kept, renamed or deleted since: the student's choice)
        return []
    if beside.exists() and digest(beside) == newest:
        record[key] = newest
        return []
    if beside.exists() and digest(beside) != record.get(key):
        return [f"{relative} has a new release, not offered: {beside.name} holds your changes "
                f"(rename it, and the next start puts the new release there)"]
    shutil.copyfile(source, beside)
    record[key] = newest
    return [f"{relative} has a new release: it is beside yours as {beside.name}; yours is unchanged"]


if __name__ == "__main__":
    for line in update(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"  {line}")
