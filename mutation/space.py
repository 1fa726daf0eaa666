"""Which dimensions of each exercise's input space the hidden tests explore, under a seed.

The solution notebook runs cell by cell in an IPython shell as ``hooklab autograde`` readies each cell (the seed
drawn for it from the run's, test cells without their expected values), hidden tests included. After an answer
cell with a listed space (:mod:`catalogues.exercises`), every function and method its cell defines is wrapped:
each call is shown, as it arrives, to the conditions of the exercise's dimensions
(:class:`catalogues.input_space.Dimension`), with the modes of the notebook switched off and gradients off so
that a condition is seen by no mode, hook or checker. The result: per exercise, whether each condition held on
some call, and the test cells the solution failed (none, or the run proves nothing).

Usage: python -m mutation.space NOTEBOOK_FOLDER [SEED ...]   (prints, per exercise, each dimension's verdict)
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SEEDS = ("space-1", "space-2")
WRAPPED_DUNDERS = {"__init__", "__call__", "__enter__", "__exit__", "__torch_function__", "__torch_dispatch__"}


class _Exercise:
    """One exercise's dimensions and what its answer's calls showed of them."""

    def __init__(self, dimensions: list[Any]) -> None:
        self.dimensions = [d for d in dimensions if d.holds is not None]
        self.held = {d.what: False for d in self.dimensions}
        self.counts: Counter[str] = Counter()
        self.raised = False

    def wrap(self, function: Any, target: str, current_test: list[str]) -> Any:
        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.observe(target, args, kwargs, current_test[0])
            try:
                result = function(*args, **kwargs)
            except BaseException:
                self.raised = True
                raise
            self.raised = False
            return result

        return recorded

    def observe(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any], test: str) -> None:
        import torch
        from torch.utils._python_dispatch import _disable_current_modes

        from catalogues.input_space import Call

        call = Call(target, args, kwargs, self.counts[target], self.raised, test)
        self.counts[target] += 1
        with torch._C.DisableTorchFunction(), _disable_current_modes(), torch.no_grad():
            for dimension in self.dimensions:
                if not self.held[dimension.what]:
                    try:
                        self.held[dimension.what] = bool(dimension.holds(call))
                    except Exception:  # a condition that does not apply to this call
                        pass


def _wrap_defined(namespace: dict[str, Any], names: set[str], exercise: _Exercise, current_test: list[str]) -> None:
    """Replace each named function in ``namespace``, and each method of each named class, by a recording one."""
    for name in names:
        value = namespace.get(name)
        if isinstance(value, type):
            for attribute, member in list(vars(value).items()):
                if attribute.startswith("__") and attribute not in WRAPPED_DUNDERS:
                    continue
                target = f"{name}.{attribute}"
                if isinstance(member, staticmethod):
                    setattr(value, attribute, staticmethod(exercise.wrap(member.__func__, target, current_test)))
                elif isinstance(member, classmethod):
                    setattr(value, attribute, classmethod(exercise.wrap(member.__func__, target, current_test)))
                elif callable(member) and hasattr(member, "__code__"):
                    setattr(value, attribute, exercise.wrap(member, target, current_test))
        elif callable(value) and hasattr(value, "__code__"):
            namespace[name] = exercise.wrap(value, name, current_test)


def explore(folder: str, seed: str) -> dict[str, Any]:
    """Run ``solutions/<folder>`` under ``seed``: {"held": {grade_id: {dimension: bool}}, "failed": [test cells]}."""
    from nbgrader import utils

    sys.path.insert(0, str(REPO / "tests"))
    from catalogues.input_space import space
    from hooklab import observations
    from hooklab.grading import judge
    from hooklab.grading.execute import cell_key
    from hooklab.grading.integrity.scan import definitions_of
    from mutation.runner import notebook_shell

    spaces = space().get(folder, {})
    path = next((REPO / "solutions" / folder).glob("*.ipynb"))
    nb, shell, source_ids = notebook_shell(path)
    exercises = {grade_id: _Exercise(dimensions) for grade_id, dimensions in spaces.items()}
    current_test = [""]
    failed = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        test = utils.is_grade(cell)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        current_test[0] = grade_id if test else ""
        observations.begin(observations.cell_seed(seed, path.stem, cell_key(cell, source_ids)), test)
        code = judge.without_expectations(cell.source) if test else cell.source
        result = shell.run_cell(code, store_history=False, silent=True)
        if result.error_before_exec or result.error_in_exec:
            error = result.error_before_exec or result.error_in_exec
            failed.append(f"{grade_id or 'a given cell'}: {type(error).__name__}: {error}"[:300])
        if grade_id in exercises and utils.is_solution(cell) and not test:
            _wrap_defined(shell.user_ns, definitions_of([cell.source]), exercises[grade_id], current_test)
    return {"held": {grade_id: exercise.held for grade_id, exercise in exercises.items()}, "failed": failed}


def explored(folder: str, seed: str) -> dict[str, Any]:
    """:func:`explore` in a fresh interpreter (a notebook's run leaves modes, hooks and globals behind)."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, "-m", "mutation.space", "--explore", folder, seed, out.name]
        subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True, timeout=900)
        return json.loads(Path(out.name).read_text())


def main(folder: str, *seeds: str) -> None:
    """Print, per exercise, each dimension with the seeds under which no call showed it."""
    results = {seed: explored(folder, seed) for seed in seeds or SEEDS}
    for seed, result in results.items():
        for failure in result["failed"]:
            print(f"seed {seed}: the solution failed {failure}")
    first = next(iter(results.values()))
    for grade_id, held in first["held"].items():
        print(grade_id)
        for what in held:
            missing = [seed for seed, result in results.items() if not result["held"][grade_id][what]]
            never = f"  (never under {', '.join(missing)})" if missing else ""
            print(f"  {'✗' if missing else '✓'} {what}{never}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--explore"]:
        Path(sys.argv[4]).write_text(json.dumps(explore(sys.argv[2], sys.argv[3])))
    else:
        main(*sys.argv[1:])
