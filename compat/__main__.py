"""Run the pack on another PyTorch release and print what a student would meet, notebook by notebook.

A throwaway environment ``build/compat/torch-<version>`` gets that torch and every other package at
``requirements.lock``'s versions (pip's site-wide constraint is replaced by the lock's, less its torch line).
In it, nbval runs the solution notebooks (cells whose stored output differs, and cells that raise: a graded
test failing the reference solution is one), and each student release runs as JupyterLab's Run All does
(it stops at the first error outside a cell tagged ``raises-exception``); a line written to stderr by any
cell is counted as a warning (nbgrader scores a test cell with stderr output as failed).

Usage: python -m compat VERSION [ASSIGNMENT ...] [--index URL]   (make compat TORCH=2.15.0 [TORCH_INDEX=url])
ASSIGNMENT names a folder of solutions/ (``10_hooks_inside_pytorch``) to run that notebook alone; none: every one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_ALL = Path(__file__).with_name("run_all.py")
DIFFER = "Cell outputs differ"  # nbval's message for a cell that ran and printed something else


def environment(version: str, index: str | None) -> Path:
    """The compat environment's python, made (or reused) with ``torch==version`` and the lock's other versions."""
    venv = REPO / "build" / "compat" / f"torch-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    constraints = venv / "constraints.txt"
    lock = (REPO / "requirements.lock").read_text().splitlines()
    constraints.write_text("\n".join(line for line in lock if not line.startswith("torch==")) + "\n")
    env = {**os.environ, "PIP_CONSTRAINT": str(constraints)}  # replaces the site's torch cap, for this environment only
    print(f"installing torch=={version} and the lock's other versions in {venv.relative_to(REPO)} …", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"torch=={version}",
                    *(["--extra-index-url", index] if index else []), "--editable", ".[grading,test]"],
                   cwd=REPO, env=env, check=True)
    return python


def assignments(names: list[str]) -> list[str]:
    """The assignment folders to run: those named, in the course's order (every one when none is named)."""
    known = sorted(notebook.parent.name for notebook in (REPO / "solutions").glob("*/*.ipynb"))
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"no assignment {', '.join(unknown)} in solutions/ (there are {', '.join(known)})")
    return [name for name in known if not names or name in names]


def nbval(python: Path, report: Path, folders: list[str]) -> dict[str, dict]:
    """nbval on these folders' solution notebooks in the compat environment, read by :func:`nbval_table`."""
    report.unlink(missing_ok=True)  # a report left by an earlier run is not this run's
    result = subprocess.run([str(python), "-m", "pytest", "-q", *(f"solutions/{folder}" for folder in folders),
                             f"--junitxml={report}"], cwd=REPO, capture_output=True, text=True, check=False)
    if not report.exists():
        raise RuntimeError(f"nbval did not run (pytest exited with {result.returncode}):\n"
                           f"{(result.stdout + result.stderr).strip()[-2000:]}")
    return nbval_table(report)


def nbval_table(report: Path) -> dict[str, dict]:
    """Per solution notebook folder, from nbval's JUnit report: its cells, those whose output differs, those that
    raise, and which they are (nbval's names: "Cell 3" is the notebook's fourth code cell)."""
    table: dict[str, dict] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        folder = Path(case.get("file") or case.get("classname", "").replace(".", "/")).parts[1]
        row = table.setdefault(folder, {"cells": 0, "differ": 0, "raise": 0, "which": {"differ": [], "raise": []}})
        row["cells"] += 1
        failure = case.find("failure")
        if failure is not None:  # nbval's reasons: "Cell outputs differ", or the cell raised or timed out
            reason = "differ" if DIFFER in (failure.get("message") or "") + (failure.text or "") else "raise"
            row[reason] += 1
            row["which"][reason].append(case.get("name", "?"))
    return table


def counted_cells(row: dict, reason: str) -> str:
    """A count of the table, with the cells it counts."""
    which = row.get("which", {}).get(reason)
    return f"{row[reason]} ({', '.join(which)})" if which else str(row[reason])


def run_all(python: Path, notebook: Path) -> dict[str, object]:
    """Run All on a student release, in the compat environment (:mod:`compat.run_all`)."""
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}  # its kernel is that python's
    result = subprocess.run([str(python), str(RUN_ALL), str(notebook)], cwd=notebook.parent, env=env,
                            capture_output=True, text=True, check=False)
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"stopped": f"could not run: {result.stderr.strip()[-200:]}", "warnings": []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", help="the torch release, e.g. 2.15.0")
    parser.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                        help="folders of solutions/ to run (e.g. 10_hooks_inside_pytorch); none: every one")
    parser.add_argument("--index", help="an extra package index for torch (e.g. PyTorch's CPU index)")
    args = parser.parse_args()
    try:
        folders = assignments(args.assignments)
    except ValueError as error:
        parser.error(str(error))
    python = environment(args.version, args.index)
    installed = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
    print(f"torch {installed}: nbval on solutions/, Run All on notebooks/ …", flush=True)
    solutions = nbval(python, python.parent.parent / "nbval.xml", folders)
    print("\n| notebook | nbval: outputs differ | nbval: cells raise | Run All of the release | warnings |")
    print("|---|---|---|---|---|")
    clean = True
    for folder in folders:
        notebook = next((REPO / "notebooks" / folder).glob("*.ipynb"))
        row = solutions.get(folder, {"cells": 0, "differ": 0, "raise": 0})
        release = run_all(python, notebook)
        warnings = release["warnings"]
        clean &= bool(row["cells"]) and not (row["differ"] or row["raise"] or release["stopped"] or warnings)
        print(f"| {folder} | {counted_cells(row, 'differ')} of {row['cells']} | {counted_cells(row, 'raise')} | "
              f"{release['stopped'] or 'reaches the end'} | "
              f"{len(warnings)}{': ' + '; '.join(warnings)[:300] if warnings else ''} |")
    scope = ", ".join(folders) if args.assignments else "every notebook"
    print(f"\ntorch {installed}: {scope} {'clean' if clean else 'NOT clean'}")
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
