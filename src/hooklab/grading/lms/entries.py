"""What an LMS's export holds, as hooklab reads it: its entries (:class:`LmsFile`), its roster (:class:`Roster`),
and what a platform's module provides (:class:`Platform`: :mod:`.canvas`, :mod:`.moodle`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hooklab.grading.untrusted import printable


@dataclass(frozen=True)
class LmsFile:
    """One entry of an LMS's export, as its name says."""

    user: str  # the LMS's own number for the student (Canvas user id, Moodle participant id)
    name: str  # the name the entry gives the student (their profile's: hostile), for messages only
    file_id: str  # the file's name as the student uploaded it (a renamed re-upload's number taken off)
    order: tuple[int, ...] = ()  # larger is newer, between entries of one student and file
    late: bool = False  # the LMS marked it late (Canvas; not by how much)
    uploaded: str = ""  # the file's name as the LMS wrote it (``forward_hooks-1.ipynb``)
    anonymous: bool = False  # named by an anonymous id (Canvas's anonymous grading): no roster maps it


@dataclass
class Roster:
    """Who the LMS's numbers are: the LMS's own export (Canvas's gradebook CSV, Moodle's grading worksheet)."""

    ids: dict[str, str] = field(default_factory=dict)  # LMS number → the student id hooklab grades under
    times: dict[str, str] = field(default_factory=dict)  # LMS number → submission time, nbgrader's format (UTC)
    problems: list[str] = field(default_factory=list)  # rows that give no usable id or time
    refused: dict[str, str] = field(default_factory=dict)  # LMS number → why its files are not graded

    @classmethod
    def of(cls, ids: dict[str, str]) -> Roster:
        """A roster of these LMS numbers and ids; an id two numbers share (one's SIS login another's number) is
        given to neither: their files are named, not graded under the wrong student."""
        roster = cls()
        owners: dict[str, list[str]] = {}
        for user, student in ids.items():
            owners.setdefault(student, []).append(user)
        for student, users in owners.items():
            for user in users:
                if len(users) > 1:
                    roster.refused[user] = (f"the roster gives the id {printable(student)!r} to {len(users)} "
                                            f"students ({', '.join(users)})")
                else:
                    roster.ids[user] = student
        return roster


class Platform(Protocol):
    """What :func:`find_lms_submissions` needs of an LMS module."""

    NAME: str

    def parse(self, name: str) -> LmsFile | str:
        """A top-level entry's name read, or why it is not one of this LMS's."""
        ...

    def read_roster(self, path: Path, timezone: str) -> Roster:
        """The roster file read."""
        ...


def numbered(text: str) -> str:
    """The LMS number a roster cell holds ("Participant 123" → "123"), or ""."""
    match = re.fullmatch(r"\s*(?:participant\s*)?(\d+)\s*", text, re.IGNORECASE)
    return match[1] if match else ""
