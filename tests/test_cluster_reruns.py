"""`--dask` runs a submission again, once, when its worker dies: the local cluster's scheduler is made with
``distributed.scheduler.allowed-failures`` = 1, and an existing cluster (``--scheduler``) keeps its own setting.
A scheduler without workers is made and asked in milliseconds; test_cluster.py kills a worker under a
submission and watches the rerun."""

from __future__ import annotations

from pathlib import Path

import dask
import pytest
from distributed import LocalCluster

from hooklab.grading.cluster import DaskExecution
from hooklab.grading.course import Course

ASSIGNMENT = "01_module_basics"


@pytest.fixture
def course(tmp_path: Path) -> Course:
    """A course with one assignment's source and a gradebook, enough for a DaskExecution to start."""
    (tmp_path / "source" / ASSIGNMENT).mkdir(parents=True)
    (tmp_path / "source" / ASSIGNMENT / "module_basics.ipynb").write_text("{}")
    (tmp_path / "gradebook.db").write_bytes(b"")
    config = tmp_path / "nbgrader_config.py"
    config.write_text(f"c = get_config()\nc.CourseDirectory.root = {str(tmp_path)!r}\n"
                      f"c.CourseDirectory.db_url = {'sqlite:///' + str(tmp_path / 'gradebook.db')!r}\n")
    return Course(config_file=config)


def allowed_failures(execution: DaskExecution) -> int:
    """How many times the cluster's scheduler runs a task again whose worker died."""
    return execution.client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures)


def test_a_local_dask_cluster_runs_a_submission_again_once_when_its_worker_dies(course: Course):
    assert dask.config.get("distributed.scheduler.allowed-failures") != 1, "Dask's default would prove nothing"
    execution = DaskExecution(course, [ASSIGNMENT], course.root / "gradebook.db", None, 0)
    try:
        assert allowed_failures(execution) == 1
    finally:
        execution.close()
    assert dask.config.get("distributed.scheduler.allowed-failures") != 1, "the setting leaked out of the cluster"


def test_an_existing_cluster_keeps_its_own_rerun_setting(course: Course):
    with dask.config.set({"distributed.scheduler.allowed-failures": 5}):
        cluster = LocalCluster(n_workers=0, dashboard_address=None)
    try:
        execution = DaskExecution(course, [ASSIGNMENT], course.root / "gradebook.db", cluster.scheduler_address, 0)
        try:
            assert allowed_failures(execution) == 5
        finally:
            execution.close()
    finally:
        cluster.close()
