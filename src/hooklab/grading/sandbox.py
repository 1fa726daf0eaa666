"""The life of a grading kernel: started in a sandbox, held to limits, watched until it ends.

:func:`spawn` forks a *supervisor*, which starts a new PID namespace, in which the *kernel* runs. The kernel
confines itself before it runs anything of the student's: a mount namespace in which it sees the system
and the Python environment (hooklab included) read-only, its socket folder writable, and one private
tmpfs of ``disk`` bytes holding its ``/tmp``, ``/dev/shm`` and its working folder: a copy of the regular
files of the folder it was asked to work in (links and other files are left out), made from a read-only
view of that folder and moved into the working folder only at the kernel's first request, so that nothing
of the submission is importable while ipykernel starts. It sees nothing else (not the course, its gradebook, other
students or any home folder), and nothing it writes reaches a folder the grader reads. Further: a
network namespace with only its own loopback; an unprivileged identity (a uid of its own when the grader
is root, a user namespace otherwise; no capabilities, ``no_new_privs``); rlimits; and a fixed environment
(:func:`environment`), never the grader's. The supervisor kills it at the wall clock and ends as it
ended; each process dies with its parent, and the end of the kernel's PID namespace ends every process
it started. :class:`Kernel` is the grader's handle on a supervisor, through a pidfd.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import fcntl
import os
import platform
import resource
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from traitlets import Bool, Float, Int, List, Unicode
from traitlets.config import Configurable

GiB, MiB = 2**30, 2**20


def amount(size: int) -> str:
    """A number of bytes as people read it: 512 KiB, 8 MiB, 40.3 MiB."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale:
            return f"{size // scale} {unit}" if size % scale == 0 else f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SANDBOX_HOME = "/tmp"  # the kernel's HOME: writable, private, emptied with the kernel
# What a kernel takes from the environment jupyter_client asks for (the grader's, with the kernel spec's and
# jupyter_client's own): the rest of its environment is fixed (environment()).
KERNEL_VARIABLES = ("JPY_PARENT_PID", "PYTHONHASHSEED", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION",
                    "NBGRADER_EXECUTION")
# in a kernel's private tmpfs: its working copy and /dev/shm, and a read-only view of its folder
PRIVATE = "/tmp/.hooklab"
FILES = f"{PRIVATE}/files"  # the folder the kernel was asked to work in, read-only: its working copy is made from it
STAGED = f"{PRIVATE}/staged"  # its copy, until the kernel's first request moves it into the working folder
WORK = f"{PRIVATE}/work"  # the working folder, also mounted where the kernel was asked to work


