"""What a student's feedback may show: results and messages, never a hidden test, nothing that runs or loads."""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from conftest import REPO
from hooklab.grading.feedback import NO_ALT, FeedbackExporter, HideHiddenTests, SafeHTMLExporter, accessible
from hooklab.grading.redaction import PROOF_PREFIX, REDACTED

HIDDEN = "check_close(scale(torch.tensor([3.0])), [6.0])"
TEST = f"""check_close(scale(torch.tensor([1.0])), [2.0])
### BEGIN HIDDEN TESTS
{HIDDEN}
### END HIDDEN TESTS
"""


def graded_notebook(*outputs) -> nbformat.NotebookNode:
    cell = new_code_cell(TEST, outputs=list(outputs))
    cell.metadata.nbgrader = {"grade": True, "grade_id": "scale_test", "points": 1, "solution": False, "locked": True}
    student = new_code_cell("print('mine')", outputs=[new_output("stream", name="stdout", text="mine\n")])
    return new_notebook(cells=[student, cell])


def feedback(*outputs) -> nbformat.NotebookNode:
    nb, _ = HideHiddenTests().preprocess(graded_notebook(*outputs), {})
    return nb


def test_the_test_cell_keeps_its_visible_lines_only():
    source = feedback().cells[1].source
    assert "check_close(scale(torch.tensor([1.0])), [2.0])" in source
    assert HIDDEN not in source and "HIDDEN TESTS" not in source


