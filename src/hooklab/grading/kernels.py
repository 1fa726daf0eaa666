"""Grading kernels forked from a process that has already imported torch, each in a sandbox.

Starting a Python kernel and importing torch is almost all of the cost of grading a small notebook.
A kernel server imports them once; each kernel nbgrader asks for is a fork of it that skips those
imports and then looks like a fresh process: the requested working directory, environment and
``sys.path``, its own torch and numpy random states (Python's ``random`` reseeds itself at a fork),
thread pools created after the fork. Its str hash seed is the server's: a fork cannot change it (every
existing dict depends on it), so the server is started with the PYTHONHASHSEED the kernels ask for — a
fixed one is theirs; "random" or none gives the kernels of one server one random seed. Kernels that are
not this interpreter's ipykernel are executed instead of forked. Every kernel is started and watched by
:mod:`hooklab.grading.sandbox`, and talks to the grader over ZeroMQ ``ipc`` sockets in a folder of its
own (its network namespace has no route to the grader).

nbgrader reaches the server through jupyter_client's provisioner mechanism
(:class:`PreloadedProvisioner`, registered as ``hooklab-preloaded``), and talks to each kernel through
:class:`ReadyClient`, which knows a kernel is ready without waiting for its output to go quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import importlib.util
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from hooklab import observations
from hooklab.grading.sandbox import (
    Kernel,
    Sandbox,
    SandboxError,
    copy_regular_files,
    environment,
    fill_awaited_working_copy,
    keep_socket_folder,
    sockets_bound,
    spawn,
)

PROVISIONER = "hooklab-preloaded"
# What every kernel would import, imported once by the server; a module imported here is in every kernel as if
# just imported: torch, hooklab's checkers, then what ipykernel imports as a kernel starts (its debugger, which
# imports debugpy; the parts of IPython's shell).
PRELOAD = (
    "torch", "numpy", "hooklab.checks",
    "ipykernel.kernelapp", "ipykernel.debugger", "IPython.core.debugger", "IPython.core.completerlib",
           "IPython.core.oinspect",
    "IPython.core.logger", "IPython.extensions.storemagic", "sqlite3", "tornado.queues", "tornado.platform.asyncio",
)
# The notebooks' other slow imports, each preloaded where the code of a notebook to grade matches its pattern
# (the server takes 0.1-0.9 s for each, and its forks grow): hooklab's widgets with matplotlib and ipywidgets,
# scikit-learn's datasets, torch._dynamo (which an optimizer's first step and torch.compile import).
RENDERER = "matplotlib.backends.backend_agg"
PROFILER = "torch.profiler"  # which check_backward watches a Function with; its first start takes a second
PRELOAD_WHEN_USED = {
    "matplotlib.figure": r"\bhooklab\.widgets\b|\bmatplotlib\b",
    "matplotlib.pyplot": r"\bpyplot\b",  # which picks its backend at its first figure, in the kernel
    "ipywidgets": r"\bhooklab\.widgets\b|\bipywidgets\b",
    "hooklab.widgets": r"\bhooklab\.widgets\b",
    "sklearn.datasets": r"\bsklearn\b",
    # (and notebook 09's FlopCounterMode, whose first use imports it: 3-4 s in each kernel otherwise; the modes'
    # own modules, torch.overrides and torch.utils._python_dispatch, come with torch)
    "torch._dynamo": r"\boptim\b|\bcompile\b|\b_dynamo\b|\bFlopCounterMode\b",
    # where the notebooks draw (pyplot, or one of hooklab's widgets that plot): matplotlib's renderer, which the
    # server uses once (_draw_once)
    RENDERER: r"\bpyplot\b|\bplt\b|\bGradientFlow\b|\bFunctionPlayground\b|\bVanishingPuzzle\b",
    # where a test checks a Function's backward: the profiler, started once by the server (then torch._dynamo is in)
    PROFILER: r"\bcheck_backward\b",
}
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # ipykernel's default for MPLBACKEND
_MESSAGE = 1 << 20  # largest request (environment included)
MARK_WAIT = 10.0  # seconds the grader waits for the end of a test cell's observations, once its reply has come
MARK_SIZE = 128  # bytes of a line that starts or ends a test cell's observations, at most
KILLED_WITHIN = 1.0  # seconds a killed kernel's supervisor is waited for before jupyter_client's own wait
READY_CLIENT = "hooklab.grading.kernels.ReadyClient"
SPARE_FOLDER = "work"  # a spare kernel's working folder, in its socket folder
SPARE_MAX_AGE = 60.0  # seconds a spare may wait: an older one has spent too much of its wall clock
# The grader's probe in the kernel (hooklab.grading.kernel_probe), loaded by path, not through the import
# system (which a submission could change), before the notebook's first cell; a kernel forked from the
# server has it loaded already, its table of module files filled.
PROBE_FILE = os.path.join(os.path.dirname(__file__), "kernel_probe.py")
PROBE = "__import__('sys').modules['_hooklab_probe']"
# A kernel's files arrive in its working folder once the snapshot is taken (an expression evaluated after it).
FILL_WORKING_COPY = "__import__('sys').modules['hooklab.grading.sandbox'].fill_awaited_working_copy()"
LOAD_PROBE = f"""\
import importlib.util as _u, sys as _s
if "_hooklab_probe" not in _s.modules:
    _spec = _u.spec_from_file_location("_hooklab_probe", {PROBE_FILE!r})
    _s.modules["_hooklab_probe"] = _m = _u.module_from_spec(_spec)
    _spec.loader.exec_module(_m)
    del _spec, _m