class Sandbox(Configurable):
    """Isolation and limits of every grading kernel: ``c.Sandbox.<name>`` in the course configuration.
    Size limits of 0 mean none."""

    isolate = Bool(True, help="namespaces and an unprivileged identity for each kernel (False: "
                              "--no-sandbox)").tag(config=True)
    memory = Int(4 * GiB, help="bytes of address space of a kernel (RLIMIT_AS; memory.max with a "
                               "cgroup)").tag(config=True)
    wall_clock = Float(600.0, help="seconds a kernel may live (one notebook of a submission)").tag(config=True)
    processes = Int(256, help="processes and threads of a sandboxed kernel (RLIMIT_NPROC of its uid)").tag(config=True)
    file_size = Int(1 * GiB, help="largest file a kernel may write (RLIMIT_FSIZE)").tag(config=True)
    open_files = Int(1024, help="open files of a kernel (RLIMIT_NOFILE)").tag(config=True)
    disk = Int(256 * MiB, help="bytes a sandboxed kernel may write in all: its working copy, /tmp and /dev/shm share "
               "one private tmpfs of this size (without root, a kernel in a user namespace may also write files, each "
               "within file_size, in its socket folder)").tag(config=True)
    submission_size = Int(64 * MiB, help="most bytes of one submission's files: a larger one is refused before it is "
                          "copied (and, in a zip, before it is extracted)").tag(config=True)
    submission_files = Int(1000, help="most files in one submission: more are refused the same way").tag(config=True)
    input_size = Int(4 * GiB, help="most bytes extracted from a class's zip: its members past it are not "
                                   "extracted").tag(config=True)
    notebook_size = Int(8 * MiB, help="largest submitted notebook file: a larger one is refused before it is "
                                      "read").tag(config=True)
    source_size = Int(512 * 1024, help="most text in a submitted notebook's cells: more is refused before it "
                                       "runs").tag(config=True)
    output_size = Int(1 * MiB, help="largest output of a cell kept from a kernel: a larger one is cut, with a "
                                    "note").tag(config=True)
    outputs_size = Int(8 * MiB, help="most output kept from one notebook's kernel: later outputs are dropped, with a "
                                     "note").tag(config=True)
    threads = Int(1, help="CPU threads of torch, OpenMP and BLAS in a kernel; 0 keeps their defaults").tag(config=True)
    uid_base = Int(1_900_000_000, help="as root, a kernel runs as uid_base + its supervisor's pid").tag(config=True)
    hidden = List(Unicode(), help="paths no kernel may see: a kernel whose folders would show one is "
                                  "refused").tag(config=True)
    cgroup = Unicode("", help="a cgroup v2 folder with the memory controller enabled for its children: "
                     "each kernel then gets a child with memory.max instead of RLIMIT_AS").tag(config=True)

    def settings(self) -> dict[str, object]:
        """The configured values, to rebuild this sandbox in another process."""
        return {name: getattr(self, name) for name in self.trait_names(config=True)}

    def thread_environment(self) -> dict[str, str]:
        """Environment variables that hold the native thread pools to ``threads``."""
        return dict.fromkeys(THREAD_VARIABLES, str(self.threads)) if self.threads else {}

    def kernel_environment(self, requested: dict[str, str]) -> dict[str, str]:
        """The environment of a kernel jupyter_client asks for with ``requested``: the fixed one, its thread
        counts, and of ``requested`` only :data:`KERNEL_VARIABLES`."""
        taken = {name: requested[name] for name in KERNEL_VARIABLES if name in requested}
        # a sandboxed kernel's HOME is its private /tmp; without a sandbox the shared /tmp would let anyone on
        # the machine plant IPython start-up files there, so it keeps the grader's
        home = SANDBOX_HOME if self.isolate else requested.get("HOME", os.path.expanduser("~"))
        return {**environment(home), **self.thread_environment(), **taken}


def environment(home: str) -> dict[str, str]:
    """The fixed environment of grading kernels and of the server they are forked from (whose environment
    block a fork shows in /proc/self/environ), with ``home`` as HOME: what Python, torch and ipykernel need,
    never the rest of the grader's (a token in the instructor's shell would be one ``print`` away from a
    student's feedback)."""
    return {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": home,
        "LANG": "C.UTF-8",
    }


class SandboxError(RuntimeError):
    """A kernel could not be started in its sandbox (the message says which step failed and why)."""


# ---- the kernel's own primitives, through libc ----

_libc = ctypes.CDLL(None, use_errno=True)
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126}, "aarch64": {"pivot_root": 41, "capset": 91}}
_SYS_MOUNT_SETATTR = 442  # the same on every architecture
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x8000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, AT_RECURSIVE, AT_FDCWD, MNT_DETACH = 1, 2, 4, 0x8000, -100, 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL, CAPABILITY_VERSION_3 = 4, 0x20080522
SIOCSIFFLAGS, IFF_UP = 0x8914, 1
PIDFD_GET_INFO, PIDFD_INFO_EXIT = (3 << 30) | (64 << 16) | (0xFF << 8) | 11, 1 << 3  # Linux 6.15


def _check(result: int, what: str) -> None:
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _syscall(name: str, *args: object) -> None:
    _check(_libc.syscall(_SYSCALLS[platform.machine()][name], *args), name)


def _unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def _set_mount_attributes(path: str, attributes: int, flags: int = AT_RECURSIVE) -> None:
    attr = (ctypes.c_uint64 * 4)(attributes, 0, 0, 0)  # struct mount_attr: set, clear, propagation, userns
    _check(_libc.syscall(_SYS_MOUNT_SETATTR, AT_FDCWD, os.fsencode(path), flags, attr, ctypes.sizeof(attr)),
           f"mount_setattr {path}")


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), "prctl")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


# ---- starting a kernel (in the kernel server) ----
#
# server ─fork→ supervisor ─fork→ init ─fork→ kernel. The supervisor stays outside: it enforces the wall
# clock and ends as the kernel ended. The init is the first process of the kernel's PID namespace: it
# reaps orphans, passes interrupts on and hands the kernel's wait status to the supervisor; when it
# ends, the namespace ends with every process in it. The kernel itself is an ordinary process (not a
# namespace's PID 1, which would ignore the signals it sends itself). Each dies with its parent.


