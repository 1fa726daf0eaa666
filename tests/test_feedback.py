"""What a student's feedback may show: results and messages, never a hidden test."""

from __future__ import annotations

import copy

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from conftest import REPO
from hooklab.feedback import NO_ALT, REDACTED, FeedbackExporter, HideHiddenTests, accessible
from hooklab.grading.execute import PROOF_PREFIX

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
    ones included) and text as HTMLExporter, once both are parsed; the second time too (from what the first
    rendered and remembered)."""
    nb = nbformat.read(REPO / "solutions" / name, as_version=4)
    FeedbackExporter().from_notebook_node(copy.deepcopy(nb))
    ours, _ = FeedbackExporter().from_notebook_node(copy.deepcopy(nb))
    theirs, _ = HTMLExporter().from_notebook_node(copy.deepcopy(nb))
    assert ours != theirs, "the page is not written by nbconvert's own pass (nothing would be compared)"
    assert BeautifulSoup(ours, "html.parser") == BeautifulSoup(theirs, "html.parser")
    for added in ('tabindex="0"', f'alt="{NO_ALT}"'):
        assert ours.count(added) == theirs.count(added), added
    assert ours.count('tabindex="0"') > 0 and (ours.count(f'alt="{NO_ALT}"') > 0) == (name.startswith("06")), "06 has plots"


def test_a_markdown_cell_with_an_attachment_is_rendered_with_its_own():
    """Markdown cells are remembered from one submission to the next, but not one with an attachment: the same
    text may show another image."""
    def page(image: str) -> str:
        cell = new_markdown_cell("The hooks, in order:\n\n![order](attachment:order.png)", attachments={"order.png": {"image/png": image}})
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
