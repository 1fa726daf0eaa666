"""The kernel server, which forks grading kernels (:func:`serve`), and the grader's side of it
(:class:`KernelServer`, :func:`start_server`).

Grading kernels forked from a process that has already imported torch, each in a sandbox.

Starting a Python kernel and importing torch is almost all of the cost of grading a small notebook.
A kernel server imports them once; each kernel nbgrader asks for is a fork of it that skips those
imports and then looks like a fresh process: the requested working directory, environment and
``sys.path``, its own torch and numpy random states (Python's ``random`` reseeds itself at a fork),
thread pools created after the fork. Its str hash seed is the server's: a fork cannot change it (every
existing dict depends on it), so the server is started with the PYTHONHASHSEED the kernels ask for — a
fixed one is theirs; "random" or none gives the kernels of one server one random seed. Kernels that are
not this interpreter's ipykernel are executed instead of forked. Every kernel is started and watched by
:mod:`hooklab.grading.kernels.supervise`, and talks to the grader over ZeroMQ ``ipc`` sockets in a folder of its
own (its network namespace has no route to the grader).

nbgrader reaches the server through jupyter_client's provisioner mechanism
(:class:`hooklab.grading.kernels.provisioner.PreloadedProvisioner`, registered as ``hooklab-preloaded``), and talks
to each kernel through :class:`hooklab.grading.kernels.client.ReadyClient`, which knows a kernel is ready without
waiting for its output to go quiet.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

from hooklab import observations
from hooklab.grading.kernels.handle import Kernel
from hooklab.grading.kernels.preloading import INLINE_BACKEND, modules_to_preload, preload
from hooklab.grading.kernels.sandbox import Sandbox, SandboxError, environment
from hooklab.grading.kernels.supervise import keep_socket_folder, sockets_bound, spawn
from hooklab.grading.kernels.working_copy import fill_awaited_working_copy

_MESSAGE = 1 << 20  # largest request (environment included)


def _pidfds() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


SUPPORTED = hasattr(os, "fork") and _pidfds()


def serve(owner_fd: int, listener_fd: int, modules: list[str]) -> None:
    """Kernel server loop: preload ``modules``, then start one kernel per request on each line (a SEQPACKET socket):
    its owner's, and one per fork of the owner that connected to the listener (a pool worker).

    A request is ``{"argv", "cwd", "env", "sockets", "fork", "spare", "sandbox"}``; the reply is ``{"pid"}`` with a
    pidfd of the kernel's supervisor attached, or ``{"error"}``. A request ``{"preload"}`` (modules to
    import before the next kernel, from a server started before its notebooks were known) has no reply;
    the owner's line is answered first. The server reaps its supervisors as they end. A line that closes
    (its process ended) takes the kernels started over it along; the owner's closing ends the server,
    which ends every kernel it started and removes their folders.
    """
    started_with = dict(os.environ)
    preload(modules)
    _SET_BY_IMPORTS.update((name, value) for name, value in os.environ.items() if started_with.get(name) != value)
    owner, listener = socket.socket(fileno=owner_fd), socket.socket(fileno=listener_fd)
    lines: dict[socket.socket, set[int]] = {owner: set()}  # line → pidfds of the supervisors started over it
    supervisors: set[int] = set()  # pidfds of the supervisors not reaped yet
    folders: set[str] = set()  # every kernel's socket folder (its spare working folder inside)
    try:
        while True:
            ready = select.select([listener, *lines, *supervisors], [], [])[0]
            for pidfd in supervisors.intersection(ready):
                os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
                os.close(pidfd)
                supervisors.discard(pidfd)
                for started in lines.values():
                    started.discard(pidfd)
            if listener in ready:
                _accept(listener, lines)
            for line in sorted(set(lines).intersection(ready), key=lambda line: line is not owner):
                if _answer(line, lines[line], supervisors, folders):
                    continue
                if line is owner:
                    return
                for pidfd in lines.pop(line):
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                line.close()
    finally:  # the owner ended (or the server failed): so do the kernels, which die with it
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _accept(listener: socket.socket, lines: dict[socket.socket, set[int]]) -> None:
    """A new line, from a process of this server's user (the listener's address is abstract: no folder
    guards it, and a kernel's network namespace does not reach it)."""
    line = listener.accept()[0]
    uid = struct.unpack("3i", line.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
    if uid == os.getuid():
        lines[line] = set()
    else:
        line.close()


def _answer(line: socket.socket, started: set[int], supervisors: set[int], folders: set[str]) -> bool:
    """Start the kernel a line asks for and reply; False when the line has closed."""
    try:
        message, fds, _, _ = socket.recv_fds(line, _MESSAGE, 1)
    except OSError:  # its process ended with a reply unread
        return False
    if not message:
        for fd in fds:
            os.close(fd)
        return False
    channel = fds[0] if fds else -1  # the kernel's end of its observation channel, which it alone keeps
    try:
        request = json.loads(message)
        if "preload" in request:  # no reply, whatever happens: the line's next reply is its next kernel's
            try:
                preload(request["preload"])
            except Exception as error:  # a module that fails to import costs its own preloading
                print(f"hooklab kernel server: could not preload {request['preload']} ({error!r}); kernels import them "
                      "themselves", file=sys.stderr)
            return True
        folders.add(request["sockets"])
        pid, pidfd = spawn(Sandbox(**request["sandbox"]), request["cwd"], request["sockets"],
                           lambda: _become_kernel(request, channel),
                           request["spare"], channel)
        reply, fds = {"pid": pid}, [pidfd]
        supervisors.add(pidfd)
        started.add(pidfd)
    except Exception as error:  # a bad request costs its kernel, not the server
        reply, fds = {"error": str(error) if isinstance(error, (SandboxError, OSError)) else f"{type(error).__name__}: "
                                                                                             f"{error}"}, []
    finally:
        if channel >= 0:
            os.close(channel)
    try:
        socket.send_fds(line, [json.dumps(reply).encode()], fds)
    except OSError:  # its process ended while the kernel started
        return False
    return True


_SET_BY_IMPORTS: dict[str, str] = {}  # the variables the server's preloading set (as ipykernel's debugger does)


def _become_kernel(request: dict[str, Any], channel: int) -> None:
    """In the forked kernel, confined already (its files arrive at its first request): take the requested
    environment, with the number of its observation channel's fd (``channel``, if any), and run ipykernel (or
    give a command of its own its files and execute it)."""
    os.environ.clear()
    os.environ.update({**_SET_BY_IMPORTS, **request["env"]})
    if channel >= 0:
        os.environ[observations.CHANNEL] = str(channel)
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None:  # preloaded: the backend it would have taken from this environment
        matplotlib.rcParams["backend"] = os.environ.get("MPLBACKEND", INLINE_BACKEND)
    if not request["fork"]:  # not hooklab's ipykernel: its files now, and its socket folder is not sealed
        fill_awaited_working_copy()
        keep_socket_folder()
        if channel >= 0:
            os.set_inheritable(channel, True)
        os.execvpe(request["argv"][0], request["argv"], request["env"])
    sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, *request["argv"][3:]]
    del sys.path[0]  # the server's folder, where `python -m ipykernel_launcher` would have the kernel's (and drop it)
    _freshen(request["sandbox"]["threads"])
    from ipykernel import kernelapp

    # ipykernel's launch_new_instance, with the supervisor told when the sockets are bound (sockets_bound); the app
    # read JPY_PARENT_PID when the server imported it: give it the kernel's
    app = kernelapp.IPKernelApp.instance(parent_handle=int(os.environ.get("JPY_PARENT_PID", 0)))
    app.initialize()
    sockets_bound()
    app.start()


