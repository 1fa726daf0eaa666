"""``POST /hooklab/validate`` with ``{"path": <notebook>}``: runs nbgrader's own validator on a notebook under the
server's root, with the lab's Jupyter and nbgrader configuration (as nbgrader's validate server extension does), and
answers ``{"lines": [...]}``, the summary of :mod:`hooklab.lab_validate.summary`. A path outside the root, or not a
notebook, is refused with a one-line message (``{"message": ...}``, as every Jupyter API error)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import nbformat
from jupyter_core.paths import jupyter_config_path
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from hooklab.exercises import test_cells
from hooklab.lab_validate.summary import NO_TESTS, could_not_validate, summary

ROUTE = "/hooklab/validate"


def nbgrader_config() -> Any:
    """The configuration nbgrader's validate handler gives its ``Validator``: every ``nbgrader_config`` on Jupyter's
    configuration path, the server's working folder first."""
    from nbgrader.apps import NbGrader  # here: importing nbgrader takes a second, the server starts without it

    paths = jupyter_config_path()
    paths.insert(0, os.getcwd())
    app = NbGrader()
    app.config_file_paths.append(paths)
    app.load_config_file()
    return app.config


def validate(path: Path, log: logging.Logger | None = None) -> list[str]:
    """The summary's lines for the notebook at ``path``: nbgrader's ``Validator`` run as its Validate button runs it
    (a fresh kernel, every cell), its results summed up; or one line saying why it could not run (the error in full
    goes to ``log``)."""
    from nbgrader.validator import Validator

    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # not JSON, not a notebook
        return could_not_validate(error)
    if not test_cells(notebook.cells):
        return [NO_TESTS]
    config = nbgrader_config()
    try:
        results = Validator(config=config).validate(str(path))
    except Exception as error:
        if log is not None:
            log.exception("hooklab Validate could not run %s", path)
        timeout = config.get("Execute", {}).get("timeout")
        return could_not_validate(error, timeout if isinstance(timeout, int | float) else None)
    return summary(notebook, results)


class ValidateHandler(APIHandler):
    auth_resource = "kernels"  # validating starts a kernel and runs the notebook's code in it

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.get_json_body() or {}
        relative = body.get("path") if isinstance(body, dict) else None
        if not isinstance(relative, str) or not relative:
            raise web.HTTPError(400, "Validate needs the path of a notebook")
        root = Path(self.contents_manager.root_dir).resolve()
        target = (root / relative.lstrip("/")).resolve()
        if not target.is_relative_to(root):  # (the messages leave the path out: tornado logs them as % formats)
            raise web.HTTPError(403, "Validate checks notebooks in the lab's folder only: this one is outside it")
        if target.suffix != ".ipynb" or not target.is_file():
            raise web.HTTPError(404, "Validate checks notebooks: there is none at this path in the lab's folder")
        try:
            lines = await asyncio.to_thread(validate, target, self.log)  # minutes at most, off the server's event loop
        except Exception as error:  # the configuration could not be read, ...: said in one line, logged in full
            self.log.exception("hooklab Validate failed on %s", target)
            lines = could_not_validate(error)
        self.finish({"lines": lines})
