"""JupyterLab in headless Chromium: a solution notebook's widgets render and respond to clicks, Run All
on a blank release reaches the widgets after its open exercises and its last cell sums up the tests, Run All
on 09's and 10's solutions passes every exercise, a puzzle of each kind (hook timeline, apply order, vanishing
gradients) is solved by clicking, the student lab (`make lab`, on its working copy, kernels over IPC) shows
Validate and nothing of nbgrader's instructor or exchange panels, the instructor lab (`make instructor`) opens
Formgrader on the course, and the instructor's report and a student's feedback page open without errors.

Runs when Chromium is installed (``apt-get install chromium``; ``make test-browser`` runs only this);
skipped with the reason otherwise, unless HOOKLAB_REQUIRE_BROWSER=1 (CI), which makes that a failure.
The screenshot goes to build/browser/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest

from conftest import COURSE_CONFIG, REPO, jupyterlab as conftest_jupyterlab, make_course
from hooklab import exercises
from lab import working_copy

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

CHROMIUM = Path(os.environ.get("HOOKLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
NOTEBOOK = REPO / "solutions" / "04_apply" / "apply.ipynb"
BLANK = REPO / "notebooks" / "03_backward_hooks" / "backward_hooks.ipynb"  # a HookTimeline after open exercises
VANISHING = REPO / "solutions" / "06_applications" / "applications.ipynb"  # a VanishingPuzzle
BELOW = REPO / "solutions" / "09_below_the_module" / "below_the_module.ipynb"  # modes, hooks, anomaly mode
INSIDE = REPO / "solutions" / "10_hooks_inside_pytorch" / "hooks_inside_pytorch.ipynb"  # a one-process gloo group
SCREENSHOTS = REPO / "build" / "browser"
SETTINGS = {  # private JupyterLab settings: every cell in the DOM
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}

if not CHROMIUM.exists():
    message = f"Chromium not found at {CHROMIUM}: browser test not run (apt-get install chromium; make test-browser)"
    if os.environ.get("HOOKLAB_REQUIRE_BROWSER") == "1":
        raise RuntimeError(message)
    pytest.skip(message, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402 (imported only where Chromium is)


def jupyterlab(scratch: Path, root: Path, mode: str, course_config: Path):
    """conftest's JupyterLab in ``mode`` (stopped by stop_server) with these private settings; yields (base, token)."""
    return conftest_jupyterlab(scratch, root, mode, course_config, SETTINGS)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path], str]]:
    """The student lab (`make lab`) serving its working copy of the notebooks (autosave can't touch solutions/ or
    notebooks/); yields a notebook's URL by its path."""
    scratch = tmp_path_factory.mktemp("lab")
    release, root = scratch / "release", scratch / "work"
    notebooks = (NOTEBOOK, BLANK, VANISHING, BELOW, INSIDE)
    for notebook in notebooks:
        (release / notebook.parent.name).mkdir(parents=True)
        shutil.copy(notebook, release / notebook.parent.name / notebook.name)
    assert len(working_copy.update(release, root)) == len(notebooks), ("make lab's working copy takes every notebook "
                                                                       "of the release")
    with jupyterlab(scratch, root, "student", COURSE_CONFIG.parent) as (base, token):
        # one workspace per notebook, so that a page shows that notebook alone
        def url(notebook: Path) -> str:
            return (f"{base}/lab/workspaces/{notebook.stem}/tree/{notebook.parent.name}/{notebook.name}"
                    f"?reset&token={token}")

        url.log = scratch / "lab.log"  # the server's (and its kernels') messages
        yield url


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
        "  return [...panel.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].every(p => "
        "/\\[\\d+\\]/.test(p.textContent))    && panel.sessionContext.session.kernel.status === 'idle'; }",
                           timeout=120_000)
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