def _freshen(threads: int) -> None:
    """Give the fork what a new process would have: its own torch and numpy global random states, and
    torch's thread pool sized for it (created at its first use, after the fork)."""
    import numpy
    import torch

    numpy.random.seed()
    torch.seed()
    if threads:
        torch.set_num_threads(threads)


class KernelServer:
    """A running kernel server, one per hash seed and thread count it starts kernels with, started by the
    first process that asks for one (or by :func:`start_server`), its owner. A fork of the owner (a pool
    worker) uses the owner's server over a line of its own, opened at its first request."""

    _instances: dict[tuple[str | None, int], KernelServer] = {}

    def __init__(self, hash_seed: str | None, sandbox: Sandbox, modules: list[str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.address = f"\0hooklab-kernels-{secrets.token_hex(16)}"  # abstract: nothing on disk to remove
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(self.address)
        listener.listen()
        # which a fork's /proc/self/environ shows; the grader's HOME, private, where matplotlib keeps its font cache
        env = {**environment(os.path.expanduser("~")), **sandbox.thread_environment()}
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = hash_seed
        with theirs, listener:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hooklab.grading.kernels.server", str(theirs.fileno()), str(listener.fileno()),
                 *modules],
                stdin=subprocess.DEVNULL, pass_fds=[theirs.fileno(), listener.fileno()], env=env,
            )
        self.pidfd = os.pidfd_open(self.process.pid)
        self.owner = self.user = os.getpid()  # the process that started it; the one whose line ``line`` is
        self.line, self.lock = ours, threading.Lock()
        self.modules = set(modules)  # preloaded, or asked to be

    @classmethod
    def instance(cls, hash_seed: str | None, sandbox: Sandbox, modules: list[str] | None = None) -> KernelServer:
        """The server for kernels of this hash seed and sandbox; a new one preloads ``modules`` (default: all)."""
        key = (hash_seed, sandbox.threads)
        server = cls._instances.get(key)
        if server is not None and not server.running():
            server.close()
            server = None
        if server is None:
            server = cls._instances[key] = cls(hash_seed, sandbox, modules_to_preload() if modules is None else modules)
        return server

    def running(self) -> bool:
        """Whether the server process is still there (asked of its pidfd, from any fork of the owner)."""
        return not select.select([self.pidfd], [], [], 0)[0]

    def close(self) -> None:
        """Let go of a server that ended: its line, its pidfd, and (in its owner) its exit status."""
        self.line.close()
        os.close(self.pidfd)
        if self.owner == os.getpid():
            self.process.wait()

    def _connect(self) -> None:
        if self.user != os.getpid():  # a fork of the owner: a line of its own (the owner's stays the owner's)
            self.line.close()
            self.line = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.lock, self.user = threading.Lock(), os.getpid()
            self.line.connect(self.address)

    def preload(self, modules: list[str]) -> None:
        """Have the server import ``modules`` before it starts another kernel (without waiting for it): before the
        next kernel asked for on this line, and on another line if asked before that line is (the owner's line
        is answered first; the grader asks before it forks its workers)."""
        missing = [name for name in modules if name not in self.modules]
        if missing:
            self._connect()
            with self.lock:
                self.line.send(json.dumps({"preload": missing}).encode())
            self.modules.update(missing)

    def start(self, request: dict[str, Any], channel: socket.socket) -> Kernel:
        """Start the kernel ``request`` asks for, handing it ``channel`` (its end of its observation channel)."""
        started = time.monotonic()
        self._connect()
        with self.lock:
            socket.send_fds(self.line, [json.dumps(request).encode()], [channel.fileno()])
            message, fds, _, _ = socket.recv_fds(self.line, _MESSAGE, 1)
        if not message:
            raise RuntimeError("the kernel server exited (see the grading log)")
        reply = json.loads(message)
        if "error" in reply:
            raise SandboxError(f"hooklab could not sandbox the kernel: {reply['error']}")
        return Kernel(reply["pid"], fds[0], request["cwd"], request["sandbox"]["wall_clock"], started)


def start_server(config: Any, code: str | None = None) -> KernelServer | None:
    """Start the kernel server that kernels of this configuration (``c.Sandbox``) are forked from, for this
    process's forks (a pool's workers) to share, and return it; None where kernels cannot be forked
    (:data:`SUPPORTED`). It preloads what kernels that run ``code`` import (all it may when None); once the
    notebooks to grade are known, :meth:`KernelServer.preload` adds what they need."""
    if not SUPPORTED:
        return None
    modules = modules_to_preload(code)
    server = KernelServer.instance(os.environ.get("PYTHONHASHSEED"), Sandbox(config=config), modules)
    server.preload(modules)
    return server


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
    # its kernels are gone and their folders removed: tearing down torch and the rest takes 0.1 s more, which
    # whoever reads the command's output would wait for
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
