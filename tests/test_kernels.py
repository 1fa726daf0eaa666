"""Grading kernels forked from the preloaded kernel server (hooklab.grading.kernels).

Every test leaves jupyter_client's default provisioner and hooklab's spare kernels as it found them (the
``forked_kernels`` fixture, ``monkeypatch``): a kernel another test starts by name is the kind that test asks for,
whatever ran before it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.provisioning import KernelProvisionerFactory
from traitlets.config import Config

from hooklab.grading import plan
from hooklab.grading.execute import GuardedExecute
from hooklab.grading.kernels import preloading, provisioner
from hooklab.grading.kernels.client import READY_CLIENT, ReadyClient
from hooklab.grading.kernels.handle import Kernel
from hooklab.grading.kernels.provisioner import PROVISIONER
from hooklab.grading.kernels.server import SUPPORTED, KernelServer

# what a kernel imports that no server can have imported for it: the kernel's __main__, and torch's
# namespaces made at first use
KERNEL_OWN_MODULES = {"__main__", "torch.classes", "torch.ops"}
SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"
COURSE_CONFIG = SOLUTIONS.parent / "autograder" / "nbgrader_config.py"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not SUPPORTED, reason="needs os.fork and pidfd (Linux)")]


def run(manager: KernelManager, code: str) -> str:
    """Execute ``code`` in the kernel and return what it printed."""
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        printed = []
        reply = client.execute_interactive(code, timeout=30,
                                           output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(printed).strip()
    finally:
        client.stop_channels()


@pytest.fixture
def start_kernel(tmp_path):
    managers = []

    def start() -> KernelManager:
        manager = KernelManager(kernel_name="python3")
        manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
        manager.start_kernel(cwd=tmp_path)
        managers.append(manager)
        return manager

    yield start
    for manager in managers:
        manager.shutdown_kernel(now=True)


def test_kernel_is_a_fork_with_torch_already_imported(start_kernel):
    manager = start_kernel()
    assert isinstance(manager.provisioner, provisioner.PreloadedProvisioner)
    assert isinstance(manager.provisioner.process, Kernel), "the kernel was not started by the kernel server"
    assert run(manager, "import sys; print('torch' in sys.modules, sys.modules.get('rfc3987_syntax', 'absent') is not "
                        "None)") == "True True"


def test_a_forked_kernel_starts_without_importing_anything(start_kernel):
    """Everything ipykernel imports as a kernel starts (its debugger, IPython's shell) is preloaded: else
    every kernel pays for the import."""
    server = subprocess.run(
        [sys.executable, "-c",
         "import json, sys\nfrom hooklab.grading.kernels import "
         "preloading, server\npreloading.preload()\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    )
    preloaded = set(json.loads(server.stdout.splitlines()[-1]))
    started = set(json.loads(run(start_kernel(), "import json, sys; print(json.dumps(sorted(sys.modules)))")))
    assert started - preloaded <= KERNEL_OWN_MODULES, sorted(started - preloaded)


def test_the_server_preloads_what_the_notebooks_to_grade_import():
    """A slow import is preloaded for the notebooks that need it (06 trains with scikit-learn's data and an
    optimizer), not for the others (02): every module preloaded for 02 leaves both out."""
    code = {name: plan.code_of(next((SOLUTIONS / name).glob("*.ipynb")))
            for name in ("02_forward_hooks", "06_applications")}
    for_06 = set(preloading.modules_to_preload(code["06_applications"]))
    assert {"sklearn.datasets", "torch._dynamo", "hooklab.widgets"} <= for_06
    assert preloading.modules_to_preload() == [*preloading.PRELOAD, *preloading.PRELOAD_WHEN_USED]
    for_02 = preloading.modules_to_preload(code["02_forward_hooks"])
    assert "hooklab.widgets" in for_02
    drawn = "sys.modules['matplotlib.mathtext'].MathTextParser._parser is not None"
    server = subprocess.run(
        [sys.executable, "-c",
         f"import sys\nfrom hooklab.grading.kernels import preloading, server\npreloading.preload({for_02!r})\n"
         f"print(sorted(sys.modules), {drawn})"],
        capture_output=True, text=True, check=True,
    )
    assert "'sklearn'" not in server.stdout and "'torch._dynamo'" not in server.stdout
    assert server.stdout.split()[-1] == "False", "02 draws nothing: its server has no reason to"


def test_kernels_of_notebooks_that_draw_find_matplotlib_ready_to_draw():
    """06 plots (with pyplot and its widgets): its server draws once, so that every kernel finds matplotlib's
    math-text parser (log-scale tick labels) built and its fonts found, instead of each doing it again."""
    for_06 = preloading.modules_to_preload(plan.code_of(next((SOLUTIONS / "06_applications").glob("*.ipynb"))))
    assert preloading.RENDERER in for_06
    forked = textwrap.dedent(f"""\
        import os, sys
        from hooklab.grading.kernels import preloading
        preloading.preload({for_06!r})
        pid = os.fork()
        if pid == 0:
            from matplotlib.mathtext import MathTextParser
            print(MathTextParser._parser is not None, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    printed = subprocess.run([sys.executable, "-c", forked], capture_output=True, text=True, check=True).stdout
    assert printed.split() == ["True"]


LATER = textwrap.dedent("""\
    import json, sys
    from jupyter_client import KernelManager
    from traitlets.config import Config
    from hooklab.grading.kernels.preloading import modules_to_preload
    from hooklab.grading.kernels.provisioner import PROVISIONER
    from hooklab.grading.kernels.server import KernelServer, start_server

    server = start_server(Config(), code="")  # as the command starts: its notebooks are not known yet
    server.preload(modules_to_preload("from sklearn.datasets import make_moons"))  # known now
    assert list(KernelServer._instances.values()) == [server]
    server.preload(["broken_at_import"])  # raises ValueError as it is imported: the line must stay in step
    manager = KernelManager(kernel_name="python3")
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    manager.start_kernel(cwd=sys.argv[1])
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    printed = []
    client.execute_interactive("import sys; "
                               "print(sorted(m for m in ('sklearn.datasets', 'torch._dynamo') if m in sys.modules))",
                               timeout=60, output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
    client.stop_channels()
    manager.shutdown_kernel(now=True)
    print(len(KernelServer._instances), "".join(printed).strip())
    """)


def test_a_server_started_before_its_notebooks_are_known_preloads_what_they_need(tmp_path):
    """The command starts its kernel server as it starts, then says what the notebooks to grade import:
    kernels forked after that find it imported (and only what those notebooks use). A module that fails to
    import costs only its preloading."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "broken_at_import.py").write_text("raise ValueError('built for another numpy')\n")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "modules"), env.get("PYTHONPATH", "")])
    (tmp_path / "work").mkdir()
    run = subprocess.run([sys.executable, "-c", LATER, str(tmp_path / "work")], capture_output=True, text=True, env=env,
                         timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "1 ['sklearn.datasets']", "not one server, or not preloaded for the notebooks"
    assert "could not preload ['broken_at_import']" in run.stderr


def test_the_command_starts_its_kernel_server_before_it_imports_the_grading_stack():
    """nbgrader takes most of a second to import: the command imports it once its server is preloading, and
    the course's configuration, which it reads to start that server, names nbgrader's classes without importing them."""
    code = ("import sys, pathlib, "
            f"hooklab.cli\nhooklab.cli._configured(pathlib.Path({str(COURSE_CONFIG)!r}))\nprint('nbgrader' in "
            "sys.modules)")
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert process.stdout.strip() == "False"


def test_the_grader_does_not_import_what_notebook_validation_does_not_use():
    """jsonschema's IRI format checks compile grammars for most of a second; nbformat checks no formats."""
    process = subprocess.run(
        [sys.executable, "-c", "import sys, hooklab.cli, nbformat\nprint(sorted(name for name, module in "
                               "sys.modules.items() if module))"], capture_output=True, text=True, check=True,
    )
    assert "'jsonschema'" in process.stdout and "'rfc3987_syntax'" not in process.stdout


def test_forked_kernels_share_no_state(start_kernel):
    first, second = start_kernel(), start_kernel()
    run(first, "import torch; torch.allclose = lambda *a, **k: True; leaked = 1")
    probe = "import torch; print(torch.allclose(torch.zeros(1), torch.ones(1)), 'leaked' in dir())"
    assert run(second, probe) == "False False"
    draws = {run(manager, "import numpy, random; print(numpy.random.randint(2**62), random.getrandbits(62))")
             for manager in (first, second)}
    assert len(draws) == 2, "two forks drew the same 'random' numbers"


def test_interrupt_and_kill_reach_the_fork(start_kernel):
    manager = start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=30)
    request = client.execute("import time\nprint('looping', flush=True)\nwhile True: time.sleep(0.01)")
    deadline = time.monotonic() + 30  # the cell is in its loop once it has printed
    while True:
        message = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if message["parent_header"].get("msg_id") == request and message["msg_type"] == "stream":
            break
    assert message["content"]["text"] == "looping\n"
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=10)
    client.stop_channels()
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    manager.provisioner.process.send_signal(signal.SIGKILL)
    manager.provisioner.process.wait(timeout=10)
    assert not manager.is_alive()