def test_run_all_on_a_blank_release_reaches_the_widgets_after_open_exercises(browser: Browser,
                                                                             lab: Callable[[Path], str]):
    page = run_all(browser, lab(BLANK))
    errors = page.evaluate("""() => [...window.jupyterapp.shell.currentWidget.content.model.cells]
        .filter(cell => cell.type === 'code')
        .flatMap(cell => [...cell.outputs.toJSON()].filter(output => output.output_type === 'error')
            .map(output => [output.ename, (cell.getMetadata('tags') || []).includes('raises-exception')]))""")
    exercises = len([c for c in nbformat.read(BLANK, as_version=4).cells
                     if c.metadata.get("nbgrader", {}).get("solution")])
    assert [name for name, _ in errors].count("NotImplementedError") >= exercises, f"each open exercise fails: {errors}"
    assert all(tagged for _, tagged in errors), f"an error outside the cells tagged raises-exception: {errors}"
    page.evaluate("""() => { const notebook = window.jupyterapp.shell.currentWidget.content;
        return notebook.scrollToItem(notebook.widgets.length - 1); }""")  # outputs render once scrolled to
    tests = len([c for c in nbformat.read(BLANK, as_version=4).cells if c.metadata.get("nbgrader", {}).get("grade")])
    summary = page.locator(".jp-OutputArea-output", has_text="exercises pass their visible tests")
    expect(summary).to_contain_text(f"0 of {tests} exercises pass")  # the last cell sums up the tests Run All ran
    expect(summary).to_contain_text("Exercise 1 — ")
    timeline = page.locator(".jp-OutputArea-output", has_text="forward pre-hook")
    expect(timeline.locator(".widget-slider")).to_have_count(1)
    assert page.get_by_text("Error displaying widget").count() == 0, "a widget failed to render"
    timeline.get_by_role("button", name="Next").click()
    expect(timeline).to_contain_text(re.compile(r"event2Next2/\d+ · forward"))  # slider and caption both at event 2


def puzzle_output(page: Page, source: str, text: str):
    """The output of the first code cell whose source holds ``source``, scrolled to (outputs render once
    scrolled to), as the output area holding ``text``."""
    index = page.evaluate("""source => [...window.jupyterapp.shell.currentWidget.content.model.cells]
        .findIndex(cell => cell.type === 'code' && cell.sharedModel.getSource().includes(source))""", source)
    assert index >= 0, f"no cell with {source!r}"
    page.evaluate("index => window.jupyterapp.shell.currentWidget.content.scrollToItem(index)", index)
    output = page.locator(".jp-OutputArea-output", has_text=text)
    expect(output).to_have_count(1)
    output.scroll_into_view_if_needed()
    return output


def test_a_timeline_puzzle_is_solved_by_clicking_the_events_in_order(browser: Browser, lab: Callable[[Path], str]):
    page = run_all(browser, lab(BLANK))  # the puzzle uses no answer: it works on the blank release
    puzzle = puzzle_output(page, "puzzle=", "click these 9 events")
    expect(puzzle.locator(".widget-slider")).to_be_hidden()
    order = ["forward hook on 0 (Linear)", "forward hook on 1 (Tanh)", "forward hook on model (Sequential)",
             "backward pre-hook on model (Sequential)", "backward pre-hook on 1 (Tanh)", "backward hook on 1 (Tanh)",
             "backward pre-hook on 0 (Linear)", "backward hook on 0 (Linear)", "backward hook on model (Sequential)"]
    for event in order:
        choice = puzzle.get_by_role("button", name=event, exact=True)
        choice.click()
        expect(choice).to_be_disabled()
    puzzle.get_by_role("button", name="Check").click()
    expect(puzzle).to_contain_text("solved in 1 try")
    expect(puzzle.locator(".widget-slider")).to_be_visible()  # the real timeline, stepping as without a puzzle
    assert puzzle.locator(".hooklab-wrong").count() == 0
    puzzle.get_by_role("button", name="Next").click()
    expect(puzzle).to_contain_text(re.compile(r"2/20 · forward · forward pre-hook"))
    assert page.get_by_text("Error displaying widget").count() == 0, "a widget failed to render"