LOG_LIMIT = 1 * MiB  # of a kernel's own stdout and stderr copied into the grading log


@dataclass
class _Start:
    """What the processes of one kernel's start share; the fds are write ends, held by whoever writes."""

    sandbox: Sandbox
    cwd: str
    sockets: str
    target: Callable[[], object]
    report: int  # "ok", or why the kernel could not be confined
    files_later: bool = False  # its folder is filled after it starts (a spare): fill_awaited_working_copy
    uid: int | None = None  # the kernel's, when the grader is root
    cgroup: str | None = None
    output: int = -1  # the kernel's stdout and stderr, which the supervisor copies into its own stderr
    status: int = -1  # the kernel's wait status, from its init
    # the kernel's end of a socket pair: "bound" when its sockets are, "sealed" back (sockets_bound)
    handshake: int = -1
    channel: int = -1  # the kernel's end of its observation channel (kernels.ObservationChannel), kept open for it


def spawn(sandbox: Sandbox, cwd: str, sockets: str, target: Callable[[], object], files_later: bool = False,
          channel: int = -1) -> tuple[int, int]:
    """Run ``target`` as a kernel working in (a copy of) ``cwd`` that keeps its sockets in ``sockets``, under a
    supervisor; returns the supervisor's pid and a pidfd of it (the caller reaps it). Returns once the
    kernel is confined; raises :class:`SandboxError` if it could not be. ``files_later``: ``cwd`` is filled
    after the kernel has started, and copied at its first request (:func:`fill_awaited_working_copy`).
    ``channel``: an fd the kernel keeps (under the same number), of all the caller's."""
    ready, report = os.pipe()
    me = os.pidfd_open(os.getpid())
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        _supervise(_Start(sandbox, cwd, sockets, target, report, files_later, channel=channel), me)
    os.close(me)
    os.close(report)
    pidfd = os.pidfd_open(pid)
    with os.fdopen(ready, "rb") as answer:
        problem = answer.read().decode(errors="replace").strip()
    if problem != "ok":
        os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
        os.close(pidfd)
        raise SandboxError(problem or "the kernel died while entering its sandbox (see the grading log)")
    return pid, pidfd


def _supervise(start: _Start, parent: int) -> None:
    """The supervisor: start the kernel's namespace, copy its output to the log, pass interrupts on, stop
    it at the wall clock, end as the kernel ended. Never returns."""
    sandbox = start.sandbox
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # until it can pass them on
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _die_with(parent)
        kept = sorted(fd for fd in (start.report, start.channel) if fd >= 3)
        for low, high in zip([3] + [fd + 1 for fd in kept], kept + [os.sysconf("SC_OPEN_MAX")]):
            os.closerange(low, high)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sandbox.isolate:
            if _privileged():
                start.uid = sandbox.uid_base + os.getpid()
                _unshare(CLONE_NEWPID)
            else:
                ids = os.geteuid(), os.getegid()
                _unshare(CLONE_NEWUSER | CLONE_NEWPID)
                _write("/proc/self/setgroups", "deny")
                _write("/proc/self/uid_map", f"0 {ids[0]} 1")
                _write("/proc/self/gid_map", f"0 {ids[1]} 1")
        start.cgroup = _cgroup_for_kernel(sandbox)
        output, start.output = os.pipe()
        statuses, start.status = os.pipe()
        handshake, theirs = socket.socketpair()
        start.handshake = theirs.detach()
        me = os.pidfd_open(os.getpid())
    except BaseException as error:
        os.write(start.report, f"could not make the kernel's namespaces: {error}".encode())
        os._exit(1)
    init = os.fork()
    if init == 0:
        os.close(output)
        os.close(statuses)
        handshake.close()
        _init(start, me)
    ended = 1 << 8  # exit status 1, should the supervisor itself fail
    try:
        for fd in (me, start.report, start.output, start.status, start.handshake,
                   *([start.channel] if start.channel >= 0 else [])):
            os.close(fd)
        init_fd = os.pidfd_open(init)
        signal.signal(signal.SIGINT, lambda signum, frame: _signal(init_fd, signum))
        if not _watch(init_fd, output, sandbox.wall_clock, handshake, lambda: _seal(start)):
            print(f"hooklab: the kernel in {start.cwd} reached the wall-clock limit ({sandbox.wall_clock:g} s)",
                  file=sys.stderr)
            _signal(init_fd, signal.SIGKILL)
        ended = os.waitpid(init, 0)[1]
        handed = os.read(statuses, 4)
        ended = struct.unpack("i", handed)[0] if len(handed) == 4 else ended
        if start.cgroup:
            _remove_cgroup(start.cgroup)
    except BaseException:
        traceback.print_exc()
    finally:
        _end_like(ended)


