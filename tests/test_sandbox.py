"""Every grading kernel runs in a sandbox (hooklab.grading.sandbox): probes that try to escape it.

The probe kernels are started the way grading starts them, through jupyter_client with the
``hooklab-preloaded`` provisioner, working in a student's folder of a course laid out as nbgrader's.
Each attempt must fail inside the kernel with a clear error.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from traitlets.config import Config

from conftest import make_course
from hooklab.grading import kernels, sandbox
from hooklab.grading.sandbox import MiB, Sandbox, SandboxError

UNAVAILABLE = sandbox.unavailable(Sandbox()) if kernels.SUPPORTED else "needs os.fork and pidfds (Linux)"
pytestmark = pytest.mark.skipif(bool(UNAVAILABLE), reason=f"no sandbox on this machine: {UNAVAILABLE}")
ROOT = os.geteuid() == 0
USER_NAMESPACES = shutil.which("unshare") and subprocess.run(["unshare", "-r", "true"], capture_output=True).returncode == 0
needs_user_namespaces = pytest.mark.skipif(not USER_NAMESPACES, reason="`unshare -r` (a user namespace) is not possible here")


def start(cwd: Path, **settings: object) -> KernelManager:
    """A kernel started as grading starts one, with these Sandbox settings."""
    manager = KernelManager(kernel_name="python3", config=Config({"Sandbox": settings}))
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": kernels.PROVISIONER}
    manager.start_kernel(cwd=str(cwd))
    return manager


def run(manager: KernelManager, code: str, timeout: float = 30) -> str:
    """What ``code`` printed in the kernel, or "ErrorName: message" for the error it raised."""
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        out: list[str] = []
        reply = client.execute_interactive(code, timeout=timeout, output_hook=lambda msg: out.append(msg["content"].get("text", "")))
        content = reply["content"]
        return "".join(out).strip() if content["status"] == "ok" else f"{content['ename']}: {content['evalue']}"
    finally:
        client.stop_channels()


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A course as nbgrader lays it out, with alice's copy being graded and bob's submission beside it."""
    root = tmp_path_factory.mktemp("course")
    paths = {
        "solution": root / "solutions" / "ps1" / "ps1.ipynb",
        "gradebook": root / "gradebook.db",
        "bob_submitted": root / "submitted" / "bob" / "ps1" / "ps1.ipynb",
        "bob_graded": root / "autograded" / "bob" / "ps1" / "ps1.ipynb",
    }
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("SECRET")
    paths["root"] = root
    paths["cwd"] = root / "autograded" / "alice" / "ps1"
    paths["cwd"].mkdir(parents=True)
    return paths


@pytest.fixture(scope="module")
def probe(course: dict[str, Path]):
    """One sandboxed kernel for alice, with small file and /tmp limits so that the probes are fast."""
    hidden = [str(course["root"] / name) for name in ("", "solutions", "submitted", "autograded", "gradebook.db")]
    manager = start(course["cwd"], file_size=8 * MiB, disk=20 * MiB, hidden=hidden)
    yield manager
    manager.shutdown_kernel(now=True)


def test_solutions_are_not_visible(probe, course):
    assert run(probe, f"open({str(course['solution'])!r}).read()").startswith("FileNotFoundError")
    assert run(probe, f"import os; print(os.listdir({str(course['root'])!r}))") == "['autograded']"


def test_another_students_folders_cannot_be_listed_or_written(probe, course):
    for key in ("bob_submitted", "bob_graded"):
        folder = str(course[key].parent)
        assert run(probe, f"import os; os.listdir({folder!r})").startswith("FileNotFoundError")
        assert run(probe, f"open({str(course[key])!r}, 'w')").split(":")[0] in ("FileNotFoundError", "PermissionError")
    assert run(probe, f"import os; print(os.listdir({str(course['root'] / 'autograded')!r}))") == "['alice']"