def test_an_apply_order_puzzle_marks_a_wrong_order_then_shows_the_answer(browser: Browser, lab: Callable[[Path], str]):
    page = run_all(browser, lab(NOTEBOOK))
    puzzle = puzzle_output(page, "ApplyOrder(model, puzzle=True)", "click the 7 modules")
    preorder = ["model: Model", "ab: LayerAB", "a: FunctionA", "b: FunctionB", "cd: LayerCD", "c: FunctionC",
                "d: FunctionD"]
    for module in preorder:  # as modules() lists them: wrong
        puzzle.get_by_role("button", name=module, exact=True).click()
    puzzle.get_by_role("button", name="Undo").click()
    puzzle.get_by_role("button", name="d: FunctionD", exact=True).click()
    puzzle.get_by_role("button", name="Check").click()
    expect(puzzle).to_contain_text("try 1: 7 wrong")
    expect(puzzle.locator("li.hooklab-wrong")).to_have_count(7)
    puzzle.get_by_role("button", name="Show answer").click()
    expect(puzzle).to_contain_text("answer shown after 1 try")
    expect(puzzle).to_contain_text("apply has visited 7 of 7")
    # the tree, each module marked with the student's number
    expect(puzzle.locator("div.hooklab-wrong")).to_have_count(7)
    expect(puzzle).to_contain_text("[7] model: Model ✗ you: 1")
    puzzle.get_by_role("button", name="Back").click()
    expect(puzzle).to_contain_text("apply has visited 6 of 7")


def test_a_vanishing_gradient_puzzle_is_solved_and_shows_the_plot(browser: Browser, lab: Callable[[Path], str]):
    page = run_all(browser, lab(VANISHING))
    puzzle = puzzle_output(page, "VanishingPuzzle()", "where is the gradient norm smallest")
    expect(puzzle.locator("img")).to_be_hidden()
    sigmoid, relu = puzzle.locator(".widget-toggle-buttons").all()
    sigmoid.get_by_role("button", name="last layer").click()
    relu.get_by_role("button", name="none: all within 10×").click()
    puzzle.get_by_role("button", name="Check").click()
    expect(puzzle).to_contain_text("try 1: 1 wrong")
    expect(puzzle.locator(".hooklab-wrong")).to_have_count(1)
    sigmoid.get_by_role("button", name="first layer").click()
    puzzle.get_by_role("button", name="Check").click()
    expect(puzzle).to_contain_text("solved in 2 tries")
    expect(puzzle.locator("img")).to_be_visible()  # per-layer gradient norms on a log scale
    page.wait_for_function("img => img.complete && img.naturalWidth > 400", arg=puzzle.locator("img").element_handle())
    puzzle.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "06_vanishing_puzzle.png")