def _watch(init: int, output: int, wall_clock: float, handshake: socket.socket, seal: Callable[[], None]) -> bool:
    """Copy the kernel's output into stderr until its init ends, and ``seal`` when the kernel says its sockets
    are bound; False if the wall clock ended first. (The kernel gets a pipe into the grading log, not the log
    itself, which it could read back.)"""
    deadline = time.monotonic() + wall_clock if wall_clock else None
    log = _LogCopy(output)
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        watched = [init, *([output] if log.open else []), *([handshake] if handshake.fileno() >= 0 else [])]
        ready = select.select(watched, [], [], left)[0]
        if output in ready:
            log.copy()
        if handshake in ready:
            bound = handshake.recv(16) == b"bound"
            seal()  # also when the kernel closed its end instead
            if bound:
                handshake.sendall(b"sealed")
            handshake.close()
        if init in ready:
            os.set_blocking(output, False)
            while log.open and log.copy():
                pass
            return True
        if not ready:
            return False


class _LogCopy:
    """Copies what a pipe carries into stderr, up to LOG_LIMIT bytes."""

    def __init__(self, pipe: int) -> None:
        self.pipe, self.copied, self.open = pipe, 0, True

    def copy(self) -> bool:
        """Copy what can be read now; False when nothing could be."""
        try:
            data = os.read(self.pipe, 65536)
        except BlockingIOError:
            return False
        self.open = bool(data)
        if self.copied < LOG_LIMIT <= self.copied + len(data):
            data = data[: LOG_LIMIT - self.copied] + b"\nhooklab: the kernel's further output is dropped\n"
        if self.copied < LOG_LIMIT:
            os.write(2, data)
        self.copied += len(data)
        return self.open


def _init(start: _Start, parent: int) -> None:
    """The first process of the kernel's PID namespace. Never returns."""
    try:
        _die_with(parent)
        me = os.pidfd_open(os.getpid())
        kernel = os.fork()
        if kernel == 0:
            os.close(start.status)
            _kernel(start, me)
        for fd in (me, start.report, start.output, start.handshake, *([start.channel] if start.channel >= 0 else [])):
            os.close(fd)
        signal.signal(signal.SIGINT, lambda signum, frame: os.kill(kernel, signum))  # unreaped, so still its pid
        while (reaped := os.wait())[0] != kernel:
            pass
        os.write(start.status, struct.pack("i", reaped[1]))
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(1)


def _signal(pidfd: int, signum: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, signum)
    except ProcessLookupError:
        pass


def _kernel(start: _Start, parent: int) -> None:
    """The kernel: confine itself, say so, run the target. Never returns."""
    try:
        _confine(start)
        _die_with(parent)  # after the change of uid, which clears the parent-death signal
        os.dup2(start.output, 1)
        os.dup2(start.output, 2)
        os.close(start.output)
    except BaseException as error:
        os.write(start.report, f"{type(error).__name__}: {error}".encode())
        os._exit(1)
    os.write(start.report, b"ok")
    os.close(start.report)
    global _handshake
    _handshake = start.handshake
    code = 1
    try:
        start.target()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


_handshake = -1  # in a kernel: its end of the handshake with its supervisor, until sockets_bound


def sockets_bound() -> None:
    """In a kernel, once it has bound its sockets and before it runs anything else: wait until the supervisor
    has taken the socket folder back (:func:`_seal`), so that nothing the kernel runs can write there."""
    global _handshake
    if _handshake < 0:
        return
    with socket.socket(fileno=_handshake) as line:
        _handshake = -1
        line.sendall(b"bound")
        line.recv(16)


