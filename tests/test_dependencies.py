"""One source of truth for versions: requirements.lock pins them, environment.yml must agree."""

from __future__ import annotations

import re
import tomllib

import yaml
from packaging.requirements import Requirement

from conftest import REPO

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
    return pins


def pyproject_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [text for extra in project["optional-dependencies"].values() for text in extra]
    return [Requirement(text) for text in project["dependencies"] + extras]


def direct_dependencies() -> set[str]:
    return {normalise(requirement.name) for requirement in pyproject_requirements()}


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    assert lock_pins()["torch"] == "2.13.0"


def test_environment_yml_versions_match_the_lock():
    lock = lock_pins()
    mismatched = {name: (version, lock.get(name)) for name, version in conda_pins().items() if lock.get(name) != version}
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
        assert requirement.specifier.contains(pinned), f"requirements.lock has {requirement.name}=={pinned}, outside {requirement}"
