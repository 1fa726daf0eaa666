"""Shared paths and helpers for the test suite."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

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


def _descendants(pid: int) -> set[tuple[int, float]]:
    """(pid, start time) of every process below ``pid`` now, from /proc (a kernel sits in a session of its own, so
    its process group is not the server's)."""
    children: dict[int, list[tuple[int, float]]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        children.setdefault(int(fields[1]), []).append((int(entry), float(fields[19])))
    found, frontier = set(), [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child[0])
    return found


def _alive(pid: int, started: float) -> bool:
    try:
        return float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]) == started
    except (OSError, IndexError, ValueError):
        return False


def stop_server(server: subprocess.Popen, grace: float = 30.0, log: Path | None = None) -> float:
    """Stop a server started with ``start_new_session=True`` and leave no process of it behind; returns the seconds it
    took. SIGTERM first (the server shuts its kernels down itself); a server still there after ``grace`` seconds gets
    SIGABRT, which makes Python print every thread's stack into its stderr (``log``) when it runs with
    PYTHONFAULTHANDLER=1, then SIGKILL, with its whole process group and every process it started. Slowness is no
    failure: a server that had to be killed is reported as a warning (with the end of ``log``)."""
    begun = time.monotonic()
    below = _descendants(server.pid)
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            server.send_signal(signal.SIGABRT)  # the threads' stacks, if faulthandler is on
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            tail = log.read_text(errors="replace")[-6000:] if log and log.exists() else ""
            warnings.warn(f"{server.args[:3]} did not stop within {grace:g} s of SIGTERM and was killed; the end of "
                          f"its log:\n{tail}", stacklevel=2)
    # what it started and left (a kernel it had no time to shut down) and what remains in its group
    below |= {process for process in _descendants(server.pid)}
    for pid, started in below:
        if _alive(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    return time.monotonic() - begun


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