def test_gradebook_cannot_be_opened_or_written(probe, course):
    gradebook = str(course["gradebook"])
    assert run(probe, f"open({gradebook!r}, 'rb')").startswith("FileNotFoundError")
    assert run(probe, f"open({gradebook!r}, 'wb')").startswith("PermissionError")
    assert course["gradebook"].read_text() == "SECRET"


def test_python_environment_and_hooklab_are_read_only(probe):
    code = textwrap.dedent("""\
        import os, sysconfig, hooklab.checks
        for path in (os.path.join(sysconfig.get_paths()["purelib"], "evil.pth"), hooklab.checks.__file__, os.__file__):
            try:
                open(path, "a")
            except OSError as error:
                print(error.strerror)
        """)
    refusals = run(probe, code).splitlines()
    assert len(refusals) == 3 and set(refusals) <= {"Read-only file system", "Permission denied"}, refusals


def test_network_is_only_the_kernels_own_loopback(probe):
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the grading host's loopback
        port = listener.getsockname()[1]
        assert run(probe, f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)").startswith("ConnectionRefusedError")
        assert not select.select([listener], [], [], 0.2)[0], "the kernel reached a port of the grading host"
    assert run(probe, "import socket; print(socket.if_nameindex())") == "[(1, 'lo')]"
    code = "import socket; s = socket.create_server(('127.0.0.1', 0)); socket.create_connection(s.getsockname()).close(); print('ok')"
    assert run(probe, code) == "ok", "the kernel's own loopback should work"


def test_a_thousand_processes_cannot_be_started(probe):
    code = textwrap.dedent("""\
        import subprocess
        children = []
        try:
            for _ in range(1000):
                children.append(subprocess.Popen(["sleep", "60"]))
        except OSError as error:
            print(error.strerror)
        finally:
            for child in children:
                child.kill()
                child.wait()
        print(len(children) < 256)
        """)
    assert run(probe, code, timeout=60).splitlines() == ["Resource temporarily unavailable", "True"]


def test_a_file_over_the_size_limit_cannot_be_written(probe):
    code = "with open('big', 'wb') as f:\n    f.write(bytes(16 * 2**20))"
    assert run(probe, code) == "OSError: [Errno 27] File too large"
    assert run(probe, "import os; print(os.path.getsize('big')); os.remove('big')") == str(8 * MiB)


def test_50_gib_cannot_be_allocated(probe):
    assert run(probe, "x = bytearray(50 * 2**30)") == "MemoryError: "


def test_tmp_is_private_and_cannot_be_filled(probe):
    marker = Path("/tmp") / f"hooklab-marker-{os.getpid()}"
    marker.write_text("host")
    try:
        assert run(probe, f"import os; print(os.path.exists({str(marker)!r}))") == "False"
    finally:
        marker.unlink()

@pytest.mark.skipif(not ROOT, reason="a kernel in a user namespace owns its socket folder")
def test_a_kernel_cannot_write_in_its_socket_folder(probe):
    """The socket folder is on the grading host's disk: once the kernel's sockets are bound it is the grader's
    again, and the kernel can neither make a file there nor write into the connection file."""
    folder = os.path.dirname(probe.connection_file)
    code = textwrap.dedent(f"""\
        for path in ({os.path.join(folder, "new")!r}, {probe.connection_file!r}):
            try:
                open(path, "a").write("x")
            except OSError as error:
                print(error.strerror)
        """)
    assert run(probe, code).splitlines() == ["Permission denied", "Permission denied"]
    assert os.listdir(folder) and "new" not in os.listdir(folder)


def test_working_folder_tmp_and_shm_share_one_disk_limit(probe):
    """Files of 7 MiB, each under the file size limit: the third fills the kernel's 20 MiB, wherever it is."""
    code = textwrap.dedent("""\
        for path in ("work", "/tmp/work", "/dev/shm/work"):
            try:
                with open(path, "wb") as f:
                    f.write(bytes(7 * 2**20))
            except OSError as error:
                print(path, error.strerror)
        import os
        for path in ("work", "/tmp/work", "/dev/shm/work"):
            os.remove(path)
        """)
    assert run(probe, code) == "/dev/shm/work No space left on device"