def test_an_error_quoting_the_whole_cell_is_redacted_line_by_line():
    quoted = f"{TEST}{PROOF_PREFIX}0123456789abcdef = True\n"
    error = new_output("error", ename="AssertionError", evalue=quoted, traceback=["Traceback", quoted])
    out = feedback(error).cells[1].outputs[0]
    assert out.traceback == [f"AssertionError: {out.evalue}"], "a test cell's traceback is reduced to its message"
    for forbidden in (HIDDEN, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", PROOF_PREFIX):
        assert forbidden not in out.evalue, f"{forbidden!r} reached the feedback"
    assert "check_close(scale(torch.tensor([1.0])), [2.0])" in out.evalue and REDACTED in out.evalue


def test_a_students_own_error_in_a_test_keeps_the_lines_of_their_cells_only():
    """An answer that raises inside a test: the message, then where the student's visible code raised (IPython's
    frames in cells other than test cells), not the test's lines nor torch's."""
    frames = ["\x1b[36mTraceback\x1b[39m (most recent call last):\n",
              f"  Cell \x1b[92mIn[2]\x1b[39m, line 3\n    {HIDDEN}\n",
              "  File /venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1821 in inner\n"
              "    args_result = hook(self, args)\n",
              "  Cell \x1b[92mIn[1]\x1b[39m\x1b[92m, line 2\x1b[39m in \x1b[95mdouble_inputs\x1b[39m\n"
              "\x1b[31m    x1, x2 = args\x1b[39m\n",
              "\x1b[31mValueError\x1b[39m: not enough values to unpack (expected 2, got 1)\n"]
    nb = graded_notebook(new_output("error", ename="ValueError", evalue="not enough values to unpack (expected 2, got "
                                    "1)", traceback=frames))
    nb.cells[0].execution_count, nb.cells[1].execution_count = 1, 2
    out, _ = HideHiddenTests().preprocess(nb, {})
    assert out.cells[1].outputs[0].traceback == ["ValueError: not enough values to unpack (expected 2, got 1)",
                                                 "  in double_inputs, line 2 of In [1]: x1, x2 = args"]


def test_a_students_frame_is_read_in_ipythons_default_traceback_mode_too():
    """nbgrader's own autograde runs kernels in IPython's Context mode: the frame names the function with its
    arguments and marks the line that raised with an arrow."""
    frame = ("\x1b[36mCell\x1b[39m In[1], line 2, in \x1b[36mdouble_inputs\x1b[39m\x1b[34m(module, args)\x1b[39m\n"
             "      1 def double_inputs(module, args):\n----> 2     x1, x2 = args\n      3     return x1, x2\n")
    nb = graded_notebook(new_output("error", ename="ValueError", evalue="no", traceback=[frame, "ValueError: no"]))
    nb.cells[0].execution_count = 1
    out, _ = HideHiddenTests().preprocess(nb, {})
    shown = out.cells[1].outputs[0].traceback
    assert shown == ["ValueError: no", "  in double_inputs, line 2 of In [1]: x1, x2 = args"]


def test_a_test_line_quoted_as_graded_is_shown_as_written_or_redacted_if_hidden():
    """A warning (or a traceback) quotes a test's line as the grader ran it, its expected value blanked: a visible
    line is shown as written (not as if None were expected), a hidden one is redacted, whatever the warning's class
    or message (an answer can raise its own)."""
    source = ("check_tensor(scale(torch.tensor([1.0])), torch.tensor([2.0]), 'visible')\n### BEGIN HIDDEN TESTS\n"
              "check_tensor(scale(torch.tensor([3.5])), torch.tensor([7.0]), 'hidden')\n### END HIDDEN TESTS\n")
    warned = ("/tmp/ipykernel_9/3.py:1: UserWarning: indexing\n"
              "  check_tensor(scale(torch.tensor([1.0])), None, 'visible')\n"
              "/tmp/ipykernel_9/3.py:3: Note: mine\n  pad\n"
              "  check_tensor(scale(torch.tensor([3.5])), None, 'hidden')\n")
    nb = graded_notebook(new_output("stream", name="stderr", text=warned))
    nb.cells[1].source = source
    out, _ = HideHiddenTests().preprocess(nb, {})
    assert out.cells[1].outputs[0].text == (
        "/tmp/ipykernel_9/3.py:1: UserWarning: indexing\n"
        "  check_tensor(scale(torch.tensor([1.0])), torch.tensor([2.0]), 'visible')\n"
        f"/tmp/ipykernel_9/3.py:3: Note: mine\n  pad\n{REDACTED}\n")


def test_a_line_printed_in_pieces_is_one_line_in_the_feedback_as_in_the_lab():
    """The kernel sends a stream as it is written ("args: ", then the rest): the lab shows one line; the course's
    feedback preprocessors (but nbgrader's GetGrades, which reads the gradebook) join the pieces."""
    from importlib import import_module

    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO / "autograder")).load_config()
    warning = "/tmp/ipykernel_9/3.py:5: UserWarning: indexing\n"
    nb = graded_notebook(*(new_output("stream", name=name, text=text) for name, text in (
        ("stdout", "args: "), ("stdout", "(tensor([1.]), tensor([2.]))\n"), ("stderr", warning[:20]),
        ("stderr", warning[20:]))))
    resources = {"config_dir": ""}  # where nbconvert's CSS header looks for a custom.css
    for path in config.GenerateFeedback.preprocessors:
        module, name = path.rsplit(".", 1)
        if name != "GetGrades":
            nb, resources = getattr(import_module(module), name)(config=config).preprocess(nb, resources)
    assert [(o.name, o.text) for o in nb.cells[1].outputs] == [("stdout", "args: (tensor([1.]), tensor([2.]))\n"),
                                                               ("stderr", warning)]


def test_printed_and_rich_outputs_are_redacted_but_innocent_output_stays():
    printed = new_output("stream", name="stdout", text=f"running:\n{HIDDEN}\nok\n")
    rich = new_output("execute_result", data={"text/plain": f"{HIDDEN}", "text/html": [f"<p>{HIDDEN}</p>"]})
    nb = feedback(printed, rich)
    text, data = nb.cells[1].outputs[0].text, nb.cells[1].outputs[1].data
    assert text == f"running:\n{REDACTED}\nok\n"
    assert data["text/plain"] == REDACTED and data["text/html"] == [REDACTED]
    assert nb.cells[0].outputs[0].text == "mine\n"


def test_a_student_cell_that_spells_a_delimiter_is_shown_as_written():
    nb = graded_notebook()
    nb.cells[0].source = 'SKIP = "### BEGIN HIDDEN TESTS"  # no end: not a hidden region of a test cell'
    out, _ = HideHiddenTests().preprocess(nb, {})
    assert out.cells[0].source == nb.cells[0].source and HIDDEN not in out.cells[1].source