def keep_socket_folder() -> None:
    """In a kernel about to execute a command of its own (which cannot say when its sockets are bound): keep
    its end of the handshake open through the exec, so that its folder is not sealed while it starts."""
    if _handshake >= 0:
        os.set_inheritable(_handshake, True)


def _seal(start: _Start) -> None:
    """In the supervisor: when the kernel runs under a uid of its own, give its socket folder and what is in it
    but its sockets (the connection file, a spare's folder) back to the grader's user, which alone may read them or
    list the folder; others may pass through it (a spare's working folder is inside). The kernel keeps its bound
    sockets but can no longer make, fill or remove a file there: its whole writing is its private tmpfs
    (``disk``). A kernel in a user namespace is its folder's owner and keeps it."""
    if start.uid is None:
        return
    me = os.getuid()
    for entry in os.scandir(start.sockets):
        if not stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
            os.chown(entry.path, me, me, follow_symlinks=False)
    os.chown(start.sockets, me, me, follow_symlinks=False)
    os.chmod(start.sockets, 0o711)


def _die_with(parent: int) -> None:
    """Be killed when the process behind the pidfd ``parent`` (the one that forked this one) ends, and
    end now if it has."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if select.select([parent], [], [], 0)[0]:
        os._exit(1)
    os.close(parent)


def die_with_parent() -> None:
    """For a grading process (a worker): be killed when the process that started it ends."""
    _die_with(os.pidfd_open(os.getppid()))


def _end_like(status: int) -> None:
    """Exit with the kernel's wait status: the same exit code, or death by the same signal. Never returns."""
    try:
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(signum, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            os.kill(os.getpid(), signum)
    finally:
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _privileged() -> bool:
    """Whether this process is root with every uid at hand, so a kernel can get a uid of its own."""
    with open("/proc/self/uid_map") as handle:
        return os.geteuid() == 0 and handle.read().split() == ["0", "0", "4294967295"]


# ---- confinement (in the kernel, before it runs) ----


SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
DEVICES = ("null", "zero", "full", "random", "urandom")
_STAGE = "/tmp"  # where the kernel's root is assembled, in its own mount namespace, before it pivots into it


@dataclass(frozen=True)
class _Mount:
    path: str
    kind: str  # "ro", "rw", "dev": binds of a path outside; "private": a bind of a folder of the private tmpfs;
    # "tmpfs", "proc"; "link" (a symlink)
    option: str = ""  # tmpfs: its mount options; link: its target; a bind: its source, if not the same path


def _python_paths() -> list[str]:
    """The Python environment: its prefixes, its import path (less the first entry, the folder of the
    script that started this process, as ``python -m`` puts it there) and hooklab itself."""
    import hooklab

    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *sys.path[1:], *hooklab.__path__}
    paths |= {os.path.realpath(path) for path in paths}
    return [path for path in paths if os.path.isabs(path) and os.path.exists(path)]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _layout(sandbox: Sandbox, cwd: str, sockets: str) -> list[_Mount]:
    """Everything the kernel's root holds, parents before children; refuses a layout that would show a
    hidden path, or make the Python environment writable."""
    readonly: list[str] = []
    for path in sorted({*(p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)), *_python_paths()}):
        if not any(_within(path, kept) for kept in readonly):
            readonly.append(path)
    hidden = [os.path.realpath(path) for path in sandbox.hidden]
    temporary = os.path.realpath(tempfile.gettempdir())  # where kernels' socket folders are made
    if _within(temporary, os.path.realpath(cwd)):
        raise SandboxError(f"a kernel working in {cwd} would see other kernels' sockets (in {temporary})")
    for folder in [*readonly, cwd, sockets]:
        for path in hidden + (readonly if folder in (cwd, sockets) else []):
            if _within(os.path.realpath(path), os.path.realpath(folder)):
                raise SandboxError(f"a kernel working in {cwd} would see {path} (through {folder})")
    tmpfs = f"mode=1777,size={sandbox.disk}" if sandbox.disk else "mode=1777"
    mounts = [
        *(_Mount(path, "link", os.readlink(path)) for path in SYSTEM if os.path.islink(path)),
        *(_Mount(path, "ro") for path in readonly),
        _Mount("/proc", "proc"),
        _Mount("/dev", "tmpfs", "mode=0755,size=64k"),
        *(_Mount(f"/dev/{name}", "dev") for name in DEVICES),
        *(_Mount(f"/dev/{name}", "link", f"/proc/self/fd/{fd}")
          for fd, name in enumerate(("stdin", "stdout", "stderr"))),
        _Mount("/dev/fd", "link", "/proc/self/fd"),
        _Mount("/dev/shm", "private", f"{PRIVATE}/shm"),
        _Mount(FILES, "ro", cwd),
        _Mount(cwd, "private", WORK),
        _Mount(sockets, "rw"),
    ]
    # the private tmpfs first (the binds of its folders need them), then parents before children
    return [_Mount("/tmp", "tmpfs", tmpfs), *sorted(mounts, key=lambda mount: mount.path)]