def test_kernel_runs_unprivileged_and_alone(probe):
    code = textwrap.dedent("""\
        import os
        status = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines())
        processes = sorted(int(pid) for pid in os.listdir("/proc") if pid.isdigit())
        print(processes, os.getuid() != 0, status["CapEff"], status["CapBnd"], status["NoNewPrivs"])
        """)
    # its namespace's init (1) and itself: no process of the grader or of another kernel
    assert run(probe, code) == "[1, 2] True 0000000000000000 0000000000000000 1"
    assert run(probe, "import os; os.setuid(0)").startswith("PermissionError")


def test_kernel_holds_no_open_file_of_the_grader(probe):
    """Not even the grading log: its stdout and stderr are a pipe that its supervisor copies from."""
    code = textwrap.dedent("""\
        import os
        links = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                links.add(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass  # the listing's own fd
        print(sorted(link for link in links if link.startswith("/") and not link.startswith(("/dev/", "/tmp/"))))
        """)
    assert run(probe, code) == "[]"


def test_kernel_is_stopped_at_the_wall_clock(tmp_path):
    manager = start(tmp_path, wall_clock=2)
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=30)
        client.execute("import time; time.sleep(60)")
        assert manager.provisioner.process.wait(timeout=20) == -signal.SIGKILL
        client.stop_channels()
        assert sandbox.ending(str(tmp_path)) == "stopped at the wall-clock limit (2 s)"
    finally:
        manager.shutdown_kernel(now=True)


@pytest.mark.parametrize("code, returncode, words", [
    ("import os; os._exit(7)", 7, "exited with status 7"),
    ("import ctypes; ctypes.string_at(0)", -signal.SIGSEGV, "killed by SIGSEGV"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM, "killed by SIGTERM"),
])
def test_exit_status_is_the_kernels(tmp_path, code, returncode, words):
    manager = start(tmp_path)
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=30)
        client.execute(code)
        got = manager.provisioner.process.wait(timeout=20)
        client.stop_channels()
        if got == -1:
            pytest.skip("this Linux cannot report exit status through a pidfd (PIDFD_INFO_EXIT, Linux 6.15)")
        assert (got, sandbox.ending(str(tmp_path))) == (returncode, words)
    finally:
        manager.shutdown_kernel(now=True)


def test_working_folder_that_would_show_the_course_is_refused(course):
    with pytest.raises(SandboxError, match="would see"):
        start(course["root"], hidden=[str(course["solution"])])


def test_working_folder_that_holds_the_kernels_sockets_is_refused():
    """/tmp itself (where every kernel's socket folder is made) would show every other kernel's sockets."""
    with pytest.raises(SandboxError, match="would see other kernels' sockets"):
        start(Path(tempfile.gettempdir()))


def test_kernel_that_cannot_be_forked_is_executed_in_the_sandbox(course, tmp_path):
    manager = KernelManager(kernel_name="python3")
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": kernels.PROVISIONER}
    manager.kernel_spec.argv = [sys.executable, "-m", "ipykernel", "-f", "{connection_file}"]
    manager.start_kernel(cwd=str(tmp_path))
    try:
        code = f"import os, sys; print('torch' in sys.modules, os.getuid() != 0, os.path.exists({str(course['solution'])!r}))"
        assert run(manager, code) == f"False {ROOT} False"
    finally:
        manager.shutdown_kernel(now=True)


