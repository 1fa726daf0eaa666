"""The grader's side of a running kernel: :class:`ReadyClient`, jupyter_client's client that knows when a
kernel is ready, and :class:`ObservationChannel`, on which the kernel sends what it observes."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient

MARK_WAIT = 10.0  # seconds the grader waits for the end of a test cell's observations, once its reply has come
MARK_SIZE = 128  # bytes of a line that starts or ends a test cell's observations, at most
READY_CLIENT = "hooklab.grading.kernels.client.ReadyClient"


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
