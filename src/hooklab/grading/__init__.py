"""Grade a whole class with one command, on top of nbgrader's gradebook, autograde and feedback.

One submission's way from ``hooklab autograde`` to the gradebook, its feedback, grades.csv and the report:

  cli.main: checks that kernels can be sandboxed (kernels.supervise.unavailable), starts the kernel server early
    (kernels.server.start_server; local mode only), then calls run.autograde, which does the rest in this process;
  run._plan → submissions.opened, find, place: the input (a folder or a zip) is read and the submission copied into
    ``submitted/``; run.unreadable and run.of_another_assignment give reasons not to run it at all;
  gradebook.ensure_assignments registers its assignment; its files' digest and run.grading_fingerprint make
    a run.Task, skipped when the gradebook has it and Ledger.is_current (``grading.json``);
  kernels.server.start_server preloads what the notebooks import; a forked ProcessPoolExecutor of worker.start gives
    each worker a worker.Grader on a private copy of the gradebook; worker.reference runs each assignment's
    source once (the reference run);
  run._execute → run._run → worker.execute → Grader.execute: nbgrader's autograde without the recorders
    (Course.config with execute_only), its preprocessors named in autograder/nbgrader_config.py:
      repair.RepairCells puts the cells back in the source's shape; integrity.ScanSubmission notes what
      integrity.scan finds; execute.GuardedExecute runs the cells in a kernel from kernels.provisioner.SPARES or
      one that kernels.provisioner.PreloadedProvisioner asks the KernelServer for (forked by kernels.server.serve,
      confined by kernels.supervise.spawn), loads kernel_probe for its snapshot and check around each test cell,
      and keeps what hooklab.observations sent on the kernels.client.ObservationChannel; each writes its part of
      the notebook's notes.Notes, the one record the parent reads of a worker's (repairs, findings, held, observed,
      seed, ...);
  run.ResultRecorder → record.record, in this process: judge.judge compares the observations with
    the reference run's (judge.verdict), then Course.recorders (scores.SaveAutoGradesByErrors, nbgrader's
    AssignLatePenalties) write the scores; one that could not run gets feedback.write_failure_feedback instead;
  worker.feedback → Grader.feedback: nbgrader's generate_feedback, through feedback.FeedbackExporter and
    feedback.HideHiddenTests; only then does Ledger.set journal the entry, so a stopped run resumes;
  run._finish: Ledger.save, run.export (grades.csv: grades_csv.CellScoresExportPlugin), class_report.write (the
    report) and summary.summary, which cli.main prints.
With ``--dask`` or ``--scheduler``, cluster.DaskExecution sends the submission's files to cluster.grade on a Dask
worker (a Grader set up by cluster.CourseOnWorker) and unpacks the autograded folder it returns; the reference run,
the recording and the feedback stay with the local pool and this process.
"""