def _enter_view(mounts: list[_Mount], uid: int | None) -> None:
    """Pivot into a new root, a read-only tmpfs that holds ``mounts`` and nothing else of the machine; the
    folders of the private tmpfs belong to ``uid`` (None: to this user namespace's root)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    binds = [m for m in mounts if m.kind in ("ro", "rw", "dev")]
    sources = {m.path: os.open(m.option or m.path, os.O_PATH | os.O_CLOEXEC) for m in binds}
    _mount("tmpfs", _STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for mount in mounts:
        target = _STAGE + mount.path
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if mount.kind == "link":
            os.symlink(mount.option, target)
        elif mount.kind in ("tmpfs", "proc"):
            os.makedirs(target, exist_ok=True)
            extra = MS_NOEXEC if mount.kind == "proc" else 0
            _mount(mount.kind, target, mount.kind, MS_NOSUID | MS_NODEV | extra, mount.option or None)
            if mount.path == "/tmp":
                for folder in (PRIVATE, f"{PRIVATE}/shm", WORK, STAGED, FILES):
                    os.mkdir(_STAGE + folder, 0o700)
                    if uid is not None:
                        os.chown(_STAGE + folder, uid, uid)
        elif mount.kind == "private":
            os.makedirs(target, exist_ok=True)
            _mount(_STAGE + mount.option, target, None, MS_BIND)
            _set_mount_attributes(target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, flags=0)
        else:
            source = sources[mount.path]
            if stat.S_ISDIR(os.fstat(source).st_mode):
                os.makedirs(target, exist_ok=True)
            elif not os.path.exists(target):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(f"/proc/self/fd/{source}", target, None, MS_BIND | MS_REC)
            readonly = MOUNT_ATTR_RDONLY if mount.kind == "ro" else 0
            nodev = 0 if mount.kind == "dev" else MOUNT_ATTR_NODEV
            _set_mount_attributes(target, MOUNT_ATTR_NOSUID | nodev | readonly)
    for source in sources.values():
        os.close(source)
    os.chdir(_STAGE)
    _syscall("pivot_root", b".", b".")
    _check(_libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")
    _set_mount_attributes("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, flags=0)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", IFF_UP))


def _drop_privileges(uid: int | None, last_capability: int) -> None:
    """Become ``uid`` (None: stay the user namespace's root), with no capabilities and no way to gain any."""
    for capability in range(last_capability + 1):
        _prctl(PR_CAPBSET_DROP, capability)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _syscall("capset", (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)())
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_DUMPABLE, 1)  # its /proc/self stays its own after the change of uid


def _limit(sandbox: Sandbox, address_space: bool) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    limits = {resource.RLIMIT_FSIZE: sandbox.file_size, resource.RLIMIT_NOFILE: sandbox.open_files}
    if address_space:
        limits[resource.RLIMIT_AS] = sandbox.memory
    if sandbox.isolate:
        limits[resource.RLIMIT_NPROC] = sandbox.processes
    for which, value in limits.items():
        if value:
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))


def _confine(start: _Start) -> None:
    sandbox, cwd, sockets = start.sandbox, start.cwd, start.sockets
    if start.cgroup:
        _write(f"{start.cgroup}/cgroup.procs", "0")
    if sandbox.isolate:
        mounts = _layout(sandbox, cwd, sockets)
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last_capability = int(handle.read())
        if start.uid is not None:  # the socket folder becomes the kernel's (the folder it works in is copied)
            for path in [sockets, *(os.path.join(sockets, name) for name in os.listdir(sockets))]:
                os.chown(path, start.uid, start.uid, follow_symlinks=False)
        _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)
        _loopback_up()
        _enter_view(mounts, start.uid)
        global awaiting_files
        awaiting_files = "files" if start.files_later else "staged"
        if not start.files_later:  # as root still, which can read the folder it was asked to work in
            copy_regular_files(FILES, STAGED, start.uid)
        _drop_privileges(start.uid, last_capability)
    _limit(sandbox, address_space=not start.cgroup)
    os.chdir(cwd)


