"""Canvas: the "Download Submissions" zip and the gradebook's CSV export.

The zip is flat, one file per uploaded file of each student's latest attempt, named as Canvas's own
``ContentZipper`` names them: ``<name squashed, lowercase>[_LATE]_<Canvas user id>_<file id>_<original file name>``
(the name is the profile's sortable name with everything but letters, digits and ``_`` taken out; ``LATE`` for work
handed in after the due date, not by how much; the file id is the upload's own, larger for a later upload), and a
number before the extension when Canvas renamed a file uploaded again under the same name
(``forward_hooks-1.ipynb``). Under anonymous grading the name is left out and the user id is the submission's
anonymous id: ``[LATE_]anon_<anonymous id>_<file id>_<original file name>``; such a file is graded under
``anon_<anonymous id>``, which no roster maps (Canvas's gradebook export holds no anonymous ids). The gradebook
export has the columns
``Student, ID, SIS User ID, SIS Login ID, Section``, then one per assignment headed ``<Name> (<id>)``; its first
data row may be "Points Possible". It holds no submission times.
"""

from __future__ import annotations

import re
from pathlib import Path

from hooklab.grading.lms.entries import LmsFile, Roster
from hooklab.grading.lms.table import read_table
from hooklab.grading.submissions import refusal
from hooklab.grading.untrusted import printable

NAME = "Canvas"
ID, STUDENT, SIS_USER, SIS_LOGIN = "ID", "Student", "SIS User ID", "SIS Login ID"
POINTS_POSSIBLE = "Points Possible"
_ENTRY = (r"^(?:(?P<name>.*{})_)?(?:(?P<late>late)_)?(?P<user>(?(name)\d+|anon_[a-z0-9]+))_(?P<upload>\d+)_"
          r"(?P<file>.+)$")
_SHORTEST, _LONGEST = re.compile(_ENTRY.format("?"), re.IGNORECASE), re.compile(_ENTRY.format(""), re.IGNORECASE)
_COPY = re.compile(r"^(?P<stem>.+?)-(?P<copy>\d+)(?P<suffix>\.[^.]+)$")


def parse(name: str) -> LmsFile | str:
    """A file name of Canvas's zip read, or why it is not one. The name and the original file name are both the
    student's: a name that reads two ways (another user's number inside it) is refused."""
    first, last = _SHORTEST.match(name), _LONGEST.match(name)
    if not first or not last:
        return "not named as Canvas names a submission (<name>_<user id>_<file id>_<file>)"
    if (first["user"], first["upload"]) != (last["user"], last["upload"]):
        return "a name that reads as two Canvas users; not attributed"
    uploaded = first["file"]
    copy = _COPY.match(uploaded)
    file_id = f"{copy['stem']}{copy['suffix']}" if copy else uploaded
    order = (int(first["upload"]), int(copy["copy"]) if copy else 0)
    return LmsFile(first["user"], first["name"] or "", file_id, order, bool(first["late"]), uploaded,
                   first["name"] is None)


def is_points_possible(record: dict[str, str]) -> bool:
    """The row of the assignments' points, not a student's."""
    return record.get(STUDENT, "").strip() == POINTS_POSSIBLE


def roster_id(record: dict[str, str]) -> str:
    """The student id a gradebook row gives: its SIS Login ID, else its SIS User ID, else the Canvas user id,
    the first that can name a student's folder."""
    for column in (SIS_LOGIN, SIS_USER, ID):
        value = record.get(column, "").strip()
        if value and not refusal(value):
            return value
    return record.get(ID, "").strip()


def read_roster(path: Path, timezone: str = "UTC") -> Roster:
    """Canvas user id → student id from the gradebook export (no times: Canvas's export has none)."""
    table = read_table(path)
    if table.column(ID) is None:
        return Roster(problems=[f"{printable(path.name)}: no {ID} column; not a Canvas gradebook export"])
    return Roster.of({record[ID].strip(): roster_id(record) for record in table.records()
                      if not is_points_possible(record) and record.get(ID, "").strip().isdigit()})
