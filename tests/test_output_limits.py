"""What a kernel may leave in its notebook (:class:`hooklab.grading.output_limits.OutputLimits`), message by
message, without a kernel: an output over ``c.Sandbox.output_size`` is cut with a marker, outputs past
``outputs_size`` are dropped with one, but for a test cell's first error, and 0 means no limit. test_limits.py grades
a class that prints too much."""

from __future__ import annotations

import json
import sys
from typing import Any

from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.output_limits import OutputLimits


def cut(size: int) -> str:
    """The marker after an output cut to ``size`` bytes (under 1 KiB)."""
    return f"… [output cut: more than the {size} bytes an output may be (c.Sandbox.output_size)]"


def dropped(total: int) -> str:
    """The one marker after which outputs past ``total`` bytes in all (under 1 KiB) are dropped."""
    return (f"… [output dropped from here on: more than the {total} bytes a notebook's outputs may be in all "
            "(c.Sandbox.outputs_size)]")


def limits(output: int, outputs: int) -> OutputLimits:
    return OutputLimits(Sandbox(output_size=output, outputs_size=outputs))


def stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"msg_type": "stream", "content": {"name": name, "text": text}}


def error(ename: str, evalue: str, traceback: list[str]) -> dict[str, Any]:
    return {"msg_type": "error", "content": {"ename": ename, "evalue": evalue, "traceback": traceback}}


def admitted(limit: OutputLimits, msg: dict[str, Any], index: int, test: bool = False,
             copies: int = 1) -> tuple[bool, str | None]:
    """Whether ``msg`` is kept, and the text of the note shown after it (None: none)."""
    keep, note = limit.admit(msg, index, test, copies)
    return keep, None if note is None else note.data["text/plain"]


def test_a_cells_stdout_is_cut_at_the_output_size_once_with_a_marker_and_its_stderr_counts_apart():
    limit = limits(100, 10_000)
    second = stream("y" * 60)
    assert admitted(limit, stream("x" * 60), 0) == (True, None)
    assert admitted(limit, second, 0) == (True, cut(100))
    assert second["content"]["text"] == "y" * 40, "the cell's stdout is one output of at most 100 bytes"
    assert admitted(limit, stream("z"), 0) == (False, None), "a cut stream keeps nothing more, and says so once"
    assert admitted(limit, stream("w" * 60, "stderr"), 0) == (True, None)
    assert admitted(limit, stream("v" * 60), 1) == (True, None)
    assert limit.notes() == ["output cut to 100 bytes in cell 1 (c.Sandbox.output_size)"]


def test_a_cut_never_splits_a_character():
    message = stream("é" * 100)  # 200 bytes
    assert admitted(limits(101, 10_000), message, 0) == (True, cut(101))
    assert message["content"]["text"] == "é" * 50


def test_a_long_error_is_cut_and_stays_an_error():
    message = error("E" * 10, "v" * 1000, ["t" * 1000])
    assert admitted(limits(400, 10_000), message, 0, test=True) == (True, None)
    assert message == error("E" * 10, "v" * 100 + cut(400), ["t" * 200 + cut(400)]), "a quarter, a quarter, a half"


def test_outputs_past_the_notebook_total_are_dropped_with_one_marker_but_a_test_cells_first_error():
    limit = limits(1000, 250)
    assert admitted(limit, stream("a" * 100), 0) == (True, None)
    assert admitted(limit, stream("b" * 100), 1) == (True, None)
    assert admitted(limit, stream("c" * 100), 2) == (False, dropped(250))
    assert admitted(limit, stream("d"), 2) == (False, None), "one marker for the whole notebook"
    assert admitted(limit, error("AssertionError", "wrong", []), 3, test=True) == (True, None), (
        "a test cell's error decides its score: it is kept")
    assert admitted(limit, stream("e"), 3, test=True) == (False, None)
    assert admitted(limit, error("NameError", "again", []), 3, test=True) == (False, None)
    assert admitted(limit, error("NameError", "x", []), 4) == (False, None), "a cell that is not a test's"
    assert (limit.dropped, limit.dropped_errors) == (2, {3, 4})
    assert limit.notes() == ["output dropped from cell 3 on: more than 250 bytes in all (c.Sandbox.outputs_size)"]


def test_a_display_shown_in_several_places_counts_once_for_each():
    data = {"text/plain": "x" * 90}
    size = len(json.dumps(data)) + len(json.dumps({}))
    update = {"msg_type": "update_display_data", "content": {"data": data, "metadata": {}}}
    assert admitted(limits(1000, 4 * size), update, 0, copies=4) == (True, None)
    assert admitted(limits(1000, 4 * size), update, 0, copies=5) == (False, dropped(4 * size))


def test_limits_of_0_keep_everything():
    limit = limits(0, 0)
    message = stream("x" * 2**21)
    assert admitted(limit, message, 0) == (True, None)
    assert message["content"]["text"] == "x" * 2**21 and limit.notes() == []
    assert (limit.size, limit.total) == (sys.maxsize, sys.maxsize)