del _u, _s
"""


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


def preloads(code: str | None = None) -> list[str]:
    """The modules a server preloads for kernels that run ``code`` (the notebooks' code, hidden tests
    included); all of them when it is not known."""
    return [*PRELOAD, *(name for name, used in PRELOAD_WHEN_USED.items() if code is None or re.search(used, code))]


def preload(modules: list[str] | None = None) -> None:
    """What the server does before it forks: import ``modules`` (:func:`preloads`; one of
    :data:`PRELOAD_WHEN_USED` that is not installed is left to the kernels), draw once if matplotlib's
    renderer is among them (:func:`_draw_once`), start torch's profiler once if it is (:func:`hooklab.checks.warm_up`),
    load the grader's probe."""
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)  # matplotlib reads it once, when it is imported
    # debugpy warns at import that Python's frozen modules may hide breakpoints; nobody debugs a grading kernel
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    for name in preloads() if modules is None else modules:
        try:
            importlib.import_module(name)
        except ImportError:
            if name not in PRELOAD_WHEN_USED:
                raise
            continue
        if name == RENDERER:
            _draw_once()
        elif name == PROFILER:
            importlib.import_module("hooklab.checks").warm_up()
    exec(LOAD_PROBE, {})
    sys.modules["_hooklab_probe"].prepare()
    # what is imported now is shared by every kernel: their garbage collector leaves it alone, so it is not
    # walked (and copied, page by page) in each of them
    gc.freeze()