# ---- the working copy ----


def copy_regular_files(source: str, target: str, owner: int | None = None) -> list[str]:
    """Copy the regular files under ``source`` into the folder ``target`` (subfolders made anew, given to
    ``owner`` if not None), never following a link; returns the paths (relative to ``source``) left out:
    links, other kinds of file, files that cannot be read."""
    left_out: list[str] = []
    directory = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def copy(source_fd: int, target_fd: int, prefix: str) -> None:
        with os.scandir(source_fd) as entries:
            for entry in sorted(entries, key=lambda entry: entry.name):
                name = prefix + entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        os.mkdir(entry.name, 0o755, dir_fd=target_fd)
                        inner = os.open(entry.name, directory, dir_fd=source_fd)
                        try:
                            made = os.open(entry.name, directory, dir_fd=target_fd)
                            try:
                                if owner is not None:
                                    os.fchown(made, owner, owner)
                                copy(inner, made, name + "/")
                            finally:
                                os.close(made)
                        finally:
                            os.close(inner)
                    elif entry.is_file(follow_symlinks=False):
                        _copy_file(entry.name, source_fd, target_fd, owner)
                    else:
                        left_out.append(name)
                except OSError:
                    left_out.append(name)

    source_fd, target_fd = os.open(source, directory), os.open(target, directory)
    try:
        copy(source_fd, target_fd, "")
    finally:
        os.close(source_fd)
        os.close(target_fd)
    return left_out


def _copy_file(name: str, source_fd: int, target_fd: int, owner: int | None) -> None:
    reading = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=source_fd)
    try:
        if not stat.S_ISREG(os.fstat(reading).st_mode):  # replaced since it was listed
            raise OSError(errno.EINVAL, "not a regular file")
        writing = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=target_fd)
        try:
            if owner is not None:
                os.fchown(writing, owner, owner)
            while chunk := os.read(reading, 1 << 20):
                os.write(writing, chunk)
        except OSError:  # no half of a file (out of space, over the file size limit)
            os.unlink(name, dir_fd=target_fd)
            raise
        finally:
            os.close(writing)
    finally:
        os.close(reading)


awaiting_files = ""  # in a sandboxed kernel, until its first request: "staged" (STAGED holds them), "files" (a spare)


def fill_awaited_working_copy() -> list[str]:
    """In a sandboxed kernel, at its first request (sent by the grader before the notebook's first cell, once
    its integrity snapshot is taken), or before a kernel that is not hooklab's is executed: move the copy
    made when it was confined into its working folder, or, for a spare (given its folder when it was taken),
    copy that folder's read-only view (:data:`FILES`); returns what was left out. Nothing later."""
    global awaiting_files
    source, awaiting_files = awaiting_files, ""
    if source == "staged":
        for name in os.listdir(STAGED):  # one tmpfs: a rename each
            os.rename(f"{STAGED}/{name}", f"{WORK}/{name}")
    elif source == "files":
        return copy_regular_files(FILES, WORK)
    return []


# ---- memory through cgroup v2, where the grader was given one ----


def _cgroup_problem(sandbox: Sandbox) -> str | None:
    """Why ``sandbox.cgroup`` cannot hold kernels' cgroups, or None (also None when none is configured)."""
    if not sandbox.cgroup:
        return None
    try:
        with open(os.path.join(sandbox.cgroup, "cgroup.subtree_control")) as handle:
            enabled = handle.read().split()
    except OSError as error:
        return f"cgroup {sandbox.cgroup}: {error.strerror}"
    return None if "memory" in enabled else (f"cgroup {sandbox.cgroup}: the memory controller is not enabled for its "
                                             "children")


def _cgroup_for_kernel(sandbox: Sandbox) -> str | None:
    if not sandbox.cgroup:
        return None
    path = os.path.join(sandbox.cgroup, f"kernel-{os.getpid()}")
    os.mkdir(path)
    if sandbox.memory:
        _write(f"{path}/memory.max", str(sandbox.memory))
        if os.path.exists(f"{path}/memory.swap.max"):
            _write(f"{path}/memory.swap.max", "0")
    return path


