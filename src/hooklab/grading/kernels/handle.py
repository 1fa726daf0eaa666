"""The grader's handle on a kernel (:class:`Kernel`, through a pidfd of its supervisor), and how kernels ended."""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import signal
import struct
import subprocess
import time

PIDFD_GET_INFO, PIDFD_INFO_EXIT = (3 << 30) | (64 << 16) | (0xFF << 8) | 11, 1 << 3  # Linux 6.15

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
