"""Shared paths and helpers for the test suite."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.provisioning import KernelProvisionerFactory

from hooklab.grading.kernels.provisioner import PROVISIONER
from hooklab.grading.kernels.server import SUPPORTED

REPO = Path(__file__).resolve().parent.parent
COURSE_CONFIG = REPO / "autograder" / "nbgrader_config.py"

# As in the Makefile: nbgrader reads the course config, Jupyter uses this environment's kernel,
# and the tools nbgrader starts by name (alembic) are this environment's.
os.environ.setdefault("JUPYTER_CONFIG_PATH", str(COURSE_CONFIG.parent))
os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
# Tests run `make` as a user does from a shell; under `make test` these would make each one a sub-make,
# which prints "Entering directory" around its output.
for variable in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
    os.environ.pop(variable, None)


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command's name (state first), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> set[tuple[int, float]]:
    """(pid, start time) of every process below ``pid`` now, from /proc (a kernel sits in a session of its own, so
    its process group is not the server's)."""
    children: dict[int, list[tuple[int, float]]] = {}
    with contextlib.suppress(OSError):  # no /proc: nothing found
        for entry in filter(str.isdigit, os.listdir("/proc")):
            if (fields := _stat(int(entry))) is not None:  # else ended meanwhile
                children.setdefault(int(fields[1]), []).append((int(entry), float(fields[19])))
    found, frontier = set(), [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child[0])
    return found


def _alive(pid: int, started: float) -> bool:
    fields = _stat(pid)
    return fields is not None and float(fields[19]) == started and fields[0] != "Z"


def _cpu_ticks(processes: set[tuple[int, float]]) -> int:
    """CPU time (user + system, in clock ticks) the live ones of ``processes`` have used so far."""
    ticks = 0
    for pid, started in processes:
        if (fields := _stat(pid)) is not None and float(fields[19]) == started:
            ticks += int(fields[11]) + int(fields[12])
    return ticks


def _command(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    return "?"


@dataclasses.dataclass
class Stopped:
    """How a server ended under ``stop_server``."""

    seconds: float  # from SIGTERM until it and what it started were gone
    killed: bool = False  # it did not exit on SIGTERM and was killed
    left: list[str] = dataclasses.field(default_factory=list)  # what it started and left running, killed after it
    survivors: list[str] = dataclasses.field(default_factory=list)  # still there after SIGKILL (should never be)

    def problem(self) -> str:
        """What went wrong, in words; empty when it exited on SIGTERM and left nothing running."""
        said = []
        if self.killed:
            said.append(f"did not exit on SIGTERM and was killed after {self.seconds:.0f} s")
        if self.left:
            said.append(f"left {len(self.left)} process(es) running, killed: {'; '.join(self.left)}")
        if self.survivors:
            said.append(f"{len(self.survivors)} process(es) outlived SIGKILL: {'; '.join(self.survivors)}")
        return ", and ".join(said)


# stop_server's patience: a server that has used no CPU time (it and what it started) for STALLED seconds after
# SIGTERM is taken to be stuck (jupyter_client waits 5 s for a kernel to exit before it kills it), so a slow machine
# gets as long as it keeps working; CEILING bounds one that keeps working without ever exiting (a busy loop).
STALLED, CEILING = 30.0, 600.0


def stop_server(server: subprocess.Popen, log: Path | None = None, *, what: str = "the server",
                send: int | None = signal.SIGTERM, stalled: float = STALLED, ceiling: float = CEILING) -> Stopped:
    """Stop a server started with ``start_new_session=True`` and leave no process of it behind; says how it went.

    SIGTERM first (``send``; None: it was asked to stop already): the server shuts its kernels down itself. It may
    take as long as it keeps working; once it has used no CPU time for ``stalled`` seconds (or after ``ceiling``),
    it gets SIGABRT, which makes Python print every thread's stack into its stderr (``log``) when it runs with
    PYTHONFAULTHANDLER=1, then SIGKILL with its whole process group. Whatever it had started (a kernel sits in a
    session of its own) and left running is killed too. A server that had to be killed, or left processes behind,
    makes a warning that says so, with the end of ``log`` (its threads' stacks): teardown never errors the run;
    tests that are about stopping check ``Stopped`` itself."""
    begun = time.monotonic()
    below = _descendants(server.pid)
    killed = False
    if server.poll() is None:
        if send is not None:
            server.send_signal(send)
        itself = {(server.pid, float(fields[19]))} if (fields := _stat(server.pid)) else set()
        ticks, progress = -1, begun
        while server.poll() is None:
            now = time.monotonic()
            if (used := _cpu_ticks(itself | below)) != ticks:
                ticks, progress = used, now
            if now - progress > stalled or now - begun > ceiling:
                killed = True
                break
            below |= _descendants(server.pid)  # a kernel it was starting
            time.sleep(0.2)
        if killed:
            with contextlib.suppress(ProcessLookupError):
                server.send_signal(signal.SIGABRT)  # the threads' stacks into its log, if faulthandler is on
            for _ in range(50):  # the stacks are written at once; then it aborts
                if server.poll() is not None:
                    break
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    # what it started and left (a kernel it had no time to shut down), and what remains in its group
    left = [(pid, started) for pid, started in below | _descendants(server.pid) if _alive(pid, started)]
    said = [f"{pid} {_command(pid)}" for pid, _ in left]
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 60  # SIGKILL takes effect at once but for a process stuck in the kernel (D state)
    while (survivors := [pid for pid, started in left if _alive(pid, started)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    stopped = Stopped(time.monotonic() - begun, killed, said, [f"{pid} {_command(pid)}" for pid in survivors])
    if problem := stopped.problem():
        tail = log.read_text(errors="replace")[-8000:] if log and log.exists() else ""
        warnings.warn(f"{what} (pid {server.pid}, `{' '.join(map(str, server.args[:3]))}`) {problem}. "
                      f"{'Its log, ' + str(log) + ', ends:' if tail else ''}\n{tail}", stacklevel=2)
    return stopped


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


LAB_MODES = {"student": "lab", "instructor": "instructor"}  # make target of each JupyterLab mode


def lab_config_path(mode: str, course_config: Path) -> str:
    """JUPYTER_CONFIG_PATH as the mode's make target sets it, with ``course_config`` for the course's folder."""
    command = subprocess.run(["make", "-n", LAB_MODES[mode]], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout
    folders = re.search(r"JUPYTER_CONFIG_PATH=(\S+) \S*jupyter lab", command)[1].split(os.pathsep)
    return os.pathsep.join(str(course_config) if folder == str(COURSE_CONFIG.parent) else folder for folder in folders)


# Seconds JupyterLab may take to answer: a limit for a stuck server, far above what a slow machine needs (here it
# starts in 3-15 s). How long it may take to stop: stop_server's STALLED.
LAB_STARTING = 300


@dataclasses.dataclass
class Lab:
    server: subprocess.Popen
    base: str  # http://127.0.0.1:<port>
    token: str
    log: Path  # its stderr: the server's and its kernels' messages

    def api(self, method: str, path: str, body: object = None, timeout: float = 60) -> object:
        """A request to its REST API; the answer's JSON (None if empty)."""
        request = urllib.request.Request(f"{self.base}{path}?token={self.token}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            data = answer.read()
        return json.loads(data) if data else None


def start_jupyterlab(scratch: Path, root: Path, mode: str, course_config: Path,
                     settings: dict[str, dict] | None = None, stdin: int | None = subprocess.DEVNULL) -> Lab:
    """JupyterLab on loopback with a token, in ``mode`` (as its make target starts it), serving ``root`` with private
    settings (``settings``: plugin id → values) and state in ``scratch``, once it answers. Stop it with
    ``stop_server(lab.server, lab.log)``."""
    log = scratch / "lab.log"
    for plugin, values in (settings or {}).items():
        path = scratch / "settings" / f"{plugin.replace(':', '/')}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_PATH": lab_config_path(mode, course_config),
        "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
        "PYTHONFAULTHANDLER": "1",  # a server that does not stop prints its threads' stacks when stop_server aborts it
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True"],
        env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=log.open("w"),
        start_new_session=True,  # its own process group: stop_server can kill all of it, and nothing of pytest's
    )
    lab = Lab(server, f"http://127.0.0.1:{port}", token, log)
    deadline = time.monotonic() + LAB_STARTING
    while True:
        try:
            lab.api("GET", "/api/status", timeout=10)
            return lab
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                stop_server(server, log, what="JupyterLab")
                pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)


@contextlib.contextmanager
def jupyterlab(scratch: Path, root: Path, mode: str, course_config: Path,
               settings: dict[str, dict] | None = None) -> Iterator[tuple[str, str]]:
    """``start_jupyterlab``'s lab while in the block, stopped by ``stop_server`` after it; yields (base URL, token)."""
    lab = start_jupyterlab(scratch, root, mode, course_config, settings)
    try:
        yield lab.base, lab.token
    finally:
        stopped = stop_server(lab.server, lab.log, what=f"JupyterLab ({mode})")
        with lab.log.open("a") as end:
            end.write(f"[tests] the server and what it started ended {stopped.seconds:.1f} s after SIGTERM"
                      f"{'; ' + stopped.problem() if stopped.problem() else ''}\n")


def solution_notebooks() -> list[Path]:
    """Every nbgrader source notebook: solutions/<assignment>/<notebook>.ipynb."""
    return sorted(REPO.glob("solutions/*/*.ipynb"))


def notebook_id(path: Path) -> str:
    """'<assignment>/<notebook>', the id used for parametrised tests."""
    return f"{path.parent.name}/{path.stem}"


def nbgrader_cells(nb: nbformat.NotebookNode, kind: str) -> list[nbformat.NotebookNode]:
    """The cells nbgrader marks as ``kind``: "solution" or "grade" (test cells)."""
    return [cell for cell in nb.cells if cell.metadata.get("nbgrader", {}).get(kind)]


SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def solution_sources(source: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id → a solution cell's code as a student would write it (without nbgrader's markers)."""
    return {cell.metadata.nbgrader.grade_id: SOLUTION_MARKERS.sub("", cell.source)
            for cell in nbgrader_cells(source, "solution")}


def belongs_to_exercise(test_id: str, solution_id: str) -> bool:
    """Whether a test cell belongs to an exercise: it is named '<solution grade_id>_test…'."""
    return test_id.startswith(f"{solution_id}_test")


def run_nbgrader(args: list[str], course: Path) -> subprocess.CompletedProcess:
    """Run an nbgrader command in a course folder whose nbgrader_config.py is its only config."""
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(course)}
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def two_assignments(root: Path) -> Any:
    """A course of two assignments with a blank notebook each, hw (nb.ipynb) and hw2 (other.ipynb): a
    :class:`hooklab.grading.course.Course` for the tests of reading a class's input."""
    from nbformat.v4 import new_notebook

    from hooklab.grading.course import Course

    for assignment, notebook in (("hw", "nb.ipynb"), ("hw2", "other.ipynb")):
        (root / "source" / assignment).mkdir(parents=True)
        nbformat.write(new_notebook(), root / "source" / assignment / notebook)
    (root / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\n")
    return Course(root / "nbgrader_config.py")


def make_course(root: Path) -> Path:
    """A scratch copy of the course: solutions/ plus a config that includes the real one."""
    (root / "solutions").mkdir(parents=True)
    for notebook in solution_notebooks():
        target = root / "solutions" / notebook.parent.name
        target.mkdir(exist_ok=True)
        target.joinpath(notebook.name).write_bytes(notebook.read_bytes())
    root.joinpath("nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"load_subconfig({str(COURSE_CONFIG)!r})\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}\n"
        f"c.Exchange.root = {str(root / 'exchange')!r}\n"
    )
    (root / "exchange").mkdir()
    return root


@pytest.fixture(scope="module")
def released_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch course with every assignment generated (release written, gradebook filled)."""
    course = make_course(tmp_path_factory.mktemp("course"))
    run_nbgrader(["generate_assignment", "*", "--force"], course)  # every assignment, in one nbgrader process
    return course


@pytest.fixture
def forked_kernels():
    """Kernels this process starts by name are forked from hooklab's kernel server (torch and the notebooks'
    slow imports done once) and sandboxed, as when grading: a notebook's kernel is ready in a fraction of
    a second instead of importing torch again."""
    factory = KernelProvisionerFactory.instance()
    before = factory.default_provisioner_name
    if SUPPORTED:
        factory.default_provisioner_name = PROVISIONER
    try:
        yield
    finally:
        factory.default_provisioner_name = before


# The fast tier: `pytest -m "not slow"` runs, in seconds, the tests that start no kernel, JupyterLab, browser or
# grader. A module that starts them says so with ``pytestmark = pytest.mark.slow`` (a test in a fast module, with its
# own mark); nbval's items (solutions/*.ipynb) are slow. A fast test that starts one anyway fails, saying so.
# programs, and modules run with -m, that a fast test may not start
SLOW_COMMANDS = {"hooklab", "hooklab.cli", "hooklab.grading.kernels.server", "nbgrader", "jupyter", "jupyter-lab",
                 "jupyter-nbconvert", "ipykernel_launcher", "chromium", "pip", "pip3"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("slow"):
        return
    from jupyter_client.manager import KernelManager

    def refuse(what: str) -> None:
        pytest.fail(f"a test not marked slow started {what}: mark it (or its module) with pytest.mark.slow")

    async def no_kernel(*args, **kwargs):
        refuse("a kernel")

    monkeypatch.setattr(KernelManager, "_async_pre_start_kernel", no_kernel)
    popen_init = subprocess.Popen.__init__

    def checked_popen(self, args, *rest, **kwargs):
        words = [os.fsdecode(word) for word in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        if any(Path(part).name in SLOW_COMMANDS for word in words for part in word.split()):
            refuse(f"`{' '.join(words)[:120]}`")
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", checked_popen)
