"""A kernel's processes (in the kernel server): the supervisor, the init of its PID namespace and the kernel,
forked by :func:`spawn`; the wall clock; the run-time check that kernels can be sandboxed here."""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

from hooklab.grading.kernels.confine import (
    CLONE_NEWPID,
    CLONE_NEWUSER,
    PR_SET_PDEATHSIG,
    KernelStart,
    cgroup_for_kernel,
    cgroup_problem,
    confine,
    prctl,
    remove_cgroup,
    unshare,
    write,
)
from hooklab.grading.kernels.sandbox import MiB, Sandbox, SandboxError

# ---- starting a kernel (in the kernel server) ----
#
# server ─fork→ supervisor ─fork→ init ─fork→ kernel. The supervisor stays outside: it enforces the wall
# clock and ends as the kernel ended. The init is the first process of the kernel's PID namespace: it
# reaps orphans, passes interrupts on and hands the kernel's wait status to the supervisor; when it
# ends, the namespace ends with every process in it. The kernel itself is an ordinary process (not a
# namespace's PID 1, which would ignore the signals it sends itself). Each dies with its parent.


LOG_LIMIT = 1 * MiB  # of a kernel's own stdout and stderr copied into the grading log


def spawn(sandbox: Sandbox, cwd: str, sockets: str, target: Callable[[], object], files_later: bool = False,
          channel: int = -1) -> tuple[int, int]:
    """Run ``target`` as a kernel working in (a copy of) ``cwd`` that keeps its sockets in ``sockets``, under a
    supervisor; returns the supervisor's pid and a pidfd of it (the caller reaps it). Returns once the
    kernel is confined; raises :class:`SandboxError` if it could not be. ``files_later``: ``cwd`` is filled
    after the kernel has started, and copied at its first request
    (:func:`hooklab.grading.kernels.working_copy.fill_awaited_working_copy`).
    ``channel``: an fd the kernel keeps (under the same number), of all the caller's."""
    ready, report = os.pipe()
    me = os.pidfd_open(os.getpid())
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        _supervise(KernelStart(sandbox, cwd, sockets, target, report, files_later, channel=channel), me)
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


def _supervise(start: KernelStart, parent: int) -> None:
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
                unshare(CLONE_NEWPID)
            else:
                ids = os.geteuid(), os.getegid()
                unshare(CLONE_NEWUSER | CLONE_NEWPID)
                write("/proc/self/setgroups", "deny")
                write("/proc/self/uid_map", f"0 {ids[0]} 1")
                write("/proc/self/gid_map", f"0 {ids[1]} 1")
        start.cgroup = cgroup_for_kernel(sandbox)
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
            remove_cgroup(start.cgroup)
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


def _init(start: KernelStart, parent: int) -> None:
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


def _kernel(start: KernelStart, parent: int) -> None:
    """The kernel: confine itself, say so, run the target. Never returns."""
    try:
        confine(start)
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


def _seal(start: KernelStart) -> None:
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
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
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


# ---- run-time check ----


def unavailable(sandbox: Sandbox) -> str | None:
    """Why kernels cannot be started in ``sandbox`` on this machine, or None. Tried for real: a kernel
    that does nothing is started in a scratch folder. (Elsewhere than on Linux, kernels without isolation
    are nbgrader's own, with no limits but its timeout.)"""
    if not sys.platform.startswith("linux"):
        return f"kernels are sandboxed with Linux namespaces; this is {sys.platform}" if sandbox.isolate else None
    problem = cgroup_problem(sandbox)
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
