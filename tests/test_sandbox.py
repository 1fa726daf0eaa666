"""Every grading kernel runs in a sandbox (hooklab.grading.kernels.sandbox): probes that try to escape it.

The probe kernels are started the way grading starts them, through jupyter_client with the
``hooklab-preloaded`` provisioner, working in a student's folder of a course laid out as nbgrader's.
Each attempt must fail inside the kernel with a clear error.

Which README promise each test guards: tests/README.md.
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

from catalogues import corpus
from conftest import make_course
from hooklab import observations
from hooklab.grading.kernels import handle, sandbox
from hooklab.grading.kernels.provisioner import PROVISIONER
from hooklab.grading.kernels.sandbox import GiB, MiB, Sandbox, SandboxError
from hooklab.grading.kernels.server import SUPPORTED
from hooklab.grading.kernels.supervise import unavailable

UNAVAILABLE = unavailable(Sandbox()) if SUPPORTED else "needs os.fork and pidfds (Linux)"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(UNAVAILABLE), reason=f"no sandbox on this machine: {UNAVAILABLE}")]
ROOT = os.geteuid() == 0
USER_NAMESPACES = (shutil.which("unshare")
                   and subprocess.run(["unshare", "-r", "true"], capture_output=True).returncode == 0)
needs_user_namespaces = pytest.mark.skipif(not USER_NAMESPACES,
                                           reason="`unshare -r` (a user namespace) is not possible here")


def _exit_status_through_pidfds() -> bool:
    """Whether this Linux tells a process's exit status through a pidfd (PIDFD_INFO_EXIT, Linux 6.15), as
    :class:`handle.Kernel` asks for it: a child that exits with 3, asked once it is reaped."""
    if UNAVAILABLE:
        return False
    child = os.fork()
    if child == 0:
        os._exit(3)
    pidfd = os.pidfd_open(child)
    try:
        os.waitpid(child, 0)
        return handle._exit_code(pidfd) == 3
    finally:
        os.close(pidfd)


# How a kernel ended (its exit code, or the signal that killed it) is known only where Linux tells it
# through a pidfd; elsewhere every test that reads it is skipped, and says why.
needs_exit_status = pytest.mark.skipif(not _exit_status_through_pidfds(),
                                       reason="this Linux cannot report a process's exit "
                                       "status through a pidfd (PIDFD_INFO_EXIT, Linux 6.15): a kernel's ending is "
                                       "unknown")


def start(cwd: Path, **settings: object) -> KernelManager:
    """A kernel started as grading starts one, with these Sandbox settings."""
    manager = KernelManager(kernel_name="python3", config=Config({"Sandbox": settings}))
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    manager.start_kernel(cwd=str(cwd))
    return manager


def run(manager: KernelManager, code: str, timeout: float = 30) -> str:
    """What ``code`` printed in the kernel, or "ErrorName: message" for the error it raised."""
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        out: list[str] = []
        reply = client.execute_interactive(code, timeout=timeout,
                                           output_hook=lambda msg: out.append(msg["content"].get("text", "")))
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


# Read-only is a property of the mount, not of who owns the files (as root a kernel runs under a uid of its own,
# which root's files refuse anyway; in a user namespace the kernel is their owner): the mount's ST_RDONLY flag,
# and EROFS for a write that the kernel's rights alone would allow or refuse with another error. Each write
# leaves nothing behind should it succeed: a new file is removed, a file's times are set to what they were.
READ_ONLY_PROBE = textwrap.dedent("""\
    import json, os, secrets, sysconfig, hooklab.checks

    def new_file(folder):
        path = os.path.join(folder, f"written-by-a-kernel-{secrets.token_hex(8)}")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.remove(path)

    def same_times(path):
        seen = os.stat(path)
        os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns))

    seen = {}
    for name, path, write in (("site-packages", sysconfig.get_paths()["purelib"], new_file),
                              ("hooklab", os.path.dirname(hooklab.checks.__file__), new_file),
                              ("hooklab/checks.py", hooklab.checks.__file__, same_times),
                              ("/usr", "/usr", new_file)):
        try:
            write(path)
            refused = "written"
        except OSError as error:
            refused = error.strerror
        seen[name] = [bool(os.statvfs(path).f_flag & os.ST_RDONLY), refused]
    print(json.dumps(seen))
    """)
READ_ONLY = dict.fromkeys(["site-packages", "hooklab", "hooklab/checks.py", "/usr"], [True, "Read-only file system"])


@pytest.mark.parametrize("mode", ["graded here", pytest.param("user namespace", marks=needs_user_namespaces)])
def test_system_python_environment_and_hooklab_are_mounted_read_only(mode, request):
    """In the mode of this test process (a uid of its own as root), and in a user namespace (a grader that is
    not root), where the kernel owns what it sees."""
    if mode == "user namespace":
        seen = request.getfixturevalue("in_a_user_namespace")["read only"]
    else:
        seen = run(request.getfixturevalue("probe"), READ_ONLY_PROBE)
    assert json.loads(seen) == READ_ONLY, seen


def test_network_is_only_the_kernels_own_loopback(probe):
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the grading host's loopback
        port = listener.getsockname()[1]
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        assert run(probe, connect).startswith("ConnectionRefusedError")
        assert not select.select([listener], [], [], 0.2)[0], "the kernel reached a port of the grading host"
    assert run(probe, "import socket; print(socket.if_nameindex())") == "[(1, 'lo')]"
    code = ("import socket; s = socket.create_server(('127.0.0.1', 0)); "
            "socket.create_connection(s.getsockname()).close(); print('ok')")
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


# 6 GiB asked for at once: bytes(n) comes from calloc, fresh pages that are never touched, so the allocation
# costs no memory of the machine (checked: the kernel's resident memory does not grow by it). Not bytearray(n),
# which writes its zeros and would take 6 GiB of this machine's memory.
ALLOCATE_6_GIB = textwrap.dedent("""\
    import resource
    resident = lambda: int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
    before = resident()
    try:
        x = bytes(6 * 2**30)
    except MemoryError:
        print(resource.getrlimit(resource.RLIMIT_AS)[0], "MemoryError")
    else:
        touched = "untouched" if resident() - before < 2**30 else "touched"
        print(resource.getrlimit(resource.RLIMIT_AS)[0], len(x), touched)
        del x
    """)


@pytest.mark.parametrize("memory, outcome", [(3 * GiB, "MemoryError"), (16 * GiB, f"{6 * GiB} untouched")],
                         ids=["3 GiB", "16 GiB"])
def test_a_kernel_gets_6_gib_only_within_its_memory_limit(tmp_path, memory, outcome):
    """A kernel limited to 3 GiB cannot allocate 6 GiB; its twin limited to 16 GiB gets them (torch and ipykernel
    alone take ~650 MB of address space, far under either)."""
    manager = start(tmp_path, memory=memory)
    try:
        assert run(manager, ALLOCATE_6_GIB) == f"{memory} {outcome}"
    finally:
        manager.shutdown_kernel(now=True)


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


@needs_exit_status
def test_kernel_is_stopped_at_the_wall_clock(tmp_path):
    manager = start(tmp_path, wall_clock=2)
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=30)
        client.execute("import time; time.sleep(60)")
        assert manager.provisioner.process.wait(timeout=20) == -signal.SIGKILL
        client.stop_channels()
        assert handle.ending(str(tmp_path)) == "stopped at the wall-clock limit (2 s)"
    finally:
        manager.shutdown_kernel(now=True)


@needs_exit_status
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
        assert (got, handle.ending(str(tmp_path))) == (returncode, words)
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
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    manager.kernel_spec.argv = [sys.executable, "-m", "ipykernel", "-f", "{connection_file}"]
    manager.start_kernel(cwd=str(tmp_path))
    try:
        code = ("import os, sys; print('torch' in sys.modules, os.getuid() != 0, "
                f"os.path.exists({str(course['solution'])!r}))")
        assert run(manager, code) == f"False {ROOT} False"
    finally:
        manager.shutdown_kernel(now=True)


FRESH_PROBE = textwrap.dedent("""\
    import json, os, random, sys, numpy, torch
    print(json.dumps({
        "cwd": os.getcwd(), "path": sys.path, "argv0": sys.argv[0], "threads": torch.get_num_threads(),
        "env": {name: os.environ.get(name)
                for name in ("PATH", "HOME", "LANG", "OMP_NUM_THREADS", "PYTHONHASHSEED", "JPY_PARENT_PID")},
        "draws": [random.getrandbits(64), int(numpy.random.randint(2**62)), torch.initial_seed(),
                  int(torch.randint(2**62, ()))],
    }))
    """)


def test_forked_kernel_looks_like_a_fresh_one(tmp_path):
    env = Sandbox().kernel_environment({"PYTHONHASHSEED": "7"})  # a fresh kernel started with a fork's environment
    fresh = KernelManager(kernel_name="python3")  # jupyter_client's own provisioner: a new process
    fresh.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": "local-provisioner"}  # whatever the default
    fresh.start_kernel(cwd=str(tmp_path), env=env)
    forks = []
    try:
        for _ in range(2):
            forks.append(KernelManager(kernel_name="python3"))
            forks[-1].kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
            forks[-1].start_kernel(cwd=str(tmp_path), env=env)
        printed = [json.loads(run(manager, FRESH_PROBE)) for manager in (fresh, *forks)]
    finally:
        for manager in (fresh, *forks):
            manager.shutdown_kernel(now=True)
    draws = [tuple(seen.pop("draws")) for seen in printed]
    # ipykernel watches the process it names, unless it is 1 (the supervisor ties a fork to the grader)
    for seen in printed:
        assert seen["env"].pop("JPY_PARENT_PID") == ("1" if seen is not printed[0] else str(os.getpid()))
    assert printed[1] == printed[0] and printed[2] == printed[0]
    assert (printed[0]["threads"] == 1 and printed[0]["cwd"] == str(tmp_path)
            and printed[0]["env"]["PYTHONHASHSEED"] == "7")
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
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": "s3cr3t",
           "PIP_INDEX_URL": "https://user:s3cr3t@example.invalid/simple"}
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path), ENVIRONMENT_PROBE], env=env,
                            capture_output=True, text=True, timeout=120)
    names, leaked = result.stdout.splitlines()
    # and the number of its observation channel's fd, which the server gives it (hooklab.observations.CHANNEL)
    fixed = {*sandbox.environment(""), *Sandbox().thread_environment(), *sandbox.KERNEL_VARIABLES, observations.CHANNEL}
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
    from hooklab.grading.kernels.provisioner import PROVISIONER
    manager = KernelManager(kernel_name="python3")
    manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER}
    manager.start_kernel(cwd=sys.argv[1])
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=30)
    # a child, and a grandchild in a session of its own whose parent has exited
    client.execute_interactive("import subprocess; subprocess.Popen(['sleep', '300']); "
                               "subprocess.run(['sh', '-c', 'setsid sleep 300 & exit 0'])",
                               timeout=30, output_hook=lambda msg: None)
    print("ready", flush=True)
    time.sleep(300)
    """)


