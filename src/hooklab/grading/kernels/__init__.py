"""The life of a grading kernel's processes, module by module, in the order a kernel lives.

  sandbox: the Sandbox configuration (``c.Sandbox``) every kernel is confined by, the kernels' fixed
    environment, the paths inside a kernel's private tmpfs, SandboxError; what the sandbox is;
  provisioner: jupyter_client's ``hooklab-preloaded`` (PreloadedProvisioner) asks the kernel server for a kernel,
    or a kernel is taken from the spares started ahead (Spares, SPARES; preloadable: whether a kernel is forked);
  server: the kernel server (serve, run as ``python -m hooklab.grading.kernels.server``), started by its owner
    (KernelServer, start_server), forks each kernel and makes it look like a fresh process (_become_kernel);
  preloading: what the server imports before it forks (modules_to_preload, preload), the grader's agent among them;
  protocol: the words of the grading protocol (an execute request's metadata field, the lines the agent sends back);
  agent: GradingKernel, ipykernel's kernel class of every graded kernel, which runs the protocol around each cell
    with references bound before any notebook code (the probe's snapshot and checks, begin, the working copy);
  supervise: spawn forks the supervisor, the init of the kernel's PID namespace and the kernel; the supervisor
    enforces the wall clock and ends as the kernel ended; unavailable tries it once, as the command starts;
  confine: in the kernel, before it runs anything: namespaces, mounts, privileges dropped, rlimits, a cgroup;
  working_copy: the kernel's copy of the regular files of its folder, moved into its working folder at its first
    request (by the agent, once the probe's snapshot is taken);
  client: while it runs, the grader talks to it through ReadyClient (the protocol's fields in each request) and
    reads its agent's answers and what it observes on its ObservationChannel;
  handle: Kernel, the grader's handle on the kernel's supervisor (through a pidfd), and how it ended (ending).
"""
