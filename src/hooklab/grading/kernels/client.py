"""The grader's side of a running kernel: :class:`ReadyClient`, jupyter_client's client that knows when a
kernel is ready and sends the grading protocol's fields, and :class:`ObservationChannel`, on which the kernel
answers them and sends what it observes."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from queue import Empty
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient

from hooklab.grading.kernels import protocol

ANSWER_WAIT = 10.0  # seconds the grader waits for the end of a request's answers, once its reply has come
ANSWER_SIZE = 1 << 20  # bytes of one of the agent's answers (the probe's), at most
LINE_COST = 64  # bytes a kept line costs besides its text, counted against the limit
MESSAGE_SIZE = 64 << 20  # bytes of one message from a kernel, at most: ZeroMQ drops a larger one before it is received
READY_CLIENT = "hooklab.grading.kernels.client.ReadyClient"


@dataclass
class Answers:
    """What a kernel's agent sent about one request: its answers by word (:mod:`hooklab.grading.kernels.protocol`),
    and the test's observations (None when the request's START or END did not come, or they were too many)."""

    words: dict[str, str] = field(default_factory=dict)
    observed: list[str] | None = None
    ended: bool = False


class ObservationChannel:
    """The grader's end of a kernel's observation channel: a stream socket whose other end only the kernel holds, on
    which the grader's agent in the kernel (:mod:`hooklab.grading.kernels.agent`) answers each request and the
    checkers send each observation, one line each, as it is made. What the kernel sent cannot be taken back or
    changed by anything it runs later. Before it sends a request, the grader says which it awaits
    (:meth:`expect`); a thread reads the lines as they arrive and keeps only that request's: the agent's answers
    (lines that begin with its nonce) and the observations sent between its START and END. Anything else, before,
    between or after requests, is read and dropped, so a kernel cannot grow the grader's memory: past ``limit``
    bytes of observations (each line counting :data:`LINE_COST` more) or :data:`ANSWER_SIZE` for an answer, the
    request's observations are dropped and :meth:`take` says so. The agent says each word once, END last, and its
    END tells how many observations its checkers sent: a word said twice or after END (code that learnt the nonce
    speaking for the agent: the agent always speaks after it), or another count of observations than the lines kept
    (lines written on the channel around the checkers), leaves the request without answers nor observations. So
    that a word after END is seen, :meth:`take` returns once the reader has read everything the kernel sent before
    its reply (which it sends after its agent's last word)."""

    def __init__(self, limit: int) -> None:
        self._ours, self.kernel_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._limit = limit
        self._longest = max(limit, ANSWER_SIZE)  # bytes of a line kept, at most (past it, read and dropped)
        self._nonce: bytes | None = None  # the awaited request's, with the space that follows it on a line
        self._answers = Answers()
        self._size = 0  # bytes of the observations held, with LINE_COST each
        self._overflow = False
        self._forged = False
        self._pieces: list[bytes] = []  # the line being read, in the pieces it came in
        self._pending = 0  # their length
        self._ended = False
        self._waker, self._woken = socket.socketpair()  # take() wakes the reader, which then says it has read all
        self._drained = 0  # how often the reader, woken, found nothing more to read
        self._changed = threading.Condition()
        threading.Thread(target=self._read, name="hooklab-observations", daemon=True).start()

    def handed(self) -> None:
        """The kernel has its end (or failed to start): this process lets go of it."""
        self.kernel_end.close()

    def expect(self, nonce: str) -> None:
        """Keep the lines of the request with this nonce from now on (and nothing of any other)."""
        with self._changed:
            self._nonce, self._answers, self._size = f"{nonce} ".encode(), Answers(), 0
            self._overflow = self._forged = False

    def _read(self) -> None:
        while True:
            try:
                readable = select.select([self._ours, self._woken], [], [])[0]
                if self._ours not in readable:  # woken, and nothing left to read
                    self._woken.recv(1 << 10)
                    with self._changed:
                        self._drained += 1
                        self._changed.notify_all()
                    continue
                data = self._ours.recv(1 << 16)
            except (OSError, ValueError):  # closed
                data = b""
            with self._changed:
                if not data:
                    self._ended = True
                    self._changed.notify_all()
                    return
                *complete, rest = data.split(b"\n")
                for piece in complete:
                    if self._pending <= self._longest:
                        self._keep(b"".join([*self._pieces, piece]))
                    elif self._answers.observed is not None:  # a line too long to keep, in a test
                        self._overflow = True
                    self._pieces, self._pending = [], 0
                if rest and self._pending <= self._longest:
                    self._pieces.append(rest)
                self._pending += len(rest)
                self._changed.notify_all()

    def _keep(self, line: bytes) -> None:
        """One complete line: the awaited request's answer, one of its observations, or dropped."""
        nonce, answers = self._nonce, self._answers
        if nonce is None or not line:
            return
        if line.startswith(nonce):
            word, _, value = line[len(nonce):].decode(errors="replace").partition(" ")
            if answers.ended or word in answers.words or (word == protocol.START and answers.observed is not None):
                self._forged = True  # the agent says each word once, END last
            elif word == protocol.START:
                answers.observed = []
            elif word == protocol.END:
                answers.ended = True
                if self._overflow or answers.observed is None or value != str(len(answers.observed)):
                    answers.observed = None
            elif len(value) <= ANSWER_SIZE:
                answers.words[word] = value
            return
        if answers.observed is None or self._overflow or answers.ended:
            return
        self._size += len(line) + LINE_COST
        if self._size > self._limit:
            self._overflow, answers.observed = True, []
        else:
            answers.observed.append(line.decode(errors="replace"))

    def take(self, timeout: float = ANSWER_WAIT) -> Answers:
        """The awaited request's answers, once its END has come and everything sent before it has been read (or after
        ``timeout`` seconds, or once the kernel has closed its end: then without the observations). Call it once the
        request's reply has come."""
        with self._changed:
            self._changed.wait_for(lambda: self._answers.ended or self._ended, timeout)
            drained = self._drained
            with contextlib.suppress(OSError):
                self._waker.send(b"?")
            self._changed.wait_for(lambda: self._drained > drained or self._ended, timeout)
            answers, forged, self._nonce, self._answers = self._answers, self._forged, None, Answers()
        if forged:
            return Answers(ended=answers.ended)
        if not answers.ended:
            answers.observed = None
        return answers

    def close(self) -> None:
        """Stop reading (the kernel has ended or is ending)."""
        with contextlib.suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)
        self._ours.close()
        self.kernel_end.close()
        self._waker.close()
        self._woken.close()