def _draw_once() -> None:
    """Draw a small figure, as the notebooks do: matplotlib finds its fonts and builds its math-text parser (for
    log-scale tick labels) at its first drawing, 0.05-0.1 s that each kernel would spend again. A speed-up: if
    it fails, it says so and the kernels draw their own."""
    import io

    from matplotlib.figure import Figure

    try:
        figure = Figure(figsize=(2, 1))
        axes = figure.add_subplot()
        axes.bar(["a", "b"], [1, 10], label="bars")
        axes.set_yscale("log")
        axes.set_title("title")
        axes.legend()
        figure.savefig(io.BytesIO(), format="png", bbox_inches="tight")
    except Exception as error:  # whatever matplotlib raises, the kernels must still start
        print(f"hooklab kernel server: could not draw a first figure ({error!r}); kernels draw their own",
              file=sys.stderr)


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
                [sys.executable, "-m", "hooklab.grading.kernels", str(theirs.fileno()), str(listener.fileno()),
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
            server = cls._instances[key] = cls(hash_seed, sandbox, preloads() if modules is None else modules)
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


def start_server(config: Any, code: str | None = None) -> None:
    """Start the kernel server that kernels of this configuration (``c.Sandbox``) are forked from, for this
    process's forks (a pool's workers) to share: one server preloads for them all what kernels that run
    ``code`` (the notebooks to grade; all of it when None) import. Called again with other code, the
    server preloads what that code needs too."""
    if SUPPORTED:
        modules = preloads(code)
        KernelServer.instance(os.environ.get("PYTHONHASHSEED"), Sandbox(config=config), modules).preload(modules)


def preloadable(cmd: list[str]) -> bool:
    """Whether ``cmd`` starts this interpreter's ipykernel, which the server can fork instead."""
    executable = shutil.which(cmd[0]) if cmd else None
    return (
        executable is not None
        and os.path.abspath(executable) == os.path.abspath(sys.executable)
        and cmd[1:3] == ["-m", "ipykernel_launcher"]
    )


_DROPPED = b""  # in place of the lines read past the limit (an empty line is no observation either)


class ObservationChannel:
    """The grader's end of a kernel's observation channel: a stream socket whose other end only the kernel holds,
    on which :func:`hooklab.observations.observe` sends each observation, one JSON line, as it is made. What the
    kernel sent cannot be taken back or changed by anything it runs later. A thread reads the lines as they arrive
    (a kernel that sends more than the socket holds waits for it, not for the cell to end); :meth:`take` hands over
    those sent between two marks, which the grader has the kernel send as a test cell starts and once it has run.
    Past ``limit`` bytes between two takes, lines are read and dropped (marks kept), and the take says so."""

    def __init__(self, limit: int) -> None:
        self._ours, self.kernel_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._limit = limit
        self._lines: list[bytes] = []
        self._partial = b""
        self._size = 0  # bytes of the lines held
        self._ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, name="hooklab-observations", daemon=True).start()

    def handed(self) -> None:
        """The kernel has its end (or failed to start): this process lets go of it."""
        self.kernel_end.close()

    def _read(self) -> None:
        while True:
            try:
                data = self._ours.recv(1 << 16)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._ended = True
                    self._changed.notify_all()
                    return
                *complete, self._partial = (self._partial + data).split(b"\n")
                if len(self._partial) > self._limit:
                    complete.append(_DROPPED)
                    self._partial = b""
                for line in complete:
                    self._size += len(line)
                    if self._size > self._limit and len(line) > MARK_SIZE:
                        line = _DROPPED
                    if line is not _DROPPED or self._lines[-1:] != [_DROPPED]:
                        self._lines.append(line)
                self._changed.notify_all()

    def take(self, start: str, end: str, timeout: float = MARK_WAIT) -> list[str] | None:
        """The lines the kernel sent between the lines ``start`` and ``end`` (the last ``start`` before it), taken
        from the channel with those before them; None when ``end`` did not come within ``timeout`` seconds, or
        ``start`` not before it, or the lines were too many to keep."""
        first, last = start.encode(), end.encode()
        with self._changed:
            if (not self._changed.wait_for(lambda: last in self._lines or self._ended, timeout)
                or last not in self._lines):
                return None
            position = self._lines.index(last)
            lines, self._lines = self._lines[:position], self._lines[position + 1:]
            self._size = sum(map(len, self._lines))
        if first not in lines:
            return None
        lines = lines[len(lines) - lines[::-1].index(first):]
        if _DROPPED in lines:
            return None
        return [line.decode(errors="replace") for line in lines]

    def close(self) -> None:
        """Stop reading (the kernel has ended or is ending)."""
        with contextlib.suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)
        self._ours.close()
        self.kernel_end.close()


class PreloadedProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, starting kernels through the kernel server, each in a sandbox
    (``c.Sandbox``) and on ``ipc`` sockets in a folder of its own."""

    sockets: str | None = None
    folder: str | None = None  # a spare's folder, inside ``sockets``
    forked: bool = False  # a fork of the server (else the kernel's own command, executed)
    channel: ObservationChannel | None = None  # what the kernel observes, sent as it observes it

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        manager = self.parent
        if SUPPORTED and manager is not None and self.sockets is None:
            self.sockets = tempfile.mkdtemp(prefix="hooklab-kernel-")
            manager.transport, manager.cache_ports = "ipc", False
            manager.ip = os.path.join(self.sockets, "ipc")
            manager.connection_file = os.path.join(self.sockets, "connection.json")
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        spare = kwargs.pop("spare", False)
        sandbox = Sandbox(parent=self)
        self.channel = channel = ObservationChannel(sandbox.outputs_size or sys.maxsize)
        if not SUPPORTED:  # a kernel of its own, given its end of the channel
            kernel_end = channel.kernel_end.fileno()
            kwargs["env"] = {**(kwargs.get("env") or os.environ), observations.CHANNEL: str(kernel_end)}
            try:
                return await super().launch_kernel(cmd, **kwargs, pass_fds=[kernel_end])
            finally:
                channel.handed()
        # ipykernel watches the process JPY_PARENT_PID names unless it is 1: the kernel's parent is an init,
        # and the supervisor ties the kernel to the grader already
        env = {**(kwargs.get("env") or os.environ), "JPY_PARENT_PID": "1"}
        env = sandbox.kernel_environment(env)
        if spare:  # its notebook is not known yet: its folder is filled when it is taken
            self.folder = os.path.join(self.sockets, SPARE_FOLDER)
            os.mkdir(self.folder)
        cwd = os.path.realpath(self.folder if spare else kwargs.get("cwd") or os.getcwd())
        self.forked = preloadable(cmd)
        request = {"argv": cmd, "cwd": cwd, "env": env, "sockets": self.sockets, "fork": self.forked, "spare": spare,
                   "sandbox": sandbox.settings()}
        try:
            self.process = KernelServer.instance(env.get("PYTHONHASHSEED"), sandbox).start(request, channel.kernel_end)
        except BaseException:
            await self.cleanup()  # jupyter_client cleans up only kernels that started
            raise
        finally:
            channel.handed()
        self.pid, self.pgid, self.cwd = self.process.pid, None, cwd
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        if self.process:
            self.process.send_signal(signum)

    async def kill(self, restart: bool = False) -> None:
        await super().kill(restart)
        if isinstance(self.process, Kernel):  # jupyter_client polls for the end every 0.1 s: end it first
            try:
                await asyncio.wait_for(self.process.ended(), KILLED_WITHIN)
            except TimeoutError:
                pass  # jupyter_client's own wait takes over

    async def wait(self) -> int | None:
        if not isinstance(self.process, Kernel):
            return await super().wait()
        code = await self.process.ended()  # when it ends, not at the next of jupyter_client's 0.1 s polls
        self.process = None
        return code

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart)
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if not restart and self.sockets:
            shutil.rmtree(self.sockets, ignore_errors=True)
            self.sockets = None


class Spares:
    """Kernels started ahead, one per kind, for the next notebook this process executes: a notebook's kernel
    is then ready when it starts, while the kernel of the one after it starts. A spare serves one notebook
    and ends with it (never two students in one kernel). When it is taken, its folder receives a copy of the
    regular files of the notebook's folder, which the kernel copies into its working folder at its first
    request, before the notebook's first cell (:func:`hooklab.grading.sandbox.fill_awaited_working_copy`)."""

    def __init__(self) -> None:
        self._kept: dict[Any, Any] = {}  # kind → a started kernel manager

    def take(self, kind: Any, folder: str) -> Any | None:
        """The spare of this kind, with ``folder``'s files copied into its own; None if there is none to use."""
        manager = self._kept.pop(kind, None)
        if manager is None:
            return None
        provisioner = manager.provisioner
        process = provisioner.process if isinstance(provisioner, PreloadedProvisioner) and provisioner.forked else None
        if (not isinstance(process, Kernel) or process.poll() is not None
            or time.monotonic() - process.started > SPARE_MAX_AGE):
            self.discard(manager)
            return None
        try:
            copy_regular_files(folder, provisioner.folder)
        except (OSError, RecursionError):
            self.discard(manager)
            raise
        return manager

    async def keep(self, kind: Any, manager: Any, arguments: list[str]) -> None:
        """Start ``manager``'s kernel as the spare of this kind."""
        self.discard(self._kept.pop(kind, None))
        await manager.start_kernel(extra_arguments=arguments, spare=True)
        self._kept[kind] = manager

    @staticmethod
    def discard(manager: Any) -> None:
        if manager is not None and manager.provisioner is not None and manager.provisioner.process is not None:
            manager.provisioner.process.kill()  # the kernel server removes its folders


SPARES = Spares()


class ReadyClient(AsyncKernelClient):
    """jupyter_client's asynchronous client, ready as soon as the kernel has answered ``kernel_info`` on
    the shell channel and reported itself idle after it on IOPub: that proves both channels connected
    and leaves nothing of the request on IOPub. jupyter_client's own wait instead reads IOPub until it
    has been silent for 0.2 s, a fixed cost per kernel. ``expressions``, when set, go with the next execute
    request as its ``user_expressions`` (hooklab's grader has a cell's request carry its probe)."""

    expressions: dict[str, str] = {}

    def execute(self, code: str, *args: Any, user_expressions: dict[str, str] | None = None, **kwargs: Any) -> str:
        carried, self.expressions = self.expressions, {}
        return super().execute(code, *args, user_expressions={**carried, **(user_expressions or {})}, **kwargs)

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while True:
            request = self.kernel_info()
            reply = await self._answer(self.shell_channel, "kernel_info_reply", request, 1.0)
            # IOPub drops what is published before it has subscribed: if the idle does not come, ask again
            if reply is not None and await self._answer(self.iopub_channel, "status", request, 0.05, state="idle"):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    @staticmethod
    async def _answer(channel: Any, msg_type: str, request: str, seconds: float,
                      state: str = "") -> dict[str, Any] | None:
        """The first ``msg_type`` message on ``channel`` in reply to ``request`` (with ``state``, for a
        status), or None after ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await channel.get_msg(timeout=left)
            except Empty:
                return None
            if (
                message["parent_header"].get("msg_id") == request
                and message["msg_type"] == msg_type
                and message["content"].get("execution_state", "") == state
            ):
                return message
        return None

if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
    # its kernels are gone and their folders removed: tearing down torch and the rest takes 0.1 s more, which
    # whoever reads the command's output would wait for
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
