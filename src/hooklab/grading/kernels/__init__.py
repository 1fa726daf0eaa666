"""The life of a grading kernel's processes, module by module, in the order a kernel lives.

  sandbox: the Sandbox configuration (``c.Sandbox``) every kernel is confined by, the kernels' fixed
    environment, the paths inside a kernel's private tmpfs, SandboxError; what the sandbox is;
  provisioner: jupyter_client's ``hooklab-preloaded`` (PreloadedProvisioner) asks the kernel server for a kernel,
    or a kernel is taken from the spares started ahead (Spares, SPARES; preloadable: whether a kernel is forked);
  server: the kernel server (serve, run as ``python -m hooklab.grading.kernels.server``), started by its owner
    (KernelServer, start_server), forks each kernel and makes it look like a fresh process (_become_kernel);
  preloading: what the server imports before it forks (modules_to_preload, preload), and the grader's probe (LOAD_PROBE,
    PROBE) in every kernel;
  supervise: spawn forks the supervisor, the init of the kernel's PID namespace and the kernel; the supervisor
    enforces the wall clock and ends as the kernel ended; unavailable tries it once, as the command starts;
  confine: in the kernel, before it runs anything: namespaces, mounts, privileges dropped, rlimits, a cgroup;
  working_copy: the kernel's copy of the regular files of its folder, moved into its working folder at its first
    request (FILL_WORKING_COPY, once the probe's snapshot is taken);
  client: while it runs, the grader talks to it through ReadyClient and reads what it observes on its
    ObservationChannel;
  handle: Kernel, the grader's handle on the kernel's supervisor (through a pidfd), and how it ended (ending).
"""