SHARED = textwrap.dedent("""\
    import json, os, sys
    from jupyter_client import KernelManager
    from traitlets.config import Config
    from hooklab.grading.kernels.provisioner import PROVISIONER
    from hooklab.grading.kernels.server import KernelServer, start_server

    start_server(Config())
    (server,) = KernelServer._instances.values()
    print(json.dumps({"owner's server": server.process.pid}), flush=True)
    for worker in range(2):  # forks, as a pool's workers are: each starts a kernel; the second dies with it running
        if os.fork() == 0:
            manager = KernelManager(kernel_name="python3")
            manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
            manager.start_kernel(cwd=sys.argv[1])
            (used,) = KernelServer._instances.values()
            print(json.dumps({"server": used.process.pid, "supervisor": manager.provisioner.process.pid}), flush=True)
            if worker == 0:
                manager.shutdown_kernel(now=True)
            os._exit(0)
        os.wait()
    sys.stdin.read()  # the owner lives on until the test is done
    """)


def test_forks_of_the_owner_share_its_server_and_take_their_kernels_along(tmp_path):
    """The local pool's workers are forks of the grader: one preloaded server starts all their kernels,
    and a worker that dies ends the kernels it started, while the server goes on."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}
    owner = subprocess.Popen([sys.executable, "-c", SHARED, str(tmp_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        server = json.loads(owner.stdout.readline())["owner's server"]
        forks = [json.loads(owner.stdout.readline()) for _ in range(2)]
        assert [fork["server"] for fork in forks] == [server, server], "a fork started a server of its own"
        orphan = forks[1]["supervisor"]
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{orphan}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{orphan}"), "the kernel of a fork that died lives on"
        assert os.path.exists(f"/proc/{server}"), "the server ended with a fork"
    finally:
        owner.kill()
        owner.wait()


ASK = textwrap.dedent("""\
    import os, socket, sys
    if len(sys.argv) > 4:
        os.setuid(int(sys.argv[4]))  # another user
    line = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    line.connect("\\0" + sys.argv[1])  # an abstract address (a NUL cannot be an argument)
    try:
        line.send(sys.argv[2].encode())
        answer = line.recv(1 << 16).decode() if sys.argv[3] == "read" else ""
    except OSError:  # the server closed the line
        answer = ""
    print(answer or "closed")
    """)


def test_the_server_survives_bad_requests_and_answers_only_its_user(start_kernel):
    """Whatever one line sends, or however it ends, the server goes on for the others; a process of
    another user gets no line at all (the listener's abstract address has no permissions of its own)."""
    start_kernel()  # this process's server is up
    server = next(server for server in KernelServer._instances.values() if server.running())
    ask = [sys.executable, "-c", ASK, server.address.removeprefix("\0")]
    answer = subprocess.run([*ask, "not a request", "read"], capture_output=True, text=True, timeout=60)
    assert '"error"' in answer.stdout
    subprocess.run([*ask, '{"sockets": "/nonexistent"}', "leave"], timeout=60)  # gone before its reply
    if os.getuid() == 0:
        other = subprocess.run([*ask, "not a request", "read", "65534"], capture_output=True, text=True, timeout=60)
        assert other.stdout.strip() == "closed", other
    assert server.running()
    assert run(start_kernel(), "print(6 * 7)") == "42"


def test_only_this_interpreters_ipykernel_is_forked():
    """Other kernels are executed, in the sandbox too (tests/test_sandbox.py)."""
    assert provisioner.preloadable([sys.executable, "-m", "ipykernel_launcher", "-f", "c.json"])
    assert not provisioner.preloadable(["/usr/bin/env", "-m", "ipykernel_launcher", "-f", "c.json"])
    assert not provisioner.preloadable([sys.executable, "-m", "other_kernel", "-f", "c.json"])


@pytest.fixture
def spares(monkeypatch):
    """hooklab's spare kernels, empty for this test and ended after it."""
    kept = provisioner.Spares()
    monkeypatch.setattr(provisioner, "SPARES", kept)
    yield kept
    for manager in kept._kept.values():
        provisioner.Spares.discard(manager)


def test_each_notebook_takes_a_fresh_kernel_started_while_the_previous_one_ran(tmp_path, forked_kernels, spares):
    config = Config()
    config.AsyncKernelManager.client_class = READY_CLIENT
    used = []
    for number, student in enumerate(("ada", "bob", "cy")):
        folder = tmp_path / student
        folder.mkdir()
        (folder / "data.txt").write_text(student)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "import os\nprint(open('data.txt').read(), 'left' in dir(), os.getcwd())\nleft = 1")])
        spare = next(iter(spares._kept.values()), None)
        assert (spare is None) == (number == 0), ("a kernel was kept from before the test, or none started ahead "
                                                  "during the previous notebook")
        GuardedExecute(config=config, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(folder)}})
        name, left, cwd = nb.cells[0].outputs[0]["text"].split()
        assert (name, left) == (student, "False"), "the kernel saw another notebook's files or state"
        if spare is not None:
            assert cwd == os.path.realpath(spare.provisioner.folder or ""), ("the spare started during the previous "
                                                                             "notebook was not used")
            assert not os.path.exists(cwd), "a used kernel's folder was left behind"
        used.append(cwd)
    assert len(set(used)) == 3, f"three notebooks, three kernels: {used}"
    assert (tmp_path / "ada" / "data.txt").read_text() == "ada", "the submission's own files changed"


