"""The sandbox of every grading kernel: its configuration (``c.Sandbox``), its fixed environment, the paths
inside it, and the error that says a kernel could not be confined.

The life of a grading kernel: started in a sandbox, held to limits, watched until it ends.

:func:`hooklab.grading.kernels.supervise.spawn` forks a *supervisor*, which starts a new PID namespace, in
which the *kernel* runs. The kernel confines itself (:mod:`hooklab.grading.kernels.confine`) before it runs
anything of the student's: a mount namespace in which it sees the system
and the Python environment (hooklab included) read-only, its socket folder writable, and one private
tmpfs of ``disk`` bytes holding its ``/tmp``, ``/dev/shm`` and its working folder: a copy of the regular
files of the folder it was asked to work in (links and other files are left out), made from a read-only
view of that folder and moved into the working folder only at the kernel's first request, so that nothing
of the submission is importable while ipykernel starts. It sees nothing else (not the course, its gradebook, other
students or any home folder), and nothing it writes reaches a folder the grader reads. Further: a
network namespace with only its own loopback; an unprivileged identity (a uid of its own when the grader
is root, a user namespace otherwise; no capabilities, ``no_new_privs``); rlimits; and a fixed environment
(:func:`environment`), never the grader's. The supervisor kills it at the wall clock and ends as it
ended; each process dies with its parent, and the end of the kernel's PID namespace ends every process
it started. :class:`hooklab.grading.kernels.handle.Kernel` is the grader's handle on a supervisor, through a pidfd.
"""

from __future__ import annotations

import os
import sys

from traitlets import Bool, Float, Int, List, Unicode
from traitlets.config import Configurable

GiB, MiB = 2**30, 2**20


def amount(size: int) -> str:
    """A number of bytes as people read it: 512 KiB, 8 MiB, 40.3 MiB."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale:
            return f"{size // scale} {unit}" if size % scale == 0 else f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SANDBOX_HOME = "/tmp"  # the kernel's HOME: writable, private, emptied with the kernel
# What a kernel takes from the environment jupyter_client asks for (the grader's, with the kernel spec's and
# jupyter_client's own): the rest of its environment is fixed (environment()).
KERNEL_VARIABLES = ("JPY_PARENT_PID", "PYTHONHASHSEED", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION",
                    "NBGRADER_EXECUTION")
# in a kernel's private tmpfs: its working copy and /dev/shm, and a read-only view of its folder
PRIVATE = "/tmp/.hooklab"
FILES = f"{PRIVATE}/files"  # the folder the kernel was asked to work in, read-only: its working copy is made from it
STAGED = f"{PRIVATE}/staged"  # its copy, until the kernel's first request moves it into the working folder
WORK = f"{PRIVATE}/work"  # the working folder, also mounted where the kernel was asked to work


class Sandbox(Configurable):
    """Isolation and limits of every grading kernel: ``c.Sandbox.<name>`` in the course configuration.
    Size limits of 0 mean none."""

    isolate = Bool(True, help="namespaces and an unprivileged identity for each kernel (False: "
                              "--no-sandbox)").tag(config=True)
    memory = Int(4 * GiB, help="bytes of address space of a kernel (RLIMIT_AS; memory.max with a "
                               "cgroup)").tag(config=True)
    wall_clock = Float(600.0, help="seconds a kernel may live (one notebook of a submission)").tag(config=True)
    processes = Int(256, help="processes and threads of a sandboxed kernel (RLIMIT_NPROC of its uid)").tag(config=True)
    file_size = Int(1 * GiB, help="largest file a kernel may write (RLIMIT_FSIZE)").tag(config=True)
    open_files = Int(1024, help="open files of a kernel (RLIMIT_NOFILE)").tag(config=True)
    disk = Int(256 * MiB, help="bytes a sandboxed kernel may write in all: its working copy, /tmp and /dev/shm share "
               "one private tmpfs of this size (without root, a kernel in a user namespace may also write files, each "
               "within file_size, in its socket folder)").tag(config=True)
    submission_size = Int(64 * MiB, help="most bytes of one submission's files: a larger one is refused before it is "
                          "copied (and, in a zip, before it is extracted)").tag(config=True)
    submission_files = Int(1000, help="most files in one submission: more are refused the same way").tag(config=True)
    input_size = Int(4 * GiB, help="most bytes extracted from a class's zip: its members past it are not "
                                   "extracted").tag(config=True)
    notebook_size = Int(8 * MiB, help="largest submitted notebook file: a larger one is refused before it is "
                                      "read").tag(config=True)
    source_size = Int(512 * 1024, help="most text in a submitted notebook's cells: more is refused before it "
                                       "runs").tag(config=True)
    output_size = Int(1 * MiB, help="largest output of a cell kept from a kernel: a larger one is cut, with a "
                                    "note").tag(config=True)
    outputs_size = Int(8 * MiB, help="most output kept from one notebook's kernel: later outputs are dropped, with a "
                                     "note").tag(config=True)
    threads = Int(1, help="CPU threads of torch, OpenMP and BLAS in a kernel; 0 keeps their defaults").tag(config=True)
    uid_base = Int(1_900_000_000, help="as root, a kernel runs as uid_base + its supervisor's pid").tag(config=True)
    hidden = List(Unicode(), help="paths no kernel may see: a kernel whose folders would show one is "
                                  "refused").tag(config=True)
    cgroup = Unicode("", help="a cgroup v2 folder with the memory controller enabled for its children: "
                     "each kernel then gets a child with memory.max instead of RLIMIT_AS").tag(config=True)

    def settings(self) -> dict[str, object]:
        """The configured values, to rebuild this sandbox in another process."""
        return {name: getattr(self, name) for name in self.trait_names(config=True)}

    def thread_environment(self) -> dict[str, str]:
        """Environment variables that hold the native thread pools to ``threads``."""
        return dict.fromkeys(THREAD_VARIABLES, str(self.threads)) if self.threads else {}

    def kernel_environment(self, requested: dict[str, str]) -> dict[str, str]:
        """The environment of a kernel jupyter_client asks for with ``requested``: the fixed one, its thread
        counts, and of ``requested`` only :data:`KERNEL_VARIABLES`."""
        taken = {name: requested[name] for name in KERNEL_VARIABLES if name in requested}
        # a sandboxed kernel's HOME is its private /tmp; without a sandbox the shared /tmp would let anyone on
        # the machine plant IPython start-up files there, so it keeps the grader's
        home = SANDBOX_HOME if self.isolate else requested.get("HOME", os.path.expanduser("~"))
        return {**environment(home), **self.thread_environment(), **taken}


def environment(home: str) -> dict[str, str]:
    """The fixed environment of grading kernels and of the server they are forked from (whose environment
    block a fork shows in /proc/self/environ), with ``home`` as HOME: what Python, torch and ipykernel need,
    never the rest of the grader's (a token in the instructor's shell would be one ``print`` away from a
    student's feedback)."""
    return {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": home,
        "LANG": "C.UTF-8",
    }


class SandboxError(RuntimeError):
    """A kernel could not be started in its sandbox (the message says which step failed and why)."""
