"""hooklab's Validate for the student lab (lab/student): a Jupyter server extension whose handler
(:mod:`.handler`) runs nbgrader's validator and answers a summary (:mod:`.summary`), and a prebuilt JupyterLab
extension (``labextensions/hooklab-validate/``, built from ``js/`` by ``make labextension``) whose toolbar button shows
it.

The student lab turns both on, in place of nbgrader's Validate: ``lab/student/jupyter_server_config.json`` the server
extension, ``lab/student/jupyter_server_config.py`` adds :data:`LABEXTENSIONS` to the folders where JupyterLab looks for
prebuilt extensions (so that an editable install, a wheel and conda's environment all find it, and other labs don't).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LABEXTENSIONS = Path(__file__).resolve().parent / "labextensions"  # holds hooklab-validate/ (package.json, static/)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hooklab.lab_validate"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextensions/hooklab-validate", "dest": "hooklab-validate"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from jupyter_server.utils import url_path_join

    from hooklab.lab_validate.handler import ROUTE, ValidateHandler

    web_app = server_app.web_app
    web_app.add_handlers(".*$", [(url_path_join(web_app.settings["base_url"], ROUTE), ValidateHandler)])
    server_app.log.info("hooklab Validate: %s", ROUTE)