def test_killed_owner_leaves_no_process_behind(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        # the grandchild's parent has exited: until it is adopted in the kernel's namespace
        deadline = time.monotonic() + 10
        while True:
            run_processes = {pid: os.pidfd_open(pid) for pid in _descendants(owner.pid)
                             if Path(f"/proc/{pid}").exists()}
            commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] for pid in run_processes]
            if commands.count(b"sleep") == 2 or time.monotonic() > deadline:
                break
            for fd in run_processes.values():
                os.close(fd)
            time.sleep(0.05)
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


IN_A_USER_NAMESPACE = textwrap.dedent(f"""\
    import json, sys
    sys.path.insert(0, {str(Path(__file__).parent)!r})
    from test_sandbox import start, run
    manager = start(sys.argv[1])
    try:
        print(json.dumps({{name: run(manager, code) for name, code in json.loads(sys.argv[2]).items()}}))
    finally:
        manager.shutdown_kernel(now=True)
    """)


@pytest.fixture(scope="module")
def in_a_user_namespace(course: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What probes printed in one kernel started by a root that has only itself mapped (as a non-root grader
    would be): the kernel gets a user namespace of its own instead of a uid. Also "folder": the folder it
    was asked to work in."""
    folder = tmp_path_factory.mktemp("user-namespace")
    probes = {
        "identity": "import os; print(open('/proc/self/uid_map').read().split(), "
                    f"os.path.exists({str(course['solution'])!r})); "
                    "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0]); open('x', 'w').write('x')",
        "read only": READ_ONLY_PROBE,
    }
    result = subprocess.run(["unshare", "-r", sys.executable, "-c", IN_A_USER_NAMESPACE, str(folder),
                             json.dumps(probes)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return {**json.loads(result.stdout.splitlines()[-1]), "folder": folder}


@needs_user_namespaces
def test_sandbox_in_a_user_namespace_when_not_root(in_a_user_namespace):
    """The kernel's user namespace maps only its own root, with no capabilities, and it sees the same view."""
    assert in_a_user_namespace["identity"].splitlines() == ["['0', '0', '1'] False", "0000000000000000"]
    assert not (in_a_user_namespace["folder"] / "x").exists(), ("the kernel wrote into the folder it was asked to work "
                                                                "in, not into its copy")


# Printed by a cell of a graded submission: the limits its kernel runs under, as the kernel sees them; the wall
# clock, which the kernel's supervisor (outside its namespaces) enforces, from the settings the supervisor
# was forked with: the kernel, a fork of its supervisor, holds the same `confine.KernelStart` (one: the kernel
# server makes one in each supervisor it forks, never in itself).
LIMITS_SEEN = textwrap.dedent("""\
    import gc, json, os, resource, torch

    starts = [thing for thing in gc.get_objects() if type(thing).__name__ == "KernelStart"]
    tmp = os.statvfs("/tmp")
    print("LIMITS", json.dumps({
        "memory": resource.getrlimit(resource.RLIMIT_AS), "file_size": resource.getrlimit(resource.RLIMIT_FSIZE),
        "processes": resource.getrlimit(resource.RLIMIT_NPROC), "threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "disk": tmp.f_blocks * tmp.f_frsize,
        "wall_clock": [start.sandbox.wall_clock for start in starts],
    }))
    """)


def test_the_commands_limit_flags_reach_the_graded_kernel(tmp_path):
    """`hooklab autograde --memory 3G --file-size 5M --wall-clock 77 --processes 99 --threads 2 --disk 32M`: each
    value, none of them a default, is what a kernel grading a submission runs under."""
    course = make_course(tmp_path / "course")
    assignment, name = corpus.ASSIGNMENT, corpus.notebook_name(corpus.ASSIGNMENT)
    answers = corpus.solutions(assignment)
    submission = corpus.Case("limits", assignment, {name: corpus.notebook(assignment, answers, extra=[LIMITS_SEEN])},
                             corpus.scores(assignment))
    flags = ["--memory", "3G", "--file-size", "5M", "--wall-clock", "77", "--processes", "99", "--threads", "2",
             "--disk", "32M"]
    result = subprocess.run([sys.executable, "-m", "hooklab.cli", "autograde", *flags, "--config",
                             str(course / "nbgrader_config.py"),
                             str(corpus.write(tmp_path / "submissions", [submission]))], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    graded = json.loads((course / "autograder" / "autograded" / "limits" / assignment / name).read_text())
    printed = [line for cell in graded["cells"] for output in cell.get("outputs", []) if output.get("name") == "stdout"
               for line in "".join(output["text"]).splitlines() if line.startswith("LIMITS ")]
    assert len(printed) == 1, printed
    assert json.loads(printed[0].removeprefix("LIMITS ")) == {
        "memory": [3 * GiB, 3 * GiB], "file_size": [5 * MiB, 5 * MiB], "processes": [99, 99], "threads": 2,
        "OMP_NUM_THREADS": "2", "disk": 32 * MiB, "wall_clock": [77],
    }


@needs_user_namespaces
def test_grader_refuses_to_start_without_a_sandbox_unless_told(tmp_path):
    """Where namespaces cannot be made (here: a user namespace that may create none), `hooklab autograde`
    stops and says why; with --no-sandbox it grades and the summary says so."""
    course = make_course(tmp_path / "course")
    (tmp_path / "inbox").mkdir()
    grade = [sys.executable, "-m", "hooklab.cli", "autograde", "--config", str(course / "nbgrader_config.py"),
             str(tmp_path / "inbox")]
    no_namespaces = ["unshare", "-r", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "-"]
    refused = subprocess.run([*no_namespaces, *grade], capture_output=True, text=True, timeout=120)
    assert (refused.returncode == 2 and "cannot be started in a sandbox" in refused.stderr
            and "--no-sandbox" in refused.stderr)
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
@needs_exit_status
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
