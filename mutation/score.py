"""``make mutants``: how many wrong answers the hidden tests catch, every notebook, several seeds: mutants of each
solution, and the wrong readings of the test catalogue (:mod:`catalogues.wrong_readings`) beside them.

For every exercise, every mutant of its solution (:mod:`mutation.mutate`) is run and judged as the grader judges a
submission (:mod:`mutation.runner`), under ``SEEDS`` seeds drawn afresh (``MUTANT_SEEDS="1 2 3"`` runs given ones).
A mutant is **killed** only if its exercise's tests fail under every seed: one that passes under any seed survives.
Mutants that behave as the solution does by construction are listed, each with its reason, in ``equivalent.txt``
beside this file, and left out of the score. Prints one line per notebook (killed/non-equivalent), then each
survivor with its diff, then the pack's score. A mutant or reading that failed under some seed only because its run
was stopped (it ran past the runner's time) is counted as caught, as the grader's timeout fails a cell, but is also
named apart: a hang of the runner itself would otherwise read as a perfect score.

Usage: python -m mutation.score [NOTEBOOK_FOLDER ...]   (make mutants; make mutants NOTEBOOKS=02_forward_hooks)
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from mutation.mutate import diff, mutants, solution_lines
from mutation.runner import NOT_JUDGED, TIMED_OUT, exercises

REPO = Path(__file__).resolve().parent.parent
EQUIVALENT = Path(__file__).with_name("equivalent.txt")
SEEDS = 3
LINE = re.compile(r"^(?P<notebook>\S+) (?P<key>[^#]+?)\s+# (?P<reason>.+)$")


def equivalents() -> dict[str, str]:
    """"<folder> <grade_id>|<mutant key>" → why it behaves as the solution does."""
    found = {}
    for line in EQUIVALENT.read_text().splitlines() if EQUIVALENT.exists() else []:
        match = None if line.startswith("#") else LINE.match(line.strip())
        if match:
            found[f"{match['notebook']} {match['key']}"] = match["reason"]
    return found


def run(notebook: Path, seed: str, keys: list[str], readings: dict[str, dict[str, str]] | None = None
        ) -> dict[str, str]:
    """The runner's verdicts for the mutants ``keys`` of ``notebook`` under ``seed`` (all of them when empty), or,
    given ``readings`` ({grade_id: {name: answer source}}), for those answers instead."""
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        wanted, out, answers = Path(scratch) / "keys.json", Path(scratch) / "out.json", Path(scratch) / "readings.json"
        wanted.write_text(json.dumps(keys))
        extra = []
        if readings is not None:
            answers.write_text(json.dumps(readings))
            extra = [str(answers)]
        env = {**os.environ, "MPLBACKEND": "agg", "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "mutation.runner", str(notebook), seed, str(wanted), str(out), *extra],
                       cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return json.loads(out.read_text())


def catalogued_readings(folder: str) -> dict[str, dict[str, str]]:
    """The wrong readings of ``tests/catalogues`` for a notebook: {grade_id: {name: answer source}}."""
    sys.path.insert(0, str(REPO / "tests"))
    from catalogues.wrong_readings import readings

    found: dict[str, dict[str, str]] = {}
    for wrong in readings():
        if wrong.assignment == folder:
            found.setdefault(wrong.grade_id, {})[wrong.name] = wrong.source
    return found


def readings_score(notebook: Path, seeds: list[str]) -> tuple[int, int, list[str], list[str]]:
    """(caught, catalogued, the names of those the tests pass under some seed, the names of those caught but stopped
    by the timeout under some seed) for a notebook's wrong readings, judged as the grader judges them; a reading is
    caught only if its exercise's tests fail it under every seed."""
    catalogued = catalogued_readings(notebook.parent.name)
    total = sum(len(names) for names in catalogued.values())
    if not total:
        return 0, 0, [], []
    escaped: set[str] = set()
    timed_out: set[str] = set()
    for seed in seeds:
        verdicts = run(notebook, seed, [], catalogued)
        escaped |= {key for key, why in verdicts.items() if not why or why.startswith(NOT_JUDGED)}
        timed_out |= {key for key, why in verdicts.items() if why.startswith(TIMED_OUT)}
        ran = {key.removeprefix(f"{grade_id}|reading: ") for grade_id in catalogued for key in verdicts
               if key.startswith(f"{grade_id}|reading: ")}
        escaped |= {f"{grade_id}|reading: {name} (not run)" for grade_id, names in catalogued.items()
                    for name in names if name not in ran}
    return (total - len(escaped), total, sorted(f"{notebook.parent.name} {key}" for key in escaped),
            sorted(f"{notebook.parent.name} {key}" for key in timed_out - escaped))


