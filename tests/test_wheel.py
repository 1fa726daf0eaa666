"""``make wheel`` and README's Colab line: the wheel installs beside a preinstalled torch and the notebooks' modules
import."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)


def test_the_readme_colab_line_installs_make_wheels_wheel_where_torch_is_already_installed(tmp_path: Path):
    subprocess.run(["make", "wheel", f"DIST={tmp_path / 'dist'}"], cwd=REPO, check=True, capture_output=True,
                   timeout=300)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    line = re.search(r"^\s*!pip install (\S+\.whl)$", (REPO / "README.md").read_text(), re.M)
    assert line and line.group(1) == wheel.name == f"hooklab-{version}-py3-none-any.whl", ("README names the wheel "
                                                                                           "make wheel makes")
    # a Colab-like Python: torch, pip and the scientific stack already installed (this environment's), hooklab not
    colab = tmp_path / "colab"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(colab)], check=True, timeout=120)
    python = colab / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "preinstalled.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", str(wheel)], cwd=tmp_path,
                   check=True, capture_output=True, timeout=300)
    imported = subprocess.run([str(python), "-c", "import hooklab, hooklab.checks, hooklab.hints, hooklab.widgets; "
                               "print(hooklab.__file__)"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip().startswith(site), f"hooklab came from {imported.stdout.strip()}, not the wheel"
