"""The output limits: what a notebook's kernel may leave in it (:class:`OutputLimits`), applied by
:class:`hooklab.grading.execute.GuardedExecute` to each kernel message as it arrives.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from nbformat import NotebookNode

from hooklab.grading.kernels.sandbox import Sandbox, amount
from hooklab.grading.scores import SCORED

# What nbclient keeps of each kind of kernel message (an output, a display's update, a widget's state)
KEPT = {"stream": ("text",), "display_data": ("data", "metadata"), "execute_result": ("data", "metadata"),
        "update_display_data": ("data", "metadata"), "error": ("ename", "evalue", "traceback"),
        "comm_open": ("data",), "comm_msg": ("data",), "comm_close": ("data",)}
WIDGET = ("comm_open", "comm_msg", "comm_close")


def _bytes(value: Any) -> int:
    """Bytes of a message's field as a notebook keeps it: UTF-8 of a text, of its JSON for anything else."""
    return len((value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).encode())


def _cut(text: str, size: int, marker: str = "") -> str:
    """``text`` in at most ``size`` bytes of UTF-8 (not inside a character), ``marker`` added where it is cut."""
    if _bytes(text) <= size:
        return text
    return text[:size].encode()[:size].decode(errors="ignore") + marker


def _shown(text: str) -> NotebookNode:
    """The grader's own note among a cell's outputs, as plain text (nbgrader's LimitOutput leaves it whole)."""
    return NotebookNode(output_type="display_data", data={"text/plain": text}, metadata={})


class OutputLimits:
    """What one notebook's kernel may leave in it (``c.Sandbox.output_size`` and ``outputs_size``; 0: no limit),
    applied to each message as it arrives, so that a kernel printing forever grows neither the worker's memory
    nor the autograded notebook and its feedback page.

    An output larger than ``output_size`` is cut, with a marker; a cell's stdout counts as one output (as
    nbclient and nbconvert merge its messages), its stderr as another; a display's update counts once for
    each place it is shown, and what is cleared still counts. A widget's state too large to keep is dropped
    (it cannot be cut). Once the notebook's outputs reach ``outputs_size``, later ones are dropped, with one
    marker, but for the first error, result and stderr of each test cell: what nbgrader scores it by, so that
    no test passes or fails because of the limits.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.size = sandbox.output_size or sys.maxsize
        self.total = sandbox.outputs_size or sys.maxsize
        self.marker = f"… [output cut: more than the {amount(self.size)} an output may be (c.Sandbox.output_size)]"
        self.kept = 0  # bytes, counted as the outputs arrive
        self.streams: dict[tuple[int, str], int] = {}  # (cell index, "stream stdout" or "stream stderr") → bytes kept
        self.scored: set[tuple[int, str]] = set()  # (test cell index, one of SCORED) kept
        self.cut: set[int] = set()  # indices of cells with an output cut
        self.dropped: int | None = None  # index of the cell where outputs began to be dropped
        self.dropped_errors: set[int] = set()  # indices of cells with an error dropped

    def admit(self, msg: dict[str, Any], index: int, test: bool, copies: int = 1) -> tuple[bool, NotebookNode | None]:
        """Whether to keep kernel message ``msg`` of cell ``index`` (a test cell or not), cut in place to fit, and
        an output to show after it saying what was cut or dropped. ``copies``: the outputs it fills."""
        kind, content = msg["msg_type"], msg["content"]
        key = (index, f"stream {content.get('name')}" if kind == "stream" else kind)
        used = self.streams.get(key, 0)
        if used >= self.size:
            return False, None  # this stream of the cell is cut already, its marker shown
        size = self._size(kind, content) + sum(len(buffer) for buffer in msg.get("buffers") or [])
        cut = used + size > self.size
        if cut and kind in WIDGET:
            self.cut.add(index)
            return False, None
        if cut:
            self.fit(kind, content, self.size - used)
            size = self._size(kind, content)
        spent = self.dropped is not None or self.kept + size * copies > self.total
        if spent and not (test and key[1] in SCORED and key not in self.scored):
            if kind == "error":
                self.dropped_errors.add(index)
            if self.dropped is not None:
                return False, None
            self.dropped = index
            return False, _shown(f"… [output dropped from here on: more than the {amount(self.total)} a notebook's "
                                 "outputs may be in all (c.Sandbox.outputs_size)]")
        self.kept += size * copies
        if test and key[1] in SCORED:
            self.scored.add(key)
        if kind == "stream":
            self.streams[key] = self.size if cut else used + size
        if cut:
            self.cut.add(index)
        # a cut stream's marker stands apart: nbgrader's LimitOutput may cut the text again, by lines
        return True, _shown(self.marker) if cut and kind == "stream" else None

    def fit(self, kind: str, content: dict[str, Any], room: int) -> None:
        """Cut the content of a message of this kind to ``room`` bytes, in place, keeping what it is."""
        if self._size(kind, content) <= room:
            return
        if kind == "stream":
            content["text"] = _cut(content["text"], room)
        elif kind == "error":  # still an error, which fails a test: its name and message a quarter each, traceback half
            content.update(ename=_cut(content.get("ename", ""), room // 4),
                           evalue=_cut(content.get("evalue", ""), room // 4, self.marker),
                           traceback=[_cut("\n".join(content.get("traceback", [])), room // 2, self.marker)])
        else:  # a display or a result: its text, without rich data
            plain = (content.get("data") or {}).get("text/plain")
            content.update(data={"text/plain": f"{_cut(plain if isinstance(plain, str) else '', room)}\n{self.marker}"},
                           metadata={})

    @staticmethod
    def _size(kind: str, content: dict[str, Any]) -> int:
        return sum(_bytes(content.get(field)) for field in KEPT[kind])

    def notes(self) -> list[str]:
        """What the limits did to the notebook, for the summary."""
        notes = []
        if self.cut:
            cells = ", ".join(str(index + 1) for index in sorted(self.cut))
            notes.append(f"output cut to {amount(self.size)} in cell{'s' if len(self.cut) > 1 else ''} {cells} "
                         "(c.Sandbox.output_size)")
        if self.dropped is not None:
            notes.append(f"output dropped from cell {self.dropped + 1} on: more than {amount(self.total)} in all "
                         "(c.Sandbox.outputs_size)")
        return notes