FRESH_PROBE = textwrap.dedent("""\
    import json, os, random, sys, numpy, torch
    print(json.dumps({
        "cwd": os.getcwd(), "path": sys.path, "argv0": sys.argv[0], "threads": torch.get_num_threads(),
        "env": {name: os.environ.get(name) for name in ("PATH", "HOME", "LANG", "OMP_NUM_THREADS", "PYTHONHASHSEED", "JPY_PARENT_PID")},
        "draws": [random.getrandbits(64), int(numpy.random.randint(2**62)), torch.initial_seed(), int(torch.randint(2**62, ()))],
    }))
    """)


def test_forked_kernel_looks_like_a_fresh_one(tmp_path):
    env = Sandbox().kernel_environment({"PYTHONHASHSEED": "7"})  # a fresh kernel started with a fork's environment
    fresh = KernelManager(kernel_name="python3")  # jupyter_client's own provisioner: a new process
    fresh.start_kernel(cwd=str(tmp_path), env=env)
    forks = []
    try:
        for _ in range(2):
            forks.append(KernelManager(kernel_name="python3"))
            forks[-1].kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": kernels.PROVISIONER}
            forks[-1].start_kernel(cwd=str(tmp_path), env=env)
        printed = [json.loads(run(manager, FRESH_PROBE)) for manager in (fresh, *forks)]
    finally:
        for manager in (fresh, *forks):
            manager.shutdown_kernel(now=True)
    draws = [tuple(seen.pop("draws")) for seen in printed]
    for seen in printed:  # ipykernel watches the process it names, unless it is 1 (the supervisor ties a fork to the grader)
        assert seen["env"].pop("JPY_PARENT_PID") == ("1" if seen is not printed[0] else str(os.getpid()))
    assert printed[1] == printed[0] and printed[2] == printed[0]
    assert printed[0]["threads"] == 1 and printed[0]["cwd"] == str(tmp_path) and printed[0]["env"]["PYTHONHASHSEED"] == "7"
    assert all(len(set(source)) == 3 for source in zip(*draws)), f"kernels drew the same 'random' numbers: {draws}"


SET_IN_A_KERNEL = {  # by the kernel itself: ipykernel's shell, and imports (torch, its compiler, debugpy)
    "TERM", "CLICOLOR", "CLICOLOR_FORCE", "PAGER", "GIT_PAGER", "FORCE_COLOR",
    "KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK", "TORCHINDUCTOR_CACHE_DIR", "PYDEVD_USE_FRAME_EVAL",
}
ENVIRONMENT_PROBE = textwrap.dedent("""\
    import os
    print(sorted(os.environ))
    print(b"s3cr3t" in open("/proc/self/environ", "rb").read())
    """)