@pytest.mark.parametrize("name", ["02_forward_hooks/forward_hooks.ipynb", "06_applications/applications.ipynb"])
def test_the_feedback_page_is_the_document_nbconverts_html_exporter_writes(name: str):
    """The quicker exporter writes the same document: the same elements, attributes (the accessibility
    ones included) and text as nbconvert's HTMLExporter with the same safety (SafeHTMLExporter), once both
    are parsed; the second time too (from what the first rendered and remembered)."""
    nb = nbformat.read(REPO / "solutions" / name, as_version=4)
    FeedbackExporter().from_notebook_node(copy.deepcopy(nb))
    ours, _ = FeedbackExporter().from_notebook_node(copy.deepcopy(nb))
    theirs, _ = SafeHTMLExporter().from_notebook_node(copy.deepcopy(nb))
    assert ours != theirs, "the page is not written by nbconvert's own pass (nothing would be compared)"
    assert BeautifulSoup(ours, "html.parser") == BeautifulSoup(theirs, "html.parser")
    for added in ('tabindex="0"', f'alt="{NO_ALT}"'):
        assert ours.count(added) == theirs.count(added), added
    assert ours.count('tabindex="0"') > 0 and (ours.count(f'alt="{NO_ALT}"') > 0) == (name.startswith("06")), (
        "06 has plots")


def test_a_markdown_cell_with_an_attachment_is_rendered_with_its_own():
    """Markdown cells are remembered from one submission to the next, but not one with an attachment: the same
    text may show another image."""
    def page(image: str) -> str:
        cell = new_markdown_cell("The hooks, in order:\n\n![order](attachment:order.png)",
                                 attachments={"order.png": {"image/png": image}})
        return FeedbackExporter().from_notebook_node(new_notebook(cells=[cell]))[0]

    first, second = page("AAAAfirst"), page("AAAAsecond")
    assert "base64,AAAAfirst" in first and "base64,AAAAsecond" in second


def test_accessibility_attributes_skip_scripts_comments_and_what_is_there():
    page = ('<div class="jp-Cell-inputWrapper" data-x="a>b"><img src="a.png"/><img alt="plot" src="b.png">'
            '<script>let s = "<img src=c>";</script><!-- <div class="jp-OutputArea-output"> -->'
            '<span title=\'<img src="d.png">\'></span>'
            '<div class="jp-RenderedText jp-OutputArea-output" tabindex="-1"><div class="other">')
    assert accessible(page) == (
        '<div class="jp-Cell-inputWrapper" data-x="a>b" tabindex="0">'
        f'<img src="a.png" alt="{NO_ALT}"/><img alt="plot" src="b.png">'
        '<script>let s = "<img src=c>";</script><!-- <div class="jp-OutputArea-output"> -->'
        '<span title=\'<img src="d.png">\'></span>'
        '<div class="jp-RenderedText jp-OutputArea-output" tabindex="-1"><div class="other">'
    )


# -- what a student's outputs and markdown can do in the page: nothing ---------------------------------------

RUN = "hacked"  # what every hostile output would call: it must not reach the page, not even as text


def nbgrader_page() -> Config:
    """The config nbgrader's generate_feedback gives the exporter: its own feedback page (classic's, with a score
    panel per test cell), the one hooklab's feedback files are written with."""
    config = Config()
    return GenerateFeedback(coursedir=CourseDirectory(config=config), config=config).config


PAGES = {"lab": Config(), "nbgrader": nbgrader_page()}


def render(nb: nbformat.NotebookNode, page: str) -> str:
    """``nb``'s feedback page, with the scores nbgrader's GetGrades would add (its page shows them)."""
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata.nbgrader.setdefault("score", cell.metadata.nbgrader.points)
    resources = {"nbgrader": {"notebook": "nb", "score": 1.0, "max_score": 2.0, "late_penalty": 0.0}}
    return FeedbackExporter(config=PAGES[page]).from_notebook_node(nb, resources)[0]


def runs_or_loads(page: str) -> list[str]:
    """What in ``page`` would run or fetch something: script-like elements, event handlers, ``javascript:``
    URLs, an image that is not a data URI, a stylesheet or anything else linked from elsewhere."""
    soup = BeautifulSoup(page, "html.parser")
    found = [tag.name for tag in soup.find_all(["script", "iframe", "object", "embed", "svg", "form", "link", "base"])]
    for tag in soup.find_all(True):
        for name, value in tag.attrs.items():
            value = " ".join(value) if isinstance(value, list) else value
            if name.lower().startswith("on") or re.sub(r"\s", "", value).lower().startswith("javascript:"):
                found.append(f"{tag.name} {name}={value}")
            elif name.lower() == "src" and not value.startswith("data:image/"):
                found.append(f"{tag.name} {name}={value}")
    return found


