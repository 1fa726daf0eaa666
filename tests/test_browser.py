"""JupyterLab in headless Chromium: a solution notebook's widgets render and respond to clicks, and
Run All on a blank release reaches the widgets after its open exercises.

Runs when Chromium is installed (``apt-get install chromium``; ``make test-browser`` runs only this);
skipped with the reason otherwise, unless HOOKLAB_REQUIRE_BROWSER=1 (CI), which makes that a failure.
The screenshot goes to build/browser/.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest

from conftest import REPO

CHROMIUM = Path(os.environ.get("HOOKLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
NOTEBOOK = REPO / "solutions" / "04_apply" / "apply.ipynb"
BLANK = REPO / "notebooks" / "03_backward_hooks" / "backward_hooks.ipynb"  # a HookTimeline after open exercises
SCREENSHOTS = REPO / "build" / "browser"
SETTINGS = {  # private JupyterLab settings: every cell in the DOM, no news prompt over the notebook
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
}

if not CHROMIUM.exists():
    message = f"Chromium not found at {CHROMIUM}: browser test not run (apt-get install chromium; make test-browser)"
    if os.environ.get("HOOKLAB_REQUIRE_BROWSER") == "1":
        raise RuntimeError(message)
    pytest.skip(message, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path], str]]:
    """JupyterLab on loopback with a token, serving copies of the notebooks (autosave can't touch
    solutions/ or notebooks/), with private settings and state; yields a notebook's URL by its path."""
    scratch = tmp_path_factory.mktemp("lab")
    root, log = scratch / "notebooks", scratch / "lab.log"
    root.mkdir()
    for notebook in (NOTEBOOK, BLANK):
        shutil.copy(notebook, root / notebook.name)
    for plugin, values in SETTINGS.items():
        path = scratch / "settings" / f"{plugin.replace(':', '/')}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None"],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        # one workspace per notebook, so that a page shows that notebook alone
        yield lambda notebook: f"{base}/lab/workspaces/{notebook.stem}/tree/{notebook.name}?reset&token={token}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def run_all(browser: Browser, url: str) -> Page:
    """Open a notebook, wait for its kernel, Run All, and wait until every code cell has run."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext?.session?.kernel")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.ready")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(  # every code cell has run (no "[*]" or "[ ]" prompt left) and the kernel is idle
        "() => { const panel = window.jupyterapp.shell.currentWidget;"
        "  return [...panel.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].every(p => /\\[\\d+\\]/.test(p.textContent))"
        "    && panel.sessionContext.session.kernel.status === 'idle'; }", timeout=120_000)
    return page


def test_widgets_render_and_step_in_jupyterlab(browser: Browser, lab: Callable[[Path], str]):
    page = run_all(browser, lab(NOTEBOOK))
    apply_order = page.locator(".jp-OutputArea-output", has_text="apply has visited")
    expect(apply_order).to_contain_text("apply has visited 0 of 7")

    assert page.get_by_text("Error displaying widget").count() == 0, "a widget failed to render"
    for selector in (".widget-button", ".widget-slider", ".widget-html"):
        assert apply_order.locator(selector).count() > 0, f"no {selector} in the ApplyOrder output"

    apply_order.get_by_role("button", name="Next").click()
    expect(apply_order).to_contain_text("apply has visited 1 of 7")
    expect(apply_order).to_contain_text("[1] a: FunctionA")

    expect(page.get_by_role("button", name="Validate")).to_be_visible()

    apply_order.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "04_apply.png")
    assert (SCREENSHOTS / "04_apply.png").stat().st_size > 10_000


def test_run_all_on_a_blank_release_reaches_the_widgets_after_open_exercises(browser: Browser, lab: Callable[[Path], str]):
    page = run_all(browser, lab(BLANK))
    errors = page.evaluate("""() => [...window.jupyterapp.shell.currentWidget.content.model.cells]
        .filter(cell => cell.type === 'code')
        .flatMap(cell => [...cell.outputs.toJSON()].filter(output => output.output_type === 'error')
            .map(output => [output.ename, (cell.getMetadata('tags') || []).includes('raises-exception')]))""")
    exercises = len([c for c in nbformat.read(BLANK, as_version=4).cells if c.metadata.get("nbgrader", {}).get("solution")])
    assert [name for name, _ in errors].count("NotImplementedError") >= exercises, f"each open exercise fails: {errors}"
    assert all(tagged for _, tagged in errors), f"an error outside the cells tagged raises-exception: {errors}"
    page.evaluate("""() => { const notebook = window.jupyterapp.shell.currentWidget.content;
        return notebook.scrollToItem(notebook.widgets.length - 1); }""")  # outputs render once scrolled to
    timeline = page.locator(".jp-OutputArea-output", has_text="forward pre-hook")
    expect(timeline.locator(".widget-slider")).to_have_count(1)
    assert page.get_by_text("Error displaying widget").count() == 0, "a widget failed to render"
    timeline.get_by_role("button", name="Next").click()
    expect(timeline).to_contain_text(re.compile(r"event2Next2/\d+ · forward"))  # slider and caption both at event 2
