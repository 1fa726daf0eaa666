"""The labs exit on SIGTERM and on Ctrl-C (issue 47): hooklab.lab_exit ends AnyIO's worker threads, which
jupyter_server leaves waiting when it stops its event loop with a request in flight (an open JupyterLab page keeps
asking for contents); Python's exit then waited for them forever, deaf to a second SIGTERM.

The student lab is started as `make lab` starts it, a kernel is started, and keep-alive clients read a notebook and
a folder through the contents API, as JupyterLab's pages do, while it is stopped. Without the extension it hangs in
nearly every run (py-spy: the main thread in threading._shutdown, each AnyIO worker thread in Queue.get). Nothing is
timed: stop_server says whether the server exited by itself or had to be killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import pty
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import COURSE_CONFIG, REPO, Lab, start_jupyterlab, stop_server
from hooklab.lab_exit import stop_worker_threads

NOTEBOOK = REPO / "solutions" / "04_apply" / "apply.ipynb"


def test_an_anyio_worker_left_by_a_stopped_loop_is_ended():
    """What the server meets: a task that ran a call on an AnyIO worker thread is still pending when its loop stops;
    its worker (no daemon) waits for work forever, until stop_worker_threads tells it to end."""
    anyio = pytest.importorskip("anyio")
    before = set(threading.enumerate())
    loop = asyncio.new_event_loop()

    async def request():  # a contents request: its file read on a worker thread, then more to do
        await anyio.to_thread.run_sync(lambda: None)
        asyncio.get_running_loop().stop()  # jupyter_server stops its loop with the request pending
        await asyncio.Event().wait()

    task = loop.create_task(request())
    loop.run_forever()  # as tornado runs it: no task of run_until_complete for AnyIO to take as the root
    workers = [thread for thread in set(threading.enumerate()) - before if thread.name == "AnyIO worker thread"]
    assert workers and not task.done(), "the request should be pending and its worker thread alive"
    assert not any(worker.daemon for worker in workers), "AnyIO's workers are daemons now: lab_exit may go"
    assert stop_worker_threads() >= len(workers)
    for worker in workers:
        worker.join(60)
        assert not worker.is_alive(), "an AnyIO worker thread did not end when told"
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)
    loop.close()


@contextlib.contextmanager
def readers(lab: Lab, paths: list[str], count: int = 2) -> Iterator[None]:
    """Keep-alive clients reading ``paths`` through the contents API until the block ends or the server goes."""
    host, port = lab.base.removeprefix("http://").split(":")
    done = threading.Event()

    def read(path: str) -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        while not done.is_set():
            try:
                connection.request("GET", f"/api/contents/{path}?content=1&token={lab.token}")
                connection.getresponse().read()
            except (OSError, http.client.HTTPException):
                return  # the server has gone

    threads = [threading.Thread(target=read, args=(path,), daemon=True) for path in paths for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        done.set()


@pytest.fixture
def student_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A scratch folder with a short name (the kernels' IPC sockets live in it: a socket's path has at most 107
    bytes) and the lab's root in it, holding a notebook."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root = tmp_path / "work"
    (root / NOTEBOOK.parent.name).mkdir(parents=True)
    shutil.copy(NOTEBOOK, root / NOTEBOOK.parent.name / NOTEBOOK.name)
    return tmp_path, root


def start_a_kernel(lab: Lab) -> None:
    """A notebook's session, as opening it in JupyterLab makes; the answer comes once its kernel has started."""
    lab.api("POST", "/api/sessions", {"path": f"{NOTEBOOK.parent.name}/{NOTEBOOK.name}", "type": "notebook",
                                      "name": "", "kernel": {"name": "python3"}})


@contextlib.contextmanager
def stopped_after(lab: Lab) -> Iterator[None]:
    """The block's lab, stopped by stop_server after it if the block has not stopped it (a failed request)."""
    try:
        yield
    finally:
        if lab.server.poll() is None:
            stop_server(lab.server, lab.log, what="the student lab")


@pytest.mark.slow
def test_the_student_lab_exits_on_sigterm_after_a_kernel_started_with_requests_in_flight(student_lab):
    scratch, root = student_lab
    lab = start_jupyterlab(scratch, root, "student", COURSE_CONFIG.parent)
    with stopped_after(lab):
        start_a_kernel(lab)
        with readers(lab, [f"{NOTEBOOK.parent.name}/{NOTEBOOK.name}", NOTEBOOK.parent.name]):
            threading.Event().wait(1)  # the readers under way
            stopped = stop_server(lab.server, lab.log, what="the student lab")
    assert not stopped.problem(), f"the student lab {stopped.problem()}; its log: {lab.log}"
    assert "Shutting down 1 kernel" in lab.log.read_text()


@pytest.mark.slow
def test_the_student_lab_exits_on_ctrl_c_twice_in_a_terminal(student_lab):
    """On a terminal jupyter_server asks for confirmation at the first Ctrl-C and stops at the second."""
    scratch, root = student_lab
    terminal, tty = pty.openpty()
    try:
        lab = start_jupyterlab(scratch, root, "student", COURSE_CONFIG.parent, stdin=tty)
        with stopped_after(lab):
            start_a_kernel(lab)
            with readers(lab, [f"{NOTEBOOK.parent.name}/{NOTEBOOK.name}", NOTEBOOK.parent.name]):
                lab.server.send_signal(signal.SIGINT)
                while "interrupted" not in lab.log.read_text() and lab.server.poll() is None:  # it asks, on the tty
                    threading.Event().wait(0.1)
                lab.server.send_signal(signal.SIGINT)
                stopped = stop_server(lab.server, lab.log, what="the student lab", send=None)
    finally:
        os.close(tty)
        os.close(terminal)
    assert not stopped.problem(), f"the student lab {stopped.problem()}; its log: {lab.log}"
    assert lab.server.returncode == 0, lab.log.read_text()[-3000:]
