"""How nbgrader gets a kernel: :class:`PreloadedProvisioner` (jupyter_client's ``hooklab-preloaded``), which
asks the kernel server for one, and the spare kernels started ahead (:class:`Spares`, :data:`SPARES`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from hooklab import observations
from hooklab.grading.kernels.client import ObservationChannel
from hooklab.grading.kernels.handle import Kernel
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.kernels.server import SUPPORTED, KernelServer
from hooklab.grading.kernels.working_copy import copy_regular_files

PROVISIONER = "hooklab-preloaded"
KILLED_WITHIN = 1.0  # seconds a killed kernel's supervisor is waited for before jupyter_client's own wait
SPARE_FOLDER = "work"  # a spare kernel's working folder, in its socket folder
SPARE_MAX_AGE = 60.0  # seconds a spare may wait: an older one has spent too much of its wall clock


def preloadable(cmd: list[str]) -> bool:
    """Whether ``cmd`` starts this interpreter's ipykernel, which the server can fork instead."""
    executable = shutil.which(cmd[0]) if cmd else None
    return (
        executable is not None
        and os.path.abspath(executable) == os.path.abspath(sys.executable)
        and cmd[1:3] == ["-m", "ipykernel_launcher"]
    )


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
    request, before the notebook's first cell
    (:func:`hooklab.grading.kernels.working_copy.fill_awaited_working_copy`)."""

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