def _test_cell(source: str, grade_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": 1,
                              "schema_version": 3}
    return cell


def test_the_protocol_rides_in_each_cells_own_request(tmp_path, monkeypatch, forked_kernels, spares):
    """The grader asks nothing of a kernel but in the metadata of each cell's own request (one request more per
    notebook: the snapshot), never in user_expressions; the check before a test and the check after it run in the
    test's request, also after a cell that raised. What they find holds the notebook: a patch in the cell before
    a test is found before that test."""
    sent = []
    execute = ReadyClient.execute

    def recorded(self, code, silent=False, store_history=True, user_expressions=None, allow_stdin=None,
                 stop_on_error=True):
        sent.append((code, self.fields, user_expressions))
        return execute(self, code, silent, store_history, user_expressions, allow_stdin, stop_on_error)

    monkeypatch.setattr(ReadyClient, "execute", recorded)
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        code("x = 1"), _test_cell("assert x == 1", "first"),
        code("import torch\ntorch.allclose = lambda *args, **kwargs: True"), _test_cell("assert True", "second"),
        code("y = 2"), nbformat.v4.new_markdown_cell("between"), _test_cell("assert y == 3", "fails"),
        code("raise ValueError('no answer')"), _test_cell("assert True", "after_an_error"),
        _test_cell("print(sorted(get_ipython().kernel.get_parent()['metadata']))", "reads_its_request"),
    ])
    config = Config()
    config.AsyncKernelManager.client_class = READY_CLIENT
    GuardedExecute(config=config, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[-1].outputs[0]["text"].strip() == "[]", "a running cell read the protocol's fields"
    assert len(sent) == 1 + 9 and not any(expressions for _, _, expressions in sent)
    assert list(sent[0][1]) == ["start", "nonce"]
    tests = [fields for code, fields, _ in sent[1:] if fields is not None]
    assert len(tests) == 5 and all(fields["check"] and fields["proof"] for fields in tests)
    assert [code.startswith(("assert", "print")) for code, fields, _ in sent[1:]] == [
        fields is not None for code, fields, _ in sent[1:]], "a request that is not a test's carried fields"
    held = nb.metadata["hooklab"]["held"]
    assert any(why.startswith("changed: torch.allclose (before cell 4)") for why in held), held
    assert not any("did not answer" in why for why in held), held


def test_plain_nbgrader_kernels_get_no_spare(tmp_path, monkeypatch, spares):
    """Under `nbgrader autograde` with the course config, GuardedExecute runs on jupyter_client's own
    provisioner: no kernel is started ahead, and nothing fails."""
    monkeypatch.setattr(KernelProvisionerFactory.instance(), "default_provisioner_name", "local-provisioner")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    GuardedExecute(kernel_name="python3").preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[0].outputs[0]["text"].strip() == "42"
    assert not spares._kept, "a spare was started outside hooklab's kernel server"


def test_a_kernel_holds_its_end_of_the_channel_alone_and_cannot_take_back_what_it_sent(start_kernel):
    """The channel's other end is in the grader: what a kernel sent is the grader's, whatever it runs next."""
    manager = start_kernel()
    channel = manager.provisioner.channel
    channel.expect("n")
    sent = run(manager, textwrap.dedent("""\
        import os, socket
        from hooklab import observations
        speak, sent = observations.connect()
        speak("n start")
        observations.begin("seed", True)
        observations._line_of_the_cell = lambda: 1
        observations.observe("value", "sent", observations.encode(1))
        own = socket.socket(fileno=os.dup(observations._state["channel"]))
        own.shutdown(socket.SHUT_RD)  # nothing to read from its own end
        speak(f"n end {sent()}")
        print(own.recv(100) == b"")
    """))
    assert sent == "True"
    lines = channel.take().observed
    assert [json.loads(line)["label"] for line in lines] == ["sent"]