def score(notebook: Path, seeds: list[str], known: dict[str, str]) -> tuple[int, int, list[str], list[str], list[str]]:
    """(killed, non-equivalent mutants, survivors' descriptions, equivalents listed but not found, the killed stopped
    by the timeout under some seed) for a notebook."""
    folder = notebook.parent.name
    verdicts = run(notebook, seeds[0], [])
    alive = {key for key, why in verdicts.items() if not why or why.startswith(NOT_JUDGED)}
    timed_out = {key for key, why in verdicts.items() if why.startswith(TIMED_OUT)}
    for seed in seeds[1:]:
        killed_so_far = sorted(key for key in verdicts if key not in alive and not key.endswith("|"))
        if killed_so_far:
            again = run(notebook, seed, killed_so_far)
            alive |= {key for key, why in again.items() if not why or why.startswith(NOT_JUDGED)}
            timed_out |= {key for key, why in again.items() if why.startswith(TIMED_OUT)}
    nb = nbformat.read(notebook, as_version=4)
    sources = {ex["grade_id"]: solution_lines(nb.cells[ex["index"]].source) for ex in exercises(nb)}
    survivors, counted, killed, stopped = [], 0, 0, []
    for key, why in sorted(verdicts.items()):
        grade_id, _, mutant_key = key.partition("|")
        if not mutant_key:
            survivors.append(f"{folder} {grade_id}: {why}")
            continue
        if f"{folder} {key}" in known:
            continue
        counted += 1
        if key not in alive:
            killed += 1
            if key in timed_out:
                stopped.append(f"{folder} {key}")
            continue
        source, lines = sources[grade_id]
        mutant = next(m for m in mutants(source, lines) if m.key == mutant_key)
        survivors.append(f"{folder} {key}\n" + "\n".join(f"    {line}" for line in diff(source, mutant).splitlines()))
    stale = [k for k in known if k.startswith(f"{folder} ") and k.removeprefix(f"{folder} ") not in verdicts]
    return killed, counted, survivors, stale, stopped


def main(folders: list[str]) -> int:
    notebooks = sorted(p for p in REPO.glob("solutions/*/*.ipynb") if not folders or p.parent.name in folders)
    seeds = os.environ.get("MUTANT_SEEDS", "").split() or [str(secrets.randbits(63)) for _ in range(SEEDS)]
    known = equivalents()
    print(f"seeds: {' '.join(seeds)} (MUTANT_SEEDS=\"...\" runs them again)", flush=True)
    lines, survivors, stale, stopped, total_killed, total = [], [], [], [], 0, 0
    started = time.perf_counter()
    for notebook in notebooks:
        killed, counted, left, gone, timed_out = score(notebook, seeds, known)
        listed = sum(1 for k in known if k.startswith(f"{notebook.parent.name} "))
        share = f"; {listed} equivalent ({100 * listed / max(1, counted + listed):.1f}%)" if listed else ""
        caught, catalogued, escaped, readings_timed_out = readings_score(notebook, seeds)
        readings_line = f"; wrong readings caught {caught}/{catalogued}" if catalogued else ""
        stopped_line = (f"; stopped by the timeout: {len(timed_out)} mutants, {len(readings_timed_out)} readings"
                        if timed_out or readings_timed_out else "")
        line = (f"{notebook.parent.name}  {killed}/{counted} ({100 * killed / max(1, counted):.1f}%){share}"
                f"{readings_line}{stopped_line}")
        print(line, flush=True)
        lines.append(line)
        survivors += left + [f"{name} (a wrong reading)" for name in escaped]
        stale += gone
        stopped += timed_out + [f"{name} (a wrong reading)" for name in readings_timed_out]
        total_killed, total = total_killed + killed, total + counted
    print("\nSurvivors (the tests pass them under some seed):" if survivors else "\nNo survivors.")
    for survivor in survivors:
        print(survivor)
    for key in stale:
        print(f"listed as equivalent but no longer made: {key}")
    if stopped:
        print(f"\nCaught only because the runner stopped them under some seed (a hang, counted as caught; check that "
              f"the answer itself hangs): {len(stopped)}")
        for key in stopped:
            print(key)
    print(f"\nmutation score: {total_killed}/{total} ({100 * total_killed / max(1, total):.1f}%) "
          f"in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
