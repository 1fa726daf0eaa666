"""The grading protocol between the grader and a graded kernel, one place for its words.

The grader never has a kernel evaluate an expression: IPython's ``user_expressions`` are evaluated in the
notebook's globals (a global of the student's shadows any builtin they use) and their answers pass through
IPython's display formatter. Instead an execute request carries the protocol's fields in its *metadata*, under
:data:`FIELD`, and the kernel (:class:`hooklab.grading.kernels.agent.GradingKernel`) pops them before the
cell's code runs and answers on the kernel's observation channel, a socket whose other end only the grader
holds (:class:`hooklab.grading.kernels.client.ObservationChannel`), never in the reply. The fields, each
optional:

- ``nonce``: a token drawn afresh for the request; every line the kernel's agent sends about it starts with it;
- ``start``: the first request of a notebook: install the notebooks' error messages, take the probe's
  snapshot (``{"expected": {module: file}}``, or ``None`` without integrity checks) and answer it (:data:`SNAPSHOT`),
  then move the submission's files into the working folder;
- ``check``: before the cell, ask the probe what changed and answer it (:data:`BEFORE`);
- ``begin``: ``[seed, test, builtins read]``, :func:`hooklab.observations.begin` before the cell;
- ``observe``: the cell is a test: its observations are the lines sent between :data:`START` and :data:`END`;
- ``proof``: once the cell has run (whatever it raised), ask the probe what changed and whether the test set
  that name, and answer it (:data:`AFTER`).

Every request with a ``nonce`` ends with the line :data:`END`, sent last, once the cell has run, with the number of
observations the checkers sent since :data:`START` (0 in a cell that observes nothing). The agent writes each of its
lines on a line of its own (a newline first) and says each word once: the grader takes a word said twice, or a count
that is not the number of lines it kept, for lines written on the channel by code other than the agent and the
checkers, and keeps nothing of that request. A kernel without a channel (one ``nbgrader autograde`` started with
jupyter_client's own provisioner, where the checkers assert in the kernel) gives its answers in the execute reply's
content, under :data:`FIELD`, instead.
"""

from __future__ import annotations

FIELD = "hooklab"  # the key of the protocol's fields in an execute request's metadata
KERNEL_CLASS = "hooklab.grading.kernels.agent.GradingKernel"  # ipykernel's kernel class of a graded kernel
KERNEL_ARGUMENT = f"--IPKernelApp.kernel_class={KERNEL_CLASS}"
PROBE_MODULE = "_hooklab_probe"  # the grader's probe's name in a kernel's sys.modules (loaded by the agent)

# The words after a request's nonce on the lines the agent sends.
SNAPSHOT = "snapshot"
BEFORE = "before"
START = "start"
AFTER = "after"
END = "end"
