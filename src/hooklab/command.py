"""The ``hooklab`` command: the grading command line, or what to install for it.

``pip install hooklab`` brings what the notebooks import; grading needs ``hooklab[grading]``.
"""

from __future__ import annotations

import sys

INSTALL_GRADING = "pip install 'hooklab[grading]'"


def main() -> int:
    try:
        from hooklab.cli import main as command
    except ModuleNotFoundError as error:
        if (error.name or "").startswith("hooklab"):
            raise
        print(f"hooklab: grading needs the package's grading extra ({error.name} is not installed): {INSTALL_GRADING}",
              file=sys.stderr)
        return 2
    return command()
