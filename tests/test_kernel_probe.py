"""The grader's probe inside a kernel (hooklab.grading.kernel_probe), exercised in a fresh interpreter
with an IPython shell, as a kernel has: what it reports changed, and that its digest moves whenever
what it watches does, its own state included."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

SCRIPT = textwrap.dedent("""\
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    from hooklab.grading.kernels.agent import load_probe
    probe = load_probe()  # as the grader's agent loads it
    import torch
    import hooklab.checks  # as a kernel has it: the kernel server imported it
    from hooklab.hints import explain_errors
    explain_errors(shell)  # as the grader's agent does before the snapshot
    baseline = json.loads(probe.snapshot({{}}))["digest"]
    exec({change!r})
    answer = json.loads(probe.check())
    print(json.dumps({{"changes": answer["changes"], "digest moved": answer["digest"] != baseline}}))
""")

CHANGES = {
    "nothing": ("", []),
    "a module attribute replaced": ("torch.allclose = lambda *a, **k: True", ["torch.allclose"]),
    "a method added to a class": ("torch.Tensor.sneaky = lambda self: 1", ["torch.Tensor.sneaky"]),
    "a method of a class replaced": ("torch.nn.Module.__call__ = lambda self, *a: 0",
                                     ["torch.nn.modules.module.Module.__call__"]),
    "an attribute removed": ("del torch.nn.functional.mse_loss", ["torch.nn.functional.mse_loss"]),
    "a module swapped": ("import types; sys.modules['torch.testing'] = types.ModuleType('torch.testing')", None),
    "a checker's defaults": ("import hooklab.checks as c; c.check_tensor.__defaults__ = None", None),
    "a tracer": ("sys.settrace(lambda *a: None)", ["sys.settrace"]),
    "a global that shadows a builtin in hooklab's observations": (
        "import hooklab.observations as o; o.all = lambda items: True", ["hooklab.observations.all"]),
    "the notebooks' error messages silenced": (
        "import hooklab.hints as h; h._show.__code__ = (lambda *a, **k: None).__code__",
                                               ["hooklab.hints._show (code or defaults)"]),
    "another exception handler for IPython": (
        "shell.set_custom_exc((AssertionError,), lambda *a, **k: None)", ["IPython custom exception handler"]),
    "the notebooks' error messages installed again": ("from hooklab.hints import explain_errors; explain_errors()", []),
    "an error that hides itself": (
        "import hooklab.checks as c; c.AnswerError._render_traceback_ = lambda self: []",
                                   ["hooklab.checks.AnswerError._render_traceback_"]),
    "a function's code swapped in place": (
        "torch.testing.assert_close.__code__ = (lambda *a, **k: None).__code__",
                                           ["torch.testing.assert_close (code or defaults)"]),
    "a method's defaults replaced": ("torch.nn.Module.zero_grad.__defaults__ = (False,)",
                                     ["torch.nn.modules.module.Module.zero_grad (code or defaults)"]),
    "a module loaded from the submission's folder": (
        "open('helper_mod.py', 'w').write('x = 1'); sys.path.insert(0, '.'); import helper_mod",
                                                     ["helper_mod loaded from the submission folder"]),
}
# what a submission could do to the probe's own records: the changes list is then empty, the digest moves
TAMPERING = {
    "the snapshot made to match a patch": (
        "torch.allclose = lambda *a, **k: True\n"
        "probe._state['watched'] = probe._watch(); probe._state['facts'] = probe._facts(shell)"
    ),
    "only the snapshot's values made to match": (
        "torch.allclose = lambda *a, **k: True\n"
        "keys, values, *_ = probe._state['watched']['torch']; values[keys.index('allclose')] = torch.allclose"
    ),
    "the snapshot of a function's code made to match": (
        "torch.testing.assert_close.__code__ = (lambda *a, **k: None).__code__\n"
        "keys, values, ids, functions, parts, part_ids = probe._state['watched']['torch.testing']\n"
        "parts[:] = probe._parts(values, functions)\n"
        "probe._state['watched']['torch.testing'] = (keys, values, ids, functions, parts, "
        "probe._ids(probe.chain.from_iterable(parts)))"
    ),
}


def probe(tmp_path: Path, change: str) -> dict:
    script = SCRIPT.format(change=change)
    process = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr[-2000:]
    return json.loads(process.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", CHANGES)
def test_the_probe_names_what_changed(tmp_path: Path, name: str):
    change, expected = CHANGES[name]
    answer = probe(tmp_path, change)
    if expected is None:
        assert answer["changes"], f"{name}: nothing reported"
    else:
        assert answer["changes"] == expected
    if name != "a module loaded from the submission's folder":  # reported, not hashed: it is not in the snapshot
        assert answer["digest moved"] == (expected != [])


@pytest.mark.parametrize("name", TAMPERING)
def test_the_digest_moves_when_the_probe_is_made_to_see_nothing(tmp_path: Path, name: str):
    answer = probe(tmp_path, TAMPERING[name])
    assert answer["changes"] == [] and answer["digest moved"]


def test_a_method_of_a_watched_class_swapped_is_seen_while_it_is_swapped_and_not_once_put_back():
    """kernel_probe.watched_as_snapshot, which the agent's sender asks before each observation: a method of torch.Tensor
    or of a checker's class, a checker's global or the encoder's base64 swapped inside a cell is seen at once (check()
    would see it only between cells, after the cell put it back); put back, nothing is, but check() reports what was
    seen (the notebook is held); before the snapshot, nothing is asked."""
    script = textwrap.dedent("""\
        import json
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        from hooklab.grading.kernels.agent import load_probe
        probe = load_probe()
        import torch
        import hooklab.checks
        seen = [probe.watched_as_snapshot()]
        probe.snapshot({})
        seen.append(probe.watched_as_snapshot())
        import hooklab.observations
        swapped = ((torch.Tensor, "backward"), (torch.nn.Module, "__call__"), (hooklab.checks._Span, "forked"),
                   (hooklab.checks, "observe"), (hooklab.observations, "_BASE64"))
        for owner, name in swapped:
            real = vars(owner)[name]
            setattr(owner, name, lambda *args, **kwargs: None)
            seen.append(probe.watched_as_snapshot())
            setattr(owner, name, real)
            seen.append(probe.watched_as_snapshot())
        torch.Tensor.to = lambda self, *args, **kwargs: self  # added: it shadows what TensorBase holds
        seen.append(probe.watched_as_snapshot())
        del torch.Tensor.to
        seen.append(probe.watched_as_snapshot())
        torch.Tensor.__slotnames__ = []  # a cache Python writes (pickling an instance) is no change
        seen.append(probe.watched_as_snapshot())
        print(seen)
        print([change for change in json.loads(probe.check())["changes"] if change.endswith("(while a test ran)")])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    seen, changes = done.stdout.splitlines()
    assert seen == str([True, True, *[False, True] * 6, True]), done
    assert changes == str([f"{name} (while a test ran)" for name in (
        "hooklab.checks._Span.forked", "hooklab.checks.observe", "hooklab.observations._BASE64",
        "torch.Tensor.backward", "torch.Tensor.to", "torch.nn.modules.module.Module.__call__")]), changes


def test_an_observation_made_while_the_agent_sees_a_change_is_not_sent():
    """The sender the agent connects asks, before each observation, whether the watched classes are as they were
    (kernel_probe.watched_as_snapshot): one made while they are not is neither sent nor counted."""
    import os

    from hooklab import observations

    read_end, write_end = os.pipe()
    unchanged = [True]
    send, _, sent = observations._senders(write_end, lambda: unchanged[0])
    cell = compile("observe('equal', 'x', {'type': 'int', 'value': '1'})\nunchanged[0] = False\n"
                   "observe('equal', 'y', {'type': 'int', 'value': '1'})\n", "cell.py", "exec")
    saved = dict(observations._state)
    try:
        observations._state["send"] = send
        exec(cell, {"observe": observations.observe, "unchanged": unchanged})
    finally:
        observations._state.update(saved)
        os.close(write_end)
    with os.fdopen(read_end) as lines:
        written = lines.read().splitlines()
    assert sent() == 1 and len(written) == 1 and '"label":"x"' in written[0], written