class ReadyClient(AsyncKernelClient):
    """jupyter_client's asynchronous client, ready as soon as the kernel has answered ``kernel_info`` on
    the shell channel and reported itself idle after it on IOPub: that proves both channels connected
    and leaves nothing of the request on IOPub. jupyter_client's own wait instead reads IOPub until it
    has been silent for 0.2 s, a fixed cost per kernel. ``fields``, when set, go with the next execute request
    in its metadata (:mod:`hooklab.grading.kernels.protocol`)."""

    fields: dict[str, Any] | None = None

    def _context_default(self) -> Any:
        """jupyter_client's context, whose sockets receive no message over :data:`MESSAGE_SIZE` (the output limits cut
        outputs far below it): what one kernel sends cannot take the grading process's memory."""
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_SIZE)
        return context

    def execute(self, code: str, silent: bool = False, store_history: bool = True,
                user_expressions: dict[str, str] | None = None, allow_stdin: bool | None = None,
                stop_on_error: bool = True) -> str:
        fields, self.fields = self.fields, None
        if fields is None:
            return super().execute(code, silent, store_history, user_expressions, allow_stdin, stop_on_error)
        content = {"code": code, "silent": silent, "store_history": store_history,
                   "user_expressions": user_expressions or {},
                   "allow_stdin": self.allow_stdin if allow_stdin is None else allow_stdin,
                   "stop_on_error": stop_on_error}
        message = self.session.msg("execute_request", content, metadata={protocol.FIELD: fields})
        self.shell_channel.send(message)
        return message["header"]["msg_id"]

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
