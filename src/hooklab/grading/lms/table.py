"""An LMS's CSV export read and written back as it was: its header, its rows, its encoding and line ends."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

_BOM = "\ufeff"


@dataclass
class Table:
    """A CSV file's rows as lists of cells, the header first, with what writing it back the same way needs."""

    rows: list[list[str]]
    bom: bool = False
    newline: str = "\r\n"
    problems: list[str] = field(default_factory=list)

    @property
    def header(self) -> list[str]:
        return self.rows[0] if self.rows else []

    def column(self, name: str) -> int | None:
        """The index of the column whose header is ``name`` (spaces around it ignored), or None."""
        names = [cell.strip() for cell in self.header]
        return names.index(name) if name in names else None

    def records(self) -> list[dict[str, str]]:
        """The data rows as header → cell (a short row's missing cells empty)."""
        names = [cell.strip() for cell in self.header]
        return [dict(zip(names, [*row, *[""] * (len(names) - len(row))], strict=False)) for row in self.rows[1:]]


def read_table(path: Path) -> Table:
    """A CSV file as the LMS wrote it (UTF-8, with or without a byte-order mark)."""
    raw = path.read_bytes().decode("utf-8", errors="replace")
    bom = raw.startswith(_BOM)
    text = raw.removeprefix(_BOM)
    newline = "\r\n" if "\r\n" in text else "\n"
    return Table([row for row in csv.reader(io.StringIO(text, newline=""))], bom, newline)


def write_table(table: Table, path: Path) -> None:
    """Write ``table`` back with its byte-order mark and line ends."""
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator=table.newline).writerows(table.rows)
    path.write_text((_BOM if table.bom else "") + buffer.getvalue(), encoding="utf-8", newline="")