def without_comments(page: str) -> str:
    return re.sub(r"<!--.*?-->", "", page, flags=re.DOTALL)  # nbgrader's page says "Loading mathjax macro" in one


def assert_loads_nothing_from_elsewhere(page: str) -> None:
    assert "<script" not in page.lower(), "a script element"
    for cdn in ("mathjax", "cdnjs", "unpkg", "require.min.js", "mermaid.esm"):
        assert cdn not in without_comments(page).lower(), f"{cdn} is still in the page"
    assert runs_or_loads(page) == []


def graded_cell(*outputs) -> nbformat.NotebookNode:
    cell = new_code_cell("check_answer(answer)", outputs=list(outputs))
    cell.metadata.nbgrader = {"grade": True, "grade_id": "answer_test", "points": 1, "solution": False, "locked": True}
    return cell


def html(markup: str) -> nbformat.NotebookNode:
    return new_output("display_data", data={"text/html": markup, "text/plain": "<a rich object>"})


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def hostile_notebook() -> nbformat.NotebookNode:
    """What a student's code can display while it is graded, and markdown a student can add."""
    outputs = [
        html(f"<script>{RUN}(1)</script><p>kept</p>"),
        html(f"<img src=x onerror={RUN}(2)>"),
        html(f'<svg onload="{RUN}(3)"><script>{RUN}(3)</script></svg>'),
        html(f'<a href="javascript:{RUN}(4)">a link</a><a href=" JaVaScRiPt:{RUN}(4)">another</a>'),
        html(f'<iframe src="https://example.org/{RUN}"></iframe><object data="https://example.org/{RUN}"></object>'
             f'<embed src="https://example.org/{RUN}"><form action="https://example.org/{RUN}"><input '
             f'name="{RUN}"></form>'),
        html(f'<style>body {{ background: url(https://example.org/{RUN}) }}</style><p style="background: '
             f'url(https://example.org/{RUN})">x</p><img src="https://example.org/{RUN}.png"><link rel="stylesheet" '
             f'href="https://example.org/{RUN}.css">'),
        new_output("display_data", data={"text/html": "<b>isolated</b>"}, metadata={"text/html": {"isolated": True}}),
        new_output("display_data",
                   data={"application/javascript": f"{RUN}(5)",
                         "text/plain": "<IPython.core.display.Javascript object>"}),
        new_output("display_data",
                   data={"text/vnd.mermaid": f"</pre><script>{RUN}(6)</script>", "text/plain": "a diagram"}),
        new_output("display_data",
                   data={"text/markdown": f"**mine** <img src=x onerror={RUN}(7)>", "text/plain": "md"}),
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                   metadata={"image/png": {"width": f"1 onload={RUN}(8)"},
                             "filenames": {"image/png": f"https://example.org/{RUN}.png"}}),
        new_output("display_data",
                   data={"application/vnd.jupyter.widget-view+json": {"model_id": RUN, "version_major": 2,
                                                                      "version_minor": 0},
                                         "text/plain": "IntSlider(value=3)"}),
    ]
    markdown = new_markdown_cell(f"My notes <img src=x onerror={RUN}(9)><script>{RUN}(10)</script> "
                                 f"[see](files/javascript:{RUN}(11))")
    nb = new_notebook(cells=[markdown, graded_cell(*outputs)])
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {RUN: {"state": {"value": 3}}},
                                                                         "version_major": 2, "version_minor": 0}}
    return nb


def honest_notebook() -> nbformat.NotebookNode:
    """The hostile notebook's twin: prose, outputs and a failed check as the pack has them."""
    prose = new_markdown_cell(
        "# Exercise 1 — Collect the hooks (2 points)\n\nThe output is $y = W x + b$, **in order**:\n\n"
        "| hook | runs |\n|---|---|\n| pre | before forward |\n\n"
        "<details><summary><b>Hint</b></summary>Use <code>register_forward_hook</code>.</details>\n\n"
        "[The docs](https://pytorch.org/docs/stable/nn.html) and [exercise 2](#Exercise-2)."
    )
    outputs = [
        html("<table><thead><tr><th>layer</th><th>shape</th></tr></thead><tbody><tr><td>fc1</td><td>(2, "
             "3)</td></tr></tbody></table>"),
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                   metadata={"image/png": {"width": 795, "height": 522}}),
        new_output("error", ename="AssertionError", evalue="answer[0] should be x1; got output",
                   traceback=["AssertionError: answer[0] should be x1; got output"]),
    ]
    return new_notebook(cells=[prose, graded_cell(*outputs)])


