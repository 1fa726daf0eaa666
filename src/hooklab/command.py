"""The ``hooklab`` command: the grading command line, or what to install for it.

``pip install hooklab`` brings what the notebooks import; grading needs ``hooklab[grading]``.
"""

from __future__ import annotations

import importlib.util
import sys

INSTALL_GRADING = "pip install 'hooklab[grading]'"
# What the grading extra brings that the command imports, looked for before it starts (it imports most of it
# only once it has started: hooklab.cli).
GRADING_MODULES = ("nbgrader", "nbclient", "tqdm", "nbconvert", "jupyter_client", "ipykernel", "distributed", "dask",
                   "nh3")


def main() -> int:
    try:
        missing = next((name for name in GRADING_MODULES if importlib.util.find_spec(name) is None), None)
        if missing is None:
            from hooklab.cli import leave, main as command

            return leave(command())
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in GRADING_MODULES:
            raise
        missing = error.name
    print(f"hooklab: grading needs the package's grading extra ({missing} is not installed): {INSTALL_GRADING}",
          file=sys.stderr)
    return 2