def test_kernels_never_see_the_graders_environment(tmp_path):
    """A token in the instructor's shell reaches neither a kernel's os.environ nor /proc/self/environ, which
    shows the environment block of the server the kernel is a fork of (started here, with the token set)."""
    script = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_sandbox import start, run
        manager = start(sys.argv[1])
        try:
            print(run(manager, sys.argv[2]))
        finally:
            manager.shutdown_kernel(now=True)
        """)
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": "s3cr3t", "PIP_INDEX_URL": "https://user:s3cr3t@example.invalid/simple"}
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path), ENVIRONMENT_PROBE], env=env, capture_output=True, text=True, timeout=120)
    names, leaked = result.stdout.splitlines()
    fixed = {*sandbox.environment(), *Sandbox().thread_environment(), *sandbox.KERNEL_VARIABLES}
    assert {"PATH", "HOME", "LANG"} <= set(eval(names)), (names, result.stderr[-2000:])
    assert set(eval(names)) <= fixed | SET_IN_A_KERNEL, names
    assert leaked == "False"


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


OWNER = textwrap.dedent("""\
    import sys, time
    from jupyter_client import KernelManager
    from hooklab.grading import kernels
    manager = KernelManager(kernel_name="python3")
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": kernels.PROVISIONER}
    manager.start_kernel(cwd=sys.argv[1])
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=30)
    # a child, and a grandchild in a session of its own whose parent has exited
    client.execute_interactive("import subprocess; subprocess.Popen(['sleep', '300']); "
                               "subprocess.run(['sh', '-c', 'setsid sleep 300 & exit 0'])", timeout=30, output_hook=lambda msg: None)
    print("ready", flush=True)
    time.sleep(300)
    """)


def test_killed_owner_leaves_no_process_behind(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # the grandchild's parent has exited
        run_processes = {pid: os.pidfd_open(pid) for pid in _descendants(owner.pid) if Path(f"/proc/{pid}").exists()}
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] for pid in run_processes]
        assert commands.count(b"sleep") == 2 and len(run_processes) >= 5, commands  # server, supervisor, kernel, sleeps
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 10
    alive = dict(run_processes)
    while alive and time.monotonic() < deadline:
        for pid in [pid for pid, fd in alive.items() if select.select([fd], [], [], 0)[0]]:
            os.close(alive.pop(pid))
        time.sleep(0.05)
    assert not alive, f"processes of the run left behind: {sorted(alive)}"


@needs_user_namespaces
def test_sandbox_in_a_user_namespace_when_not_root(course, tmp_path):
    """Run as a root that has only itself mapped (as a non-root grader would be): the kernel gets a user
    namespace of its own instead of a uid, and the same view."""
    script = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_sandbox import start, run
        manager = start(sys.argv[1])
        try:
            print(run(manager, "import os; print(open('/proc/self/uid_map').read().split(), os.path.exists({str(course['solution'])!r})); "
                               "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0]); open('x', 'w').write('x')"))
        finally:
            manager.shutdown_kernel(now=True)
        """)
    result = subprocess.run(["unshare", "-r", sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.stdout.splitlines() == ["['0', '0', '1'] False", "0000000000000000"], result.stderr[-2000:]
    assert not (tmp_path / "x").exists(), "the kernel wrote into the folder it was asked to work in, not into its copy"


@needs_user_namespaces
def test_grader_refuses_to_start_without_a_sandbox_unless_told(tmp_path):
    """Where namespaces cannot be made (here: a user namespace that may create none), `hooklab autograde`
    stops and says why; with --no-sandbox it grades and the summary says so."""
    course = make_course(tmp_path / "course")
    (tmp_path / "inbox").mkdir()
    grade = [sys.executable, "-m", "hooklab.cli", "autograde", "--config", str(course / "nbgrader_config.py"), str(tmp_path / "inbox")]
    no_namespaces = ["unshare", "-r", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "-"]
    refused = subprocess.run([*no_namespaces, *grade], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "cannot be started in a sandbox" in refused.stderr and "--no-sandbox" in refused.stderr
    graded = subprocess.run([*no_namespaces, *grade, "--no-sandbox"], capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stderr[-2000:]
    assert "Graded WITHOUT a sandbox" in graded.stdout


def _cgroup_with_memory() -> Path | None:
    """A cgroup v2 hierarchy whose root lets children have the memory controller, or None."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            root = Path(fields[4])
            if "memory" in (root / "cgroup.subtree_control").read_text().split():
                return root
    return None


CGROUP = _cgroup_with_memory() if ROOT else None


@pytest.mark.skipif(CGROUP is None, reason="no cgroup v2 hierarchy with the memory controller here "
                    "(this machine's cgroups are v1): memory is limited by RLIMIT_AS")
def test_memory_max_of_a_cgroup_stops_a_kernel(tmp_path):
    parent = CGROUP / f"hooklab-test-{os.getpid()}"
    parent.mkdir()
    try:
        (parent / "cgroup.subtree_control").write_text("+memory")
        manager = start(tmp_path, cgroup=str(parent), memory=256 * MiB)
        try:
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=30)
            client.execute("x = b'x' * 2**30")
            assert manager.provisioner.process.wait(timeout=30) == -signal.SIGKILL
            client.stop_channels()
        finally:
            manager.shutdown_kernel(now=True)
    finally:
        parent.rmdir()
