"""Grade a whole class with one command, on top of nbgrader's gradebook, autograde and feedback.

One submission's way from ``hooklab autograde`` to the gradebook, its feedback, grades.csv and the report:

  hooklab.cli.main: reads the course config once, starts the kernel server (kernels.server.start_server; local mode
    only), checks that kernels can be sandboxed (kernels.supervise.unavailable) and hands the server to
    run.autograde, which does the rest in this process, in three stages:
  plan.make_plan → submissions.opened_input, find_submissions, place_submission: the input (a folder or a zip) is
    read and the submission copied into ``submitted/``; plan.unreadable and plan.of_another_assignment give reasons
    not to run it; gradebook.ensure_assignments registers its assignment; its files' digest and
    plan.grading_fingerprint make a plan.Task, skipped when the gradebook has it and Ledger.is_current;
  run._execute: the server preloads what the notebooks import (KernelServer.preload); a forked pool of worker.start
    gives each worker a worker.Grader on a private copy of the gradebook; worker.reference runs each assignment's
    source once; run._run sends the task to worker.execute → Grader.execute: nbgrader's autograde without the
    recorders, its preprocessors those of pipeline.SANITIZE and pipeline.AUTOGRADE (pipeline.configure, where the
    course's config names none): repair.RepairCells (the source's shape), integrity.preprocessor.ScanSubmission
    (integrity.scan.scan's findings), execute.GuardedExecute (the cells, in a kernel from kernels.provisioner: a
    spare, or one the KernelServer forks and kernels.supervise.spawn confines;
    each cell's request carries the protocol's fields, which the kernel's kernels.agent.GradingKernel runs: begin,
    kernel_probe's checks around each test cell; hooklab.observations reports on a kernels.client.ObservationChannel);
    each writes its part of notes.Notes, the one record the parent reads of a worker's;
  record.ResultRecorder → record.record_submission, in this process: judge.judge compares the observations with
    the reference run's, then Course.recorders (scores.SaveAutoGradesByErrors, nbgrader's AssignLatePenalties) write
    the scores; it returns the ledger.Entry (a task that could not run gets feedback.write_failure_feedback);
  worker.feedback → Grader.feedback: nbgrader's generate_feedback (feedback.FeedbackExporter, HideHiddenTests);
    only then does Ledger.set journal the entry (keys.submission_key), so a stopped run resumes;
  run._finish: the ledger saved with its LastRun (timing.Stages, problems), grades_csv.write_grades_csv,
    class_report.write (class_data.collect, aggregate) and summary.summary, which cli.main prints.
With ``--dask`` or ``--scheduler``, cluster.DaskExecution sends the files to cluster.grade on a Dask worker and
unpacks the autograded folder it returns; the reference run, recording and feedback stay here. ``hooklab review``
(review.review) releases held submissions as manual scores and writes grades.csv and the report again.

Learning platforms (``lms/``): with ``--lms``, submissions.find_submissions hands the opened input to
lms.find_lms_submissions, which reads Canvas's (lms.canvas) or Moodle's (lms.moodle) file names, maps them to student
ids through the roster (their gradebook export, read by lms.table) and gives the worksheet's submission times as
nbgrader's timestamp.txt (submissions.Submission.timestamp); ``hooklab export`` (lms.export) writes an assignment's
scores back into the LMS's own file.

Similar answers: class_report.write also has similarity.class_similarity compare each exercise's answer cells in
``submitted/`` pair by pair (copydetect's winnowing, the released template left out) and shows the flagged pairs;
it reads notebooks only and changes no score.
"""
