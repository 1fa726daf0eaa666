"""Run All on one student release, as JupyterLab does; prints one JSON line: where it stopped, and stderr lines.

Run by the compat environment's python (``python run_all.py NOTEBOOK``), so it imports only what that has.
"""

import json
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

notebook = nbformat.read(sys.argv[1], as_version=4)
stopped = ""
try:
    NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
except CellExecutionError as error:
    stopped = f"stops: {error.ename}: {error.evalue}"[:200]
warnings = [line for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
            if output.get("name") == "stderr" for line in output["text"].splitlines() if line.strip()]
print(json.dumps({"stopped": stopped, "warnings": warnings}))
