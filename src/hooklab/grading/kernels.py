"""Grading kernels forked from a process that has already imported torch.

Starting a Python kernel and importing torch is almost all of the cost of grading a small notebook.
A kernel server imports them once; each kernel nbgrader asks for is a fork of it: a fresh process
holding nothing of any other submission, in a session of its own, that skips those imports.
nbgrader reaches it through jupyter_client's provisioner mechanism (:class:`PreloadedProvisioner`,
registered as ``hooklab-preloaded``); a kernel that is not this interpreter's ipykernel is started
as usual.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import traceback
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

PROVISIONER = "hooklab-preloaded"
PRELOAD = ("torch", "numpy", "ipykernel.kernelapp")
SUPPORTED = hasattr(os, "fork") and hasattr(os, "pidfd_open")


def serve() -> None:
    """Kernel server loop: preload, then fork one kernel per request line read from stdin.

    A request is ``{"argv": [...], "cwd": ..., "env": {...}}``; the reply line is the kernel's pid.
    Children are reaped by the system (SIGCHLD ignored); the server exits when stdin closes.
    """
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _become_kernel(request)
        print(pid, flush=True)


def _become_kernel(request: dict[str, Any]) -> None:
    """In the forked child: detach, take the requested environment, and run ipykernel. Never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # the kernel's own output goes where the server's stderr goes (the grading log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _reseed()
        sys.argv = ["ipykernel_launcher", *request["argv"]]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _reseed() -> None:
    """Give the fork its own numpy global random state, as a fresh interpreter would have
    (Python's ``random`` reseeds itself after a fork; torch's default seed is fixed anyway)."""
    import numpy

    numpy.random.seed()


class ForkedKernel:
    """The ``subprocess.Popen`` surface jupyter_client uses, for a kernel the server forked.

    The kernel is the server's child, so it is watched through a pidfd; its exit status belongs
    to the server and is reported as -1.
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = -1
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
        return self.poll()  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class KernelServer:
    """A running kernel server, started on first use by the process that asks for kernels."""

    _instance: KernelServer | None = None

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hooklab.grading.kernels"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @classmethod
    def instance(cls) -> KernelServer:
        if cls._instance is None or cls._instance.process.poll() is not None:
            cls._instance = cls()
        return cls._instance

    def fork(self, argv: list[str], cwd: str, env: dict[str, str]) -> ForkedKernel:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"argv": argv, "cwd": cwd, "env": env}) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError("the kernel server exited (see the grading log)")
        return ForkedKernel(int(reply))


def preloadable(cmd: list[str]) -> bool:
    """Whether ``cmd`` starts this interpreter's ipykernel, which the server can fork instead."""
    executable = shutil.which(cmd[0]) if cmd else None
    return (
        SUPPORTED
        and executable is not None
        and os.path.abspath(executable) == os.path.abspath(sys.executable)
        and cmd[1:3] == ["-m", "ipykernel_launcher"]
    )


class PreloadedProvisioner(LocalProvisioner):  # type: ignore[misc]
    """jupyter_client's local provisioner, launching Python kernels as forks of the kernel server."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        if not preloadable(cmd):
            return await super().launch_kernel(cmd, **kwargs)
        env = kwargs.get("env") or dict(os.environ)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        self.process = KernelServer.instance().fork(cmd[3:], cwd, env)
        self.pid = self.pgid = self.process.pid  # the fork leads a session (and process group) of its own
        self.cwd = cwd
        return self.connection_info


if __name__ == "__main__":
    serve()