def _remove_cgroup(path: str) -> None:
    for _ in range(100):  # its processes are gone, but the cgroup may take a moment to empty
        try:
            os.rmdir(path)
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise
            time.sleep(0.01)


# ---- run-time check ----


def unavailable(sandbox: Sandbox) -> str | None:
    """Why kernels cannot be started in ``sandbox`` on this machine, or None. Tried for real: a kernel
    that does nothing is started in a scratch folder. (Elsewhere than on Linux, kernels without isolation
    are nbgrader's own, with no limits but its timeout.)"""
    if not sys.platform.startswith("linux"):
        return f"kernels are sandboxed with Linux namespaces; this is {sys.platform}" if sandbox.isolate else None
    problem = _cgroup_problem(sandbox)
    if problem:
        return problem
    with tempfile.TemporaryDirectory(prefix="hooklab-check-") as scratch:
        sockets = os.path.join(scratch, "sockets")
        os.mkdir(sockets)
        try:
            _, pidfd = spawn(sandbox, scratch, sockets, lambda: None)
        except (SandboxError, OSError) as error:
            return str(error)
        os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
        os.close(pidfd)
    return None


# ---- the grader's handle on a kernel ----

_endings: dict[str, str] = {}


def ending(cwd: str) -> str | None:
    """How the last kernel that worked in ``cwd`` ended, if it ended on its own and not with status 0
    (a crash, a signal, the wall clock), in this process; else None."""
    return _endings.get(os.path.realpath(cwd))


def _exit_code(pidfd: int) -> int | None:
    """The exit code (as ``Popen.returncode``) of an ended process, None until it is reaped, -1 where
    the running Linux cannot tell (exit status through a pidfd came with Linux 6.15)."""
    info = bytearray(64)
    struct.pack_into("Q", info, 0, PIDFD_INFO_EXIT)
    try:
        fcntl.ioctl(pidfd, PIDFD_GET_INFO, info)
    except OSError:
        return -1
    if not struct.unpack_from("Q", info)[0] & PIDFD_INFO_EXIT:
        return None
    return os.waitstatus_to_exitcode(struct.unpack_from("i", info, 60)[0])


class Kernel:
    """A kernel as jupyter_client sees a process (the ``subprocess.Popen`` surface it uses), held through
    a pidfd of its supervisor, so that no signal or exit status can concern a process that reused its pid.
    Signals go to the supervisor: it passes SIGINT on to the kernel and takes the kernel with it otherwise."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int, cwd: str, wall_clock: float, started: float) -> None:
        """``started``: ``time.monotonic()`` before the kernel was asked for (its wall clock started later)."""
        self.pid, self._pidfd, self._cwd, self._wall_clock = pid, pidfd, os.path.realpath(cwd), wall_clock
        self.started = started
        self._stopped = False  # the grader sent it a signal that ends it
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = _exit_code(self._pidfd)
            if self.returncode is not None:
                os.close(self._pidfd)
                if self.returncode and not self._stopped:
                    _endings[self._cwd] = self.describe()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
            if select.select([self._pidfd], [], [], left)[0]:
                time.sleep(0.001)  # it ended; its status comes once the kernel server has reaped it
        return code

    async def ended(self) -> int:
        """Wait, without blocking the event loop, until the kernel has ended; its exit code."""
        loop = asyncio.get_running_loop()
        while (code := self.poll()) is None:
            readable = loop.create_future()
            loop.add_reader(self._pidfd, lambda readable=readable: readable.done() or readable.set_result(None))
            try:
                await readable
            finally:
                loop.remove_reader(self._pidfd)
            if self.poll() is None:
                await asyncio.sleep(0.001)  # it ended; its status comes once the kernel server has reaped it
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            self._stopped |= signum in (signal.SIGKILL, signal.SIGTERM)
            try:
                signal.pidfd_send_signal(self._pidfd, signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def describe(self) -> str:
        """How the kernel ended, in words."""
        code = self.returncode
        if code == -signal.SIGKILL and self._wall_clock and time.monotonic() - self.started >= self._wall_clock:
            return f"stopped at the wall-clock limit ({self._wall_clock:g} s)"
        return f"killed by {signal.Signals(-code).name}" if code and code < 0 else f"exited with status {code}"
