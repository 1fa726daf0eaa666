"""The fast tier (`pytest -m "not slow"`, make test-fast) stays fast: a test not marked slow that starts a kernel or a
grader fails and says so, while the same test marked slow runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

STARTS_A_KERNEL = '''
import pytest
from jupyter_client.manager import KernelManager


{mark}
def test_it():
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    manager.shutdown_kernel(now=True)
'''


def run(folder: Path, mark: str) -> subprocess.CompletedProcess:
    (folder / "test_starts_a_kernel.py").write_text(STARTS_A_KERNEL.format(mark=mark))
    shutil.copy(REPO / "tests" / "conftest.py", folder / "conftest.py")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-o", "addopts=", "-o", "markers=slow: slow", "--rootdir", str(folder), str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=folder)


def test_a_test_not_marked_slow_that_starts_a_kernel_fails_saying_so(tmp_path: Path):
    result = run(tmp_path, "")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "a test not marked slow started a kernel: mark it (or its module) with pytest.mark.slow" in result.stdout


@pytest.mark.slow  # it starts a kernel
def test_the_same_test_marked_slow_starts_its_kernel(tmp_path: Path):
    result = run(tmp_path, "@pytest.mark.slow")
    assert result.returncode == 0, result.stdout + result.stderr