@pytest.mark.parametrize("page", PAGES)
def test_a_students_outputs_and_markdown_run_nothing_in_the_feedback(page: str):
    text = render(hostile_notebook(), page)
    assert RUN not in text.lower(), [line for line in text.splitlines() if RUN in line.lower()][:3]
    assert_loads_nothing_from_elsewhere(text)
    assert "kept" in text and "<b>isolated</b>" in text and "IntSlider(value=3)" in text and "a diagram" in text, (
        "what is safe of each output still shows")
    assert text.count(f'src="data:image/png;base64,{PNG}"') == 1, "the figure shows, from the page itself"


@pytest.mark.parametrize("page", PAGES)
def test_the_pack_prose_outputs_and_messages_show_in_the_feedback(page: str):
    text = render(honest_notebook(), page)
    assert_loads_nothing_from_elsewhere(text)
    soup = BeautifulSoup(text, "html.parser")
    assert soup.find("h1").get_text() == "Exercise 1 — Collect the hooks (2 points)¶"
    assert [th.get_text() for th in soup.find_all("th")] == ["hook", "runs", "layer", "shape"]
    assert (soup.find("details").summary.b.get_text() == "Hint"
            and soup.find("code").get_text() == "register_forward_hook")
    assert {a["href"] for a in soup.find_all("a") if a.get_text() in ("The docs", "exercise 2")} == {
        "https://pytorch.org/docs/stable/nn.html", "#Exercise-2"}
    image = soup.find("img", src=f"data:image/png;base64,{PNG}")
    assert (image["width"], image["height"]) == ("795", "522")
    assert ("$y = W x + b$" in soup.get_text()
            and "AssertionError: answer[0] should be x1; got output" in soup.get_text())


def test_the_pack_prose_renders_as_nbconvert_renders_it_unsanitised():
    """The sanitiser keeps all of the honest notebook's cells: the same elements, attributes and text as
    nbconvert's HTMLExporter without sanitising, but for the rel="noopener noreferrer" it adds to links."""
    def cells(page: str) -> list[BeautifulSoup]:
        soup = BeautifulSoup(page, "html.parser")
        for link in soup.find_all("a"):
            link.attrs.pop("rel", None)
        return soup.find_all(class_="jp-Cell")

    nb = honest_notebook()
    ours = FeedbackExporter().from_notebook_node(copy.deepcopy(nb))[0]
    theirs = HTMLExporter().from_notebook_node(copy.deepcopy(nb))[0]
    assert cells(ours) == cells(theirs)


@pytest.mark.parametrize("page", PAGES)
def test_a_solution_notebook_keeps_its_plots_and_headings_in_the_feedback(page: str):
    nb = nbformat.read(REPO / "solutions" / "06_applications" / "applications.ipynb", as_version=4)
    plots = sum("image/png" in output.get("data", {}) for cell in nb.cells for output in cell.get("outputs", []))
    text = render(nb, page)
    assert_loads_nothing_from_elsewhere(text)
    assert plots > 0 and text.count('src="data:image/png;base64,') == plots
    headings = [line.lstrip("#").strip() for cell in nb.cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines() if line.startswith("## ")]
    shown = [h2.get_text().removesuffix("¶") for h2 in BeautifulSoup(text, "html.parser").find_all("h2")]
    assert headings and headings == shown


def test_nbgraders_table_of_contents_names_each_test_by_its_exercise_and_lists_only_comments_that_say_something():
    """nbgrader's automatic \"No response.\" on an unchanged answer is neither listed nor shown."""
    answers = []
    for grade_id, comment in (("answer", "No response."), ("other", "Well done: the hook is removed in a finally.")):
        cell = new_code_cell("# YOUR CODE HERE")
        cell.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": grade_id, "locked": False,
                                  "comment": comment}
        answers.append(cell)
    nb = honest_notebook()
    nb.cells[1:1] = answers
    soup = BeautifulSoup(render(nb, "nbgrader"), "html.parser")
    entries = [item.get_text(" ", strip=True) for item in soup.select("#toc li")]
    assert entries == ["Comment on Exercise 1 — Collect the hooks",
                       "Exercise 1 — Collect the hooks (Score: 1.0 / 1.0)"], entries
    assert soup.select_one("#toc li a[href='#comment-other']"), "an instructor's comment keeps its entry"
    comments = [block.get_text(" ", strip=True) for block in soup.select(".panel-footer")]
    assert comments == ["Comments: Well done: the hook is removed in a finally."], comments  # no "No response."


