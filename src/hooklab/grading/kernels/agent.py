"""The grader's agent in a graded kernel: :class:`GradingKernel`, ipykernel's kernel that runs the grading protocol
(:mod:`hooklab.grading.kernels.protocol`) around each cell.

It is imported by the kernel server before it forks (or by a kernel of its own as it starts, given
:data:`~hooklab.grading.kernels.protocol.KERNEL_ARGUMENT`), so everything it calls is bound before any code of a
notebook runs: the grader's probe (:mod:`hooklab.grading.kernel_probe`, loaded by path, not through the import
system), :func:`hooklab.observations.begin`, the working copy's filling, the notebooks' error messages, and the
function that writes on the observation channel (:func:`hooklab.observations.connect`). Each is held in a closure
of the kernel class, so no name of the notebook's, of a module's or of a class's resolves to them later. The
request's fields are popped from its metadata before the cell's code runs, so a running cell cannot read the
nonce that marks the kernel's answers (what stays reachable in any Python process, the frames and memory of the
interpreter, stays with the scan and the probe).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from ipykernel.ipkernel import IPythonKernel

from hooklab import hints, observations
from hooklab.grading.kernels import protocol
from hooklab.grading.kernels.working_copy import fill_awaited_working_copy

PROBE_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernel_probe.py")


def load_probe() -> Any:
    """The grader's probe, loaded from its file (once per process) under its name in ``sys.modules``."""
    probe = sys.modules.get(protocol.PROBE_MODULE)
    if probe is None:
        spec = importlib.util.spec_from_file_location(protocol.PROBE_MODULE, PROBE_FILE)
        probe = sys.modules[protocol.PROBE_MODULE] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(probe)
    return probe


def guard_model_reads() -> None:
    """``nn.Module.__setattr__`` of a graded kernel refuses a model's reading methods (``named_parameters``, ...,
    :data:`~hooklab.grading.integrity.rules.MODULE_READS`) set on a model object, by whatever name: one set there
    would show the tests parts the model does not have. The scan holds the spellings it can read; this holds the
    computed ones (``setattr(model, "named_" + "parameters", ...)``). A value that cannot be called (a recorder's
    ``self.modules = []``) cannot stand in for the method and is set as usual. Installed before the probe's snapshot,
    which then watches it as it watches the rest of ``nn.Module``."""
    from torch import nn

    from hooklab.grading.integrity.rules import MODULE_READS

    setattr_of_module, text_of = nn.Module.__setattr__, str.__str__  # str.__str__: the characters, whatever the class

    def __setattr__(self: nn.Module, name: str, value: Any) -> None:  # noqa: N807 (nn.Module's own method)
        if isinstance(name, str) and text_of(name) in MODULE_READS and callable(value):
            raise AttributeError(f"a model's {text_of(name)} cannot be replaced on the model while it is graded "
                                 "(the tests read the model's parts through it)")
        setattr_of_module(self, name, value)

    nn.Module.__setattr__ = __setattr__  # type: ignore[method-assign]


def _kernel_class() -> type[IPythonKernel]:
    """The kernel class, its steps bound to the functions they call as this module is imported."""
    guard_model_reads()
    probe = load_probe()
    snapshot, check, watched_as_snapshot = probe.snapshot, probe.check, probe.watched_as_snapshot
    begin, connect, explain_errors = observations.begin, observations.connect, hints.explain_errors
    fill, run_cell = fill_awaited_working_copy, IPythonKernel.do_execute
    field, take, text, dictionary, failure = protocol.FIELD, dict.pop, str, dict, Exception
    snapshot_word, before_word, start_word = protocol.SNAPSHOT, protocol.BEFORE, protocol.START
    after_word, end_word = protocol.AFTER, protocol.END
    # once connected (each set once, as the kernel starts): the agent's writer of a line on the observation channel,
    # and its count of the observations sent so far; None without a channel
    speak: Any = None
    count: Any = None
    connected = False

    def answer(nonce: str, word: str, value: str = "", replied: dict[str, str] | None = None) -> None:
        """Say ``word`` (and ``value``) about the request on the channel; without one, in ``replied``."""
        if speak is not None:
            speak(f"{nonce} {word} {value}".rstrip())
        elif replied is not None:
            replied[word] = value

    def sent() -> int:
        return count() if count is not None else 0

    def before(kernel: IPythonKernel, nonce: str, fields: dict[str, Any], replied: dict[str, str] | None) -> int:
        """The steps before the cell; one that fails leaves its answer out, which the grader reads as missing. Returns
        how many observations were sent before the cell."""
        try:
            if "start" in fields:
                explain_errors(kernel.shell)
                expected = fields["start"].get("expected")
                answer(nonce, snapshot_word, snapshot(expected) if expected is not None else "", replied)
                fill()
            if fields.get("check"):
                answer(nonce, before_word, check(), replied)
            if "begin" in fields:
                begin(*fields["begin"])
            if fields.get("observe"):
                answer(nonce, start_word, "", replied)
        except failure:
            pass
        return sent()

    class GradingKernel(IPythonKernel):
        """ipykernel's kernel with the grading protocol around each cell (:mod:`hooklab.grading.kernels.protocol`)."""

        def __init__(self, **kwargs: Any) -> None:
            nonlocal speak, count, connected
            super().__init__(**kwargs)
            if not connected:
                speak, count = connect(watched_as_snapshot) or (None, None)
                connected = True

        async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                             user_expressions: dict[str, Any] | None = None, allow_stdin: bool = False, *,
                             cell_meta: dict[str, Any] | None = None, cell_id: str | None = None) -> dict[str, Any]:
            fields = take(cell_meta, field, None) if type(cell_meta) is dictionary else None
            nonce = fields.get("nonce") if type(fields) is dictionary else None
            if type(nonce) is not text:
                return await run_cell(self, code, silent, store_history, user_expressions, allow_stdin,
                                      cell_meta=cell_meta, cell_id=cell_id)
            # without a channel (a kernel nbgrader started itself), the answers go in the reply
            replied = {} if speak is None else None
            already = before(self, nonce, fields, replied)
            reply = None
            try:
                reply = await run_cell(self, code, silent, store_history, user_expressions, allow_stdin,
                                       cell_meta=cell_meta, cell_id=cell_id)
                return reply
            finally:
                observed = sent() - already
                try:
                    if "proof" in fields:
                        answer(nonce, after_word, check(fields["proof"]), replied)
                finally:
                    answer(nonce, end_word, text(observed), replied)
                    if replied is not None and type(reply) is dictionary:
                        reply[field] = replied

    return GradingKernel


GradingKernel = _kernel_class()