def console_errors(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.mark.parametrize("solution", [BELOW, INSIDE], ids=lambda solution: solution.parent.name)
def test_run_all_passes_every_exercise_on_a_kernel_that_talks_over_ipc(browser: Browser, lab: Callable[[Path], str],
                                                                        solution: Path):
    """09 (modes, anomaly mode) and 10 (a one-process gloo group for DDP's communication hooks) in the student lab."""
    page = run_all(browser, lab(solution))
    page.evaluate("""() => { const notebook = window.jupyterapp.shell.currentWidget.content;
        return notebook.scrollToItem(notebook.widgets.length - 1); }""")
    exercises = len([c for c in nbformat.read(solution, as_version=4).cells
                     if c.metadata.get("nbgrader", {}).get("grade")])
    summary = page.locator(".jp-OutputArea-output", has_text="exercises pass their visible tests")
    expect(summary).to_contain_text(f"{exercises} of {exercises} exercises pass")  # every test cell ran and passed
    page.close()
    log = lab.log.read_text()
    assert "Starting buffering for" in log or "Kernel started" in log, ("no kernel started in the lab's "
                                                                        f"log:\n{log[-2000:]}")
    assert "without encryption" not in log, "a kernel of the lab runs over TCP (lab/course: KernelManager.transport)"


def test_the_student_lab_shows_validate_and_nothing_of_the_instructor_or_exchange(browser: Browser,
                                                                                  lab: Callable[[Path], str]):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = console_errors(page)
    page.goto(lab(BLANK))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel")
    expect(page.get_by_role("button", name="Validate")).to_be_visible()
    commands = page.evaluate("() => window.jupyterapp.commands.listCommands()")
    instructor = [c for c in commands if c.startswith("nbgrader:") and c != "nbgrader:validate-assignment"]
    assert not instructor, f"nbgrader's instructor or exchange commands in the student lab: {instructor}"
    for text in ("Formgrader", "Assignment List", "Course List", "Create Assignment", "Nbgrader"):
        assert page.get_by_text(text, exact=True).count() == 0, f"{text} shows in the student lab"
    page.wait_for_timeout(2000)  # a news prompt or an exchange error would be up by now
    dialogs = page.locator(".jp-Dialog, .jp-toast-message")
    assert dialogs.count() == 0, dialogs.all_inner_texts()
    assert not errors, f"console errors: {errors}"
    base = lab(BLANK).split("/lab/")[0]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/formgrader?token={lab(BLANK).rsplit('token=', 1)[1]}", timeout=10)
    assert refused.value.code == 404


def test_the_student_labs_validate_sums_up_the_visible_tests_without_source_or_traceback(browser: Browser,
                                                                                        lab: Callable[[Path], str]):
    """The pack's Validate (hooklab.lab_validate) in place of nbgrader's: a summary, one line per failing exercise."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = console_errors(page)
    page.goto(lab(BLANK))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    assert page.locator(".validate-button").count() == 0, "nbgrader's own Validate button is in the student lab"
    button = page.get_by_role("button", name="Validate")
    expect(button).to_have_count(1)
    button.click()
    dialog = page.locator(".jp-Dialog")
    tests = [cell for _, cell in exercises.test_cells(nbformat.read(BLANK, as_version=4).cells)]
    expect(dialog).to_contain_text(f"0 of {len(tests)} exercises pass their visible tests", timeout=180_000)
    text = dialog.inner_text()
    assert "is not written yet" in text and "Exercise 1 — " in text, text
    assert "Traceback" not in text and "NotImplementedError" not in text, text
    for cell in tests:
        assert cell.source.strip().splitlines()[0] not in text, f"a test's source in the summary: {text}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "validate_summary.png")
    dialog.get_by_role("button", name="Ok").click()
    expect(dialog).to_have_count(0)
    assert not errors, f"console errors: {errors}"
    base, token = lab(BLANK).split("/lab/")[0], lab(BLANK).rsplit("token=", 1)[1]
    outside = urllib.request.Request(f"{base}/hooklab/validate", data=json.dumps({"path": "../../etc/passwd"}).encode(),
                                     headers={"Authorization": f"token {token}"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(outside, timeout=10)
    assert refused.value.code == 403
    assert json.load(refused.value)["message"] == ("Validate checks notebooks in the lab's folder only: this one is "
                                                   "outside it")


def test_the_instructor_lab_opens_formgrader_on_the_course(browser: Browser, tmp_path: Path):
    course = make_course(tmp_path / "course")
    with jupyterlab(tmp_path, course, "instructor", course) as (base, token):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors = console_errors(page)
        page.goto(f"{base}/formgrader?token={token}")
        for assignment in ("01_module_basics", "07_memory_hooks"):
            expect(page.get_by_text(assignment, exact=True).first).to_be_visible(timeout=60_000)
        for banner in ("#warning-exchange", "#warning-course-id", "#warning-windows"):  # the course's exchange works
            expect(page.locator(banner)).to_have_count(0)
        assert not errors, f"console errors: {errors}"
        page.goto(f"{base}/lab/workspaces/instructor?reset&token={token}")
        page.wait_for_function("() => window.jupyterapp && "
                               "window.jupyterapp.commands.hasCommand('nbgrader:open-formgrader')",
                               timeout=60_000)
        assert not page.evaluate("() => window.jupyterapp.commands.hasCommand('hooklab:validate')"), (
            "the student lab's Validate in the instructor lab (lab/course turns it off)")
        page.wait_for_timeout(2000)
        assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").all_inner_texts()


def test_the_instructors_report_loads_with_its_plots(browser: Browser, tmp_path: Path):
    from hooklab.grading.class_data import ClassData, SubmissionResult, aggregate
    from hooklab.grading.class_report import render

    cells = {"02_forward_hooks": {"forward_hooks/collect_hooks_test": 2.0, "forward_hooks/change_hooks_test": 3.0},
             "03_backward_hooks": {"backward_hooks/backward_collect_test": 2.0}}
    data = ClassData(cells, [
        SubmissionResult("ada", "02_forward_hooks", 5.0, 5.0,
                         {"forward_hooks/collect_hooks_test": 2.0, "forward_hooks/change_hooks_test": 3.0}),
        SubmissionResult("bob", "02_forward_hooks", 2.0, 5.0,
                         {"forward_hooks/collect_hooks_test": 2.0, "forward_hooks/change_hooks_test": 0.0},
                         failures={"forward_hooks/change_hooks_test": "AnswerError: output should be x1 + x2 + 5"}),
        SubmissionResult("cy", "03_backward_hooks", 0.0, 2.0, {"backward_hooks/backward_collect_test": 0.0},
                         status="held", reasons=["backward_hooks: changed: torch.allclose"], would_be=2.0),
    ])
    feedback = tmp_path / "feedback" / "ada" / "02_forward_hooks" / "forward_hooks.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text("<!DOCTYPE html><title>ada's feedback</title><h1>forward_hooks (Score: 5 / 5)</h1>")
    links = {"ada/02_forward_hooks": [("forward_hooks", "feedback/ada/02_forward_hooks/forward_hooks.html")]}
    (tmp_path / "report.html").write_text(render(aggregate(data), {"submissions executed": 3}, [], links))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = console_errors(page)
    page.goto((tmp_path / "report.html").as_uri())
    images = page.locator("img")
    expect(images).to_have_count(2)  # one figure per assignment
    decoded = page.evaluate("() => [...document.images].map(image => image.complete && image.naturalWidth > 100)")
    assert decoded == [True, True], "a plot did not load"
    expect(page.get_by_text("output should be x1 + x2 + 5").first).to_be_visible()
    expect(page.get_by_text("changed: torch.allclose").first).to_be_visible()
    assert not errors, f"console errors: {errors}"
    page.screenshot(path=SCREENSHOTS / "report.png", full_page=True)
    # a row of the table links to the feedback page
    page.locator("#submissions + table a", has_text="forward_hooks").click()
    expect(page.get_by_text("forward_hooks (Score: 5 / 5)")).to_be_visible()


def test_a_feedback_page_opens_with_exercises_in_its_contents_and_widgets_as_text(browser: Browser, tmp_path: Path):
    # nbgrader's feedback page, as generate_feedback writes it with this course's exporter
    from test_feedback import render

    nb = nbformat.read(REPO / "solutions" / "02_forward_hooks" / "forward_hooks.ipynb", as_version=4)
    (tmp_path / "forward_hooks.html").write_text(render(nb, "nbgrader"))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = console_errors(page)
    page.goto((tmp_path / "forward_hooks.html").as_uri())
    contents = page.locator("#toc li")
    expect(contents.first).to_contain_text("Exercise 1 — collect")
    assert "Test cell" not in " ".join(contents.all_inner_texts()), "every test is named by its exercise"
    # a widget, as text
    expect(page.get_by_text("Puzzle: click these 10 events in the order they fire").first).to_be_visible()
    assert not errors, f"console errors: {errors}"
    page.screenshot(path=SCREENSHOTS / "feedback.png", full_page=True)
