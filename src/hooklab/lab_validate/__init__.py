"""hooklab's Validate for the student lab (lab/student): a Jupyter server extension whose handler
(:mod:`.handler`) runs nbgrader's validator and answers a summary (:mod:`.summary`), and a prebuilt JupyterLab
extension (``labextension/``, built from ``js/`` by ``make labextension``) whose toolbar button shows it.

The wheel puts ``labextension/`` where JupyterLab finds prebuilt extensions, ``share/jupyter/labextensions/
hooklab-validate`` (pyproject.toml's data-files); the student lab enables the server extension
(``lab/student/jupyter_server_config.json``) in place of nbgrader's validate extension.
"""

from __future__ import annotations

from typing import Any

LABEXTENSION = "hooklab-validate"  # the JavaScript package's name (js/package.json)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hooklab.lab_validate"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": LABEXTENSION}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from jupyter_server.utils import url_path_join

    from hooklab.lab_validate.handler import ROUTE, ValidateHandler

    web_app = server_app.web_app
    web_app.add_handlers(".*$", [(url_path_join(web_app.settings["base_url"], ROUTE), ValidateHandler)])
    server_app.log.info("hooklab Validate: %s", ROUTE)
