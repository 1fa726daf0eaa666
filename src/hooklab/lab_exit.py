"""The labs (`make lab`, `make instructor`) exit on SIGTERM and Ctrl-C: a Jupyter server extension, enabled for both
in lab/course/jupyter_server_config.json.

jupyter_server stops on SIGTERM (or a second Ctrl-C) by shutting its kernels down and then stopping its event loop;
the requests still in flight then never finish (an open JupyterLab page keeps asking for contents, sessions and
kernels). A contents request reads or writes its file on one of AnyIO's worker threads, and such a thread is no daemon
and is told to end only when the task that first used it ends (``root_task.add_done_callback(worker.stop)`` in
``anyio._backends._asyncio``): with the loop stopped, that task never ends, and Python's exit waits for the thread
forever (``threading._shutdown``, the main thread and the worker each blocked on a lock). A second SIGTERM only runs
jupyter_server's handler again, which asks the stopped loop to stop. Issue 47 met it (the browser test's lab, stopped
while its pages were open), as did jupyterlab/jupyterlab#10442.

When Python begins to exit, after the loop has stopped, this extension (a hook of ``threading._shutdown``, which runs
in the main thread before it waits for the other threads):

- tells every AnyIO worker thread to end (an idle one ends at once, a busy one after its call);
- gives SIGTERM and SIGINT back their default action: whatever else may still hold the exit, a second SIGTERM or
  Ctrl-C ends the process at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hooklab.lab_exit"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    # threading's private counterpart of atexit (CPython 3.9 and later; concurrent.futures uses it to end its
    # threads): atexit's own hooks run only after every thread has been waited for, too late here.
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        server_app.log.warning("hooklab.lab_exit: this Python has no threading._register_atexit; the server may not "
                               "exit on SIGTERM while a request is in flight")
        return
    register(at_exit)


def at_exit() -> None:
    """Let the process end: SIGTERM and SIGINT kill it, and AnyIO's worker threads end."""
    if threading.current_thread() is threading.main_thread():  # where signal handlers can be set
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, signal.SIG_DFL)
    stop_worker_threads()


def stop_worker_threads() -> int:
    """Tell every live AnyIO worker thread to end; returns how many were told."""
    try:
        from anyio._backends._asyncio import WorkerThread
    except ImportError:  # no AnyIO, or another layout of it: nothing of this kind to stop
        return 0
    told = 0
    for thread in threading.enumerate():
        if isinstance(thread, WorkerThread) and thread.is_alive():
            with contextlib.suppress(Exception):  # its queue full: it is busy, and its root task may yet end it
                thread.stop()  # a None on its queue, after the call it may be running
                told += 1
    return told
