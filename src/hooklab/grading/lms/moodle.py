"""Moodle: the assignment's "Download all submissions" zip and its offline grading worksheet.

The zip holds a folder per submission, ``<Full Name>_<participant id>_assignsubmission_file_/`` with the files as
uploaded (subfolders kept), or, with "Download submissions in folders" off, flat files named
``<Full Name>_<participant id>_assignsubmission_file_<file name>``, as Moodle's own ``download_submissions``
names them: the full name with its underscores made spaces (``<group>-<Full Name>`` for a team submission,
``Participant`` under blind marking), then the participant id. It says nothing of lateness. The grading
worksheet has the columns ``Identifier`` ("Participant 123"), ``Full name``, ``Email address``, ``Status``,
``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified (submission)``, ``Last modified (grade)``,
``Feedback comments``; its submission times are in the time zone of whoever downloaded it.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from hooklab.grading.lms.entries import LmsFile, Roster, numbered
from hooklab.grading.lms.table import read_table
from hooklab.grading.submissions import refusal
from hooklab.grading.untrusted import printable

NAME = "Moodle"
IDENTIFIER, EMAIL, GRADE, MAXIMUM, SUBMITTED = (
    "Identifier", "Email address", "Grade", "Maximum Grade", "Last modified (submission)")
_ENTRY = r"^(?P<name>.*{})_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$"
_SHORTEST, _LONGEST = re.compile(_ENTRY.format("?")), re.compile(_ENTRY.format(""))
_TIME_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p", "%d %B %Y, %H:%M",
                 "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M")
NBGRADER_TIME = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's timestamp.txt


def parse(name: str) -> LmsFile | str:
    """A folder or file name of Moodle's zip read, or why it is not one of a file submission. The full name and
    the file name are both the student's: a name that reads as two participants is refused."""
    first, last = _SHORTEST.match(name), _LONGEST.match(name)
    if not first or not last:
        return "not named as Moodle names a submission (<Full Name>_<participant id>_assignsubmission_file_)"
    if first["user"] != last["user"]:
        return "a name that reads as two Moodle participants; not attributed"
    if first["plugin"] != "file":
        return f"a Moodle {first['plugin']} submission, not a file"
    return LmsFile(first["user"], first["name"], first["file"], (), False, first["file"])


def submission_time(text: str, timezone: str) -> str:
    """A worksheet's time ("Monday, 13 May 2024, 3:45 PM", in ``timezone``) in nbgrader's format in UTC, or ""."""
    text = " ".join(text.split())
    for form in _TIME_FORMATS:
        try:
            moment = datetime.strptime(text, form)
        except ValueError:
            continue
        return moment.replace(tzinfo=ZoneInfo(timezone)).astimezone(ZoneInfo("UTC")).strftime(NBGRADER_TIME)
    return ""


def roster_id(record: dict[str, str]) -> str:
    """The student id a worksheet row gives: its email address where it can name a student's folder, else the
    participant id."""
    email = record.get(EMAIL, "").strip()
    return email if email and not refusal(email) else numbered(record.get(IDENTIFIER, ""))


def read_roster(path: Path, timezone: str = "UTC") -> Roster:
    """Participant id → student id and submission time, from the grading worksheet."""
    table = read_table(path)
    if table.column(IDENTIFIER) is None:
        return Roster(problems=[f"{printable(path.name)}: no {IDENTIFIER} column; not a Moodle grading worksheet"])
    records = [(numbered(record.get(IDENTIFIER, "")), record) for record in table.records()]
    roster = Roster.of({user: roster_id(record) for user, record in records if user})
    for user, record in records:
        written = record.get(SUBMITTED, "").strip()
        if user and written and written != "-":
            if moment := submission_time(written, timezone):
                roster.times[user] = moment
            else:
                roster.problems.append(f"roster: participant {user}'s submission time {printable(written)!r} is not "
                                       "one Moodle writes; graded without one")
    return roster
