"""One source of truth for versions: requirements.lock pins them, environment.yml must agree."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib

import nbformat
import yaml
from packaging.requirements import Requirement

from conftest import REPO, solution_notebooks

CONDA_TO_PIP = {"pytorch": "torch"}
NOT_PIP_PACKAGES = {"python", "pip"}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: {line!r} is not pinned with =="
            pins[normalise(name)] = version
    return pins


def conda_pins() -> dict[str, str]:
    spec = yaml.safe_load((REPO / "environment.yml").read_text())
    pins = {}
    for entry in spec["dependencies"]:
        if isinstance(entry, str):
            name, _, version = entry.partition("=")
            if name not in NOT_PIP_PACKAGES:
                pins[normalise(CONDA_TO_PIP.get(name, name))] = version
        else:  # pip's section: what conda-forge does not have, pinned as pip pins (name==version)
            for line in entry.get("pip", []):
                name, _, version = line.partition("==")
                if version:
                    pins[normalise(name)] = version.split("#")[0].strip()
    return pins


def pyproject_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [text for extra in project["optional-dependencies"].values() for text in extra]
    requirements = [Requirement(text) for text in project["dependencies"] + extras]
    # not an extra's own extras
    return [requirement for requirement in requirements if requirement.name != project["name"]]


def direct_dependencies() -> set[str]:
    return {normalise(requirement.name) for requirement in pyproject_requirements()}


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    assert lock_pins()["torch"] == "2.13.0"


def test_environment_yml_versions_match_the_lock():
    lock = lock_pins()
    mismatched = {name: (version, lock.get(name)) for name, version in conda_pins().items()
                  if lock.get(name) != version}
    assert not mismatched, f"environment.yml version vs requirements.lock: {mismatched}"


def test_environment_yml_lists_every_direct_dependency():
    missing = direct_dependencies() - set(conda_pins())
    assert not missing, f"pyproject.toml dependencies missing from environment.yml: {sorted(missing)}"


def test_environment_yml_lists_nothing_else():
    extra = set(conda_pins()) - direct_dependencies()
    assert not extra, f"environment.yml lists packages that pyproject.toml does not: {sorted(extra)}"


def test_lock_satisfies_pyproject_ranges():
    lock = lock_pins()
    for requirement in pyproject_requirements():
        pinned = lock.get(normalise(requirement.name))
        assert pinned is not None, f"{requirement.name} is not in requirements.lock"
        assert requirement.specifier.contains(pinned), (f"requirements.lock has {requirement.name}=={pinned}, outside "
                                                        f"{requirement}")


def test_python_version_is_declared_once_and_is_the_one_tested():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    conda_python = next(entry for entry in yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
                        if isinstance(entry, str) and entry.startswith("python="))
    assert project["requires-python"] == ">=3.11" and conda_python == "python=3.11"
    assert sys.version_info[:2] >= (3, 11)


NOTEBOOK_PACKAGE = REPO / "src" / "hooklab"


def third_party_imports(sources: list[str]) -> set[str]:
    names = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a cell with a magic
            tree = ast.parse("\n".join(line for line in source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name != "hooklab"}


def test_a_student_install_has_everything_the_notebooks_import():
    sources = [cell.source for path in solution_notebooks() for cell in nbformat.read(path, as_version=4).cells
               if cell.cell_type == "code"]
    sources += [path.read_text()
                for path in [NOTEBOOK_PACKAGE / "checks.py", *sorted((NOTEBOOK_PACKAGE / "widgets").glob("*.py"))]]
    distributions = importlib.metadata.packages_distributions()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    student = {normalise(Requirement(text).name) for text in project["dependencies"]}
    for module in sorted(third_party_imports(sources)):
        providers = {normalise(name) for name in distributions.get(module, [])}
        assert providers & student, (f"the notebooks import {module} ({sorted(providers)}), which `pip install "
                                     "hooklab` does not bring")


GRADING_MODULES = ("nbgrader", "nbclient", "nbconvert", "tqdm", "distributed", "jupyterlab", "nh3")
WITHOUT_GRADING = f"""
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {GRADING_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Absent())
"""


def test_notebook_modules_import_without_the_grading_stack_and_the_command_says_what_to_install():
    code = WITHOUT_GRADING + ("import hooklab.checks, hooklab.widgets\nfrom hooklab.command import main\nsys.argv = "
                              "['hooklab', 'autograde', 'x']\nsys.exit(main())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "pip install 'hooklab[grading]'" in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_readme_student_install_takes_torchs_cpu_build_from_the_makefiles_index_at_the_locks_versions_and_an_extra_that_exists():  # noqa: E501 (a test's name cannot be wrapped)
    index = re.search(r"^TORCH_CPU_INDEX := (\S+)$", (REPO / "Makefile").read_text(), re.M).group(1)
    line = re.search(r"^pip install .*$", (REPO / "README.md").read_text(), re.M).group(0)
    assert f"--extra-index-url {index} " in line, f"README's first install line should add torch's CPU index ({index})"
    assert "--constraint requirements.lock " in line, "README's install line takes the lock's versions, as make does"
    extras = re.findall(r'"\.\[(\w+)\]"', line)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert extras and set(extras) <= set(project["optional-dependencies"]), f"README installs extras {extras}"
    assert "jupyterlab" in " ".join(project["optional-dependencies"][extras[0]]), ("the student install brings "
                                                                                   "JupyterLab")


def make(*arguments: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["make", *arguments], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_make_autograde_and_compat_print_their_usage_before_installing_anything(tmp_path):
    for target, usage in (("autograde", "usage: make autograde SUBMISSIONS="), ("compat", "usage: make compat TORCH=")):
        result = make(target, f"VENV={tmp_path / 'venv'}")
        assert result.returncode == 2 and result.stdout.startswith(usage), result.stdout + result.stderr
    assert not (tmp_path / "venv").exists(), "nothing was installed"


def test_the_full_install_says_on_its_first_run_what_it_installs_with_pips_progress(tmp_path):
    result = make("install", "-n", f"VENV={tmp_path / 'venv'}")
    assert "First run: installing" in result.stdout and "(a few minutes, about 1.8 GB;" in result.stdout, result.stdout
    install = result.stdout.split("-m pip install ")[-1]  # the install itself, after the probe for a local torch wheel
    assert "--progress-bar on" in install and "--quiet" not in install, install
    before = result.stdout.split("-m pip install ")[0]  # pip is silent for minutes while it unpacks torch: said before
    assert "unpacks torch for about 2-3 minutes without output" in before, result.stdout
    assert "a few minutes, about 1.8 GB" in (REPO / "README.md").read_text(), ("README's instructors section gives the "
                                                                               "same")


def test_make_points_to_readme_sections_that_exist_and_both_labs_say_what_they_start():
    headings = set(re.findall(r"^#+ (.+)$", (REPO / "README.md").read_text(), re.M))
    pointers = re.findall(r'README, (?:section )?\\?"([^"\\]+)\\?"', (REPO / "Makefile").read_text())
    assert pointers and set(pointers) <= headings, f"the Makefile names README sections {pointers}: not all are there"
    for target in ("lab", "instructor"):
        lines = make("-n", target).stdout.splitlines()
        assert any(line.startswith('echo "Starting JupyterLab') for line in lines), f"make {target} says nothing"
        assert re.search(rf"^\.SILENT:.* {target} ", (REPO / "Makefile").read_text(), re.M), (f"make {target} prints "
                                                                                         "its recipe")


def test_make_clean_removes_what_make_makes_but_never_the_students_working_copy():
    command = make("-n", "clean").stdout.split()
    assert {".venv", "build", "dist", "autograder/exchange", "autograder/grades.csv"} <= set(command), command
    assert "work" not in command and "work/" not in command