# -- a hidden-test line quoted by any cell's output, of any kind, is redacted ---------------------------------

WHERE = {"the answer cell before the test": 1, "the test cell": 2, "a code cell after the next markdown cell": 4}


def quoting_outputs() -> list[nbformat.NotebookNode]:
    """An output of each kind a cell can leave, each quoting the hidden-test line among lines that say nothing of
    it (as a hook printing the running cell, or an exception carrying its source, would)."""
    return [
        new_output("stream", name="stdout", text=f"running:\n{HIDDEN}\nok\n"),
        new_output("stream", name="stderr", text=f"warning: {HIDDEN}\n"),
        new_output("display_data", data={"text/plain": f"cell:\n{HIDDEN}",
                                         "text/html": f"<pre>{HIDDEN}</pre>\n<p>ok</p>"}),
        new_output("execute_result", data={"text/plain": f"{HIDDEN}"}, execution_count=3),
        new_output("error", ename="RuntimeError", evalue=f"hook saw {HIDDEN}",
                   traceback=["Traceback (most recent call last)", f'  File "<cell>", line 3\n    {HIDDEN}\n',
                              f"RuntimeError: hook saw {HIDDEN}"]),
    ]


def lesson(where: int) -> nbformat.NotebookNode:
    """A notebook as a student's comes back: prose, an answer, its test cell, more prose, a code cell of the
    student's; the cell at ``where`` holds :func:`quoting_outputs`, the others an innocent line each."""
    answer = new_code_cell("def scale(x):\n    return 2 * x")
    answer.metadata.nbgrader = {"grade": False, "grade_id": "scale", "solution": True, "locked": False}
    test = new_code_cell(TEST)
    test.metadata.nbgrader = {"grade": True, "grade_id": "scale_test", "points": 1, "solution": False, "locked": True}
    later = new_code_cell("print(scale(torch.ones(2)))")
    nb = new_notebook(cells=[new_markdown_cell("## Exercise 1 — scale (1 point)"), answer, test,
                             new_markdown_cell("## What the hook saw"), later])
    for index in WHERE.values():
        nb.cells[index].outputs = quoting_outputs() if index == where else [
            new_output("stream", name="stdout", text=f"innocent {index}\n")]
    return nb


@pytest.mark.parametrize("where", WHERE)
def test_hidden_test_lines_quoted_by_any_cell_are_redacted_in_every_kind_of_output(where: str):
    """Not only a test cell's outputs: an answer cell before it or a later cell of the student's (a hook runs
    wherever it was registered) quoting a hidden-test line has that line, and only that line, redacted, in its
    stdout, stderr, displayed text and HTML, result, error message and traceback."""
    index = WHERE[where]
    nb, _ = HideHiddenTests().preprocess(lesson(index), {})
    stdout, stderr, display, result, error = nb.cells[index].outputs
    assert stdout.text == f"running:\n{REDACTED}\nok\n"
    assert stderr.text == f"{REDACTED}\n"
    assert display.data == {"text/plain": f"cell:\n{REDACTED}", "text/html": f"{REDACTED}\n<p>ok</p>"}
    assert result.data == {"text/plain": REDACTED}
    assert (error.ename, error.evalue) == ("RuntimeError", REDACTED)
    if where == "the test cell":  # a test cell's error is reduced to its message
        assert error.traceback == [REDACTED]
    else:  # a student's own error keeps its traceback, the quoting lines redacted
        assert error.traceback == ["Traceback (most recent call last)", f'  File "<cell>", line 3\n{REDACTED}\n',
                                   REDACTED]
    for other in set(WHERE.values()) - {index}:
        assert [output.text for output in nb.cells[other].outputs] == [f"innocent {other}\n"]
    assert HIDDEN not in nbformat.writes(nb), "a hidden-test line reached the feedback"
