"""What students see in their feedback: test results, never the hidden tests."""

from __future__ import annotations

import functools
import json
import re
from html import escape
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache
import nh3
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.filters import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import default

from hooklab import exercises
from hooklab.grading import judge
from hooklab.grading.outputs import ANSI
from hooklab.grading.redaction import MIN_LINE, PROOF_PREFIX, REDACTED, hidden_lines

# a frame of IPython's traceback in a notebook cell: "  Cell In[7], line 2 in double_inputs\n    x1, x2 = args\n"
# (Plain mode), or "Cell In[7], line 2, in double_inputs(module, args)\n      1 def …\n----> 2     x1, x2 = args"
# (Context mode, IPython's default)
_CELL_FRAME = re.compile(r"^\s*Cell In\[(\d+)\], line (\d+)(?:,? in (\w+))?[^\n]*\n(.*)", re.S)
_CONTEXT_LINE = re.compile(r"^-*>\s*\d+\s?(.*)$", re.M)  # the line that raised, in Context mode
REMEMBERED = 4096  # renderings of cells and outputs a worker keeps for the next submissions


class HideHiddenTests(ClearHiddenTests):
    """Remove hidden tests from test cells, as the release does, and keep them out of every output.

    nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells still hold
    the hidden tests. A test cell's error is reduced to its message and the lines where code of a cell the student
    sees whole (their answer, a demo) raised; a test line quoted as the grader ran it (its expected values
    blanked), by a warning or a traceback, is shown as written, or redacted if hidden; any output line of any cell
    that quotes a hidden-test line, a delimiter or the grader's proof-of-run line (a hook that
    prints the running cell, an exception message carrying its source) is replaced by a
    redaction mark.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        self._shown_cells = {cell.get("execution_count") for cell in nb.cells
                             if cell.cell_type == "code" and not utils.is_grade(cell)} - {None}
        begin, end = self.begin_test_delimeter, self.end_test_delimeter
        tests = [cell.source for cell in nb.cells if utils.is_grade(cell)]
        # each hidden line as written and as the grader ran it (judge.without_expectations: its expected values
        # blanked), which is how a warning or a traceback quotes it
        lines = set().union(*(hidden_lines(source, begin, end) | hidden_lines(judge.without_expectations(source), begin,
                                                                               end) for source in tests))
        # a visible line as the grader ran it reads as if None were expected: quoted, it is shown as written
        self._as_written = {graded.strip(): written.strip() for source in tests for written, graded in
                            zip(source.split("\n"), judge.without_expectations(source).split("\n"))
                            if graded != written and len(graded.strip()) >= MIN_LINE and graded.strip() not in lines}
        # the delimiters and the proof-of-run line show that a message quotes a test cell
        markers = {self.begin_test_delimeter, self.end_test_delimeter, PROOF_PREFIX}
        self._hidden = sorted((lines | markers) - {""}, key=len, reverse=True)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if utils.is_grade(cell):  # a student's own cell may spell a delimiter; it holds no hidden test
            cell, resources = super().preprocess_cell(cell, resources, index)
        for output in cell.get("outputs", []):
            if output.output_type == "error" and utils.is_grade(cell):
                output.traceback = [f"{output.ename}: {output.evalue}", *self._frames_shown(output.traceback)]
            self._redact(output)
        return cell, resources

    def _frames_shown(self, traceback: list[str]) -> list[str]:
        """The lines of a test's error that ran in a cell the student sees whole (their answer, a demo), innermost
        last: where their own code raised, as "  in double_inputs, line 2 of In [7]: x1, x2 = args"."""
        shown = []
        for entry in traceback:
            frame = _CELL_FRAME.match(ANSI.sub("", entry))
            if frame and int(frame[1]) in self._shown_cells:
                marked = _CONTEXT_LINE.search(frame[4])
                code = marked[1].strip() if marked else next(iter(frame[4].strip().splitlines()), "")
                shown.append(f"  in {frame[3] or 'the cell'}, line {frame[2]} of In [{frame[1]}]" +
                             (f": {code}" if code else ""))
        return shown

    def _redact(self, output: NotebookNode) -> None:
        if "text" in output:
            output.text = self._clean(output.text)
        if output.output_type == "error":
            output.evalue = self._clean(output.evalue)
            output.traceback = [self._clean(line) for line in output.traceback]
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str):
                output.data[mime] = self._clean(value)
            elif isinstance(value, list):
                output.data[mime] = [self._clean(v) if isinstance(v, str) else v for v in value]

    def _clean(self, text: str) -> str:
        for graded, written in self._as_written.items():
            text = text.replace(graded, written)
        if not any(hidden in text for hidden in self._hidden):
            return text
        lines = text.split("\n")
        return "\n".join(REDACTED if any(hidden in line for hidden in self._hidden) else line for line in lines)


# -- what a student wrote or printed, made inert in the page ---------------------------------------------------

# Ammonia's tags (prose, lists, tables, code, images, details; never script, style, svg, iframe, object, embed or
# form), with the attributes the pack's prose and outputs use: classes (highlighted code), heading anchors.
TAGS = nh3.ALLOWED_TAGS
ATTRIBUTES = {
    "*": {"class", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "ol": {"start"},
    "details": {"open"},
}
DROPPED_WITH_CONTENT = {"script", "style", "svg", "math", "iframe", "object", "embed"}
IMAGE_DATA = ("data:image/png;", "data:image/jpeg;", "data:image/gif;", "data:image/webp;")
# a link to the web, a mail address or a place in the page; a relative one without any colon, because nbconvert
# strips a leading "files/" after sanitising ("files/javascript:..." would become a script)
_LINK = re.compile(r"https?:|mailto:|#|[^:]*$", re.IGNORECASE)


def _kept(tag: str, attribute: str, value: str) -> str | None:
    """An attribute's value as the page may keep it: an image only from the page itself (a data URI), a link that
    runs nothing (ammonia has checked its scheme already)."""
    if attribute == "src":
        return value if value.startswith(IMAGE_DATA) else None
    if attribute == "href":
        return value if _LINK.match(value) else None
    return value


def sanitised(html: str) -> str:
    """``html`` that runs nothing and loads nothing from outside the page, by Ammonia (nh3): nbconvert's own
    ``clean_html`` (bleach) keeps too little of the instructor's prose (headings, tables) to be used on it."""
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, clean_content_tags=DROPPED_WITH_CONTENT,
                     url_schemes={"http", "https", "mailto", "data"}, attribute_filter=_kept)


ACTIVE_TYPES = {"application/javascript", "application/vnd.jupyter.widget-view+json", "text/vnd.mermaid"}
IMAGE_SIZES = ("width", "height")


class InertOutputs(Preprocessor):
    """Outputs as the page may show them, whatever the template does with them.

    A representation that runs in the browser (JavaScript, a widget view, a mermaid diagram, which nbconvert's
    lab template writes unescaped) is dropped for the output's others (its text), and the notebook's widget
    state with it. Of an output's metadata, what the templates would write as an address or unquoted is
    dropped: a file name (the grader extracts no file, so the name is the student's), a size that is not a
    number (``1 onload=...``), and ``isolated``, which puts HTML in an iframe of its own (classic's page).
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        for output in cell.get("outputs", []):
            for mime in ACTIVE_TYPES & set(output.get("data", {})):
                del output.data[mime]
            metadata = output.get("metadata", {})
            metadata.pop("filenames", None)
            for scope in (metadata, *(value for value in metadata.values() if isinstance(value, dict))):
                scope.pop("isolated", None)
                for size in IMAGE_SIZES:
                    if size in scope and not isinstance(scope[size], int | float):
                        del scope[size]
        return cell, resources


TEMPLATES = Path(__file__).parent.parent / "templates"  # hooklab/templates


class SafeHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter for a page that shows what a student's code printed: the configured page
    (nbgrader's feedback template, or lab's) with nothing run or loaded from outside it.

    nbconvert's ``sanitize_html`` is on by default, so its templates pass markdown and HTML outputs through
    ``clean_html``, which is :func:`sanitised`, as is every markdown rendering (nbgrader's feedback template
    writes markdown cells unsanitised); outputs go through :class:`InertOutputs`. The page is
    ``templates/feedback.html.j2``, which extends whichever template is configured (nbgrader's generate_feedback
    names its own), and it and ``templates/mathjax.html.j2`` are found before any of nbconvert's paths.
    """

    @default("sanitize_html")
    def _sanitize_html_default(self) -> bool:
        return True

    @default("template_file")
    def _template_file_default(self) -> str:
        return "feedback.html.j2"

    def _create_environment(self) -> jinja2.Environment:
        environment = super()._create_environment()
        environment.loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(TEMPLATES), environment.loader])
        return environment

    def _init_preprocessors(self) -> None:
        super()._init_preprocessors()
        self.register_preprocessor(InertOutputs, enabled=True)

    def default_filters(self):
        yield from super().default_filters()
        yield "clean_html", sanitised

    @jinja2.pass_context
    def markdown2html(self, context: jinja2.runtime.Context, source: str) -> str:
        return sanitised(super().markdown2html(context, source))


# -- the same page, quicker for a class -----------------------------------------------------------------------


class _CompiledTemplates(jinja2.BytecodeCache):
    """Jinja's compiled templates kept in memory, keyed by Jinja on each template's name and source."""

    def __init__(self) -> None:
        self._compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self._compiled:
            bucket.bytecode_from_string(self._compiled[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._compiled[bucket.key] = bucket.bytecode_to_string()


_cleaned = functools.lru_cache(REMEMBERED)(sanitised)
_markdown: dict[tuple[Any, ...], str] = {}  # markdown cells rendered (FeedbackExporter.markdown2html)


@functools.lru_cache(REMEMBERED)
def _highlighted(source: str, language: str, magics_language: str | None, options: str) -> str:
    metadata = {"magics_language": magics_language} if magics_language else None
    highlight = Highlight2HTML(pygments_lexer=language, extra_formatter_options=json.loads(options))
    return highlight(source, language, metadata)


# The accessibility attributes nbconvert's HTMLExporter adds after rendering (images get a description,
# cell inputs and outputs take the keyboard focus), added by one scan of the page's start tags instead of
# a BeautifulSoup tree: parsing and writing back the page's thousands of highlighted tokens took most of
# the time of a feedback file. Scripts, styles and comments are passed over as the HTML parser does.
NO_ALT = "No description has been provided for this image"
FOCUSABLE = {"jp-Cell-inputWrapper", "jp-OutputArea-output"}
_START_TAGS = re.compile(
    r"""<(?P<raw>script|style)\b.*?</(?P=raw)\s*>|<!--.*?-->|<(?P<tag>[a-zA-Z][^\s/>]*)(?P<attributes>(?:[^>"']|"[^"]*"|'[^']*')*)>""",
    re.IGNORECASE | re.DOTALL,
)
_ATTRIBUTE = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?""")


def _accessible(match: re.Match[str]) -> str:
    if match.group("tag") is None or match.group("tag").lower() not in ("img", "div"):
        return match.group(0)  # a script, style, comment or another element: its attributes may quote a tag
    tag, attributes = match.group("tag").lower(), match.group("attributes")
    present = {name.lower(): value.strip("'\"") for name, value in _ATTRIBUTE.findall(attributes)}
    if tag == "img" and "alt" not in present:
        extra = f' alt="{NO_ALT}"'
    elif tag == "div" and "tabindex" not in present and FOCUSABLE & set(present.get("class", "").split()):
        extra = ' tabindex="0"'
    else:
        return match.group(0)
    closing = "/>" if attributes.rstrip().endswith("/") else ">"
    return f"<{match.group('tag')}{attributes.rstrip().removesuffix('/').rstrip()}{extra}{closing}"


def accessible(page: str) -> str:
    """``page`` with the attributes nbconvert's HTMLExporter adds for accessibility (see above)."""
    return _START_TAGS.sub(_accessible, page)


NO_RESPONSE = "No response."  # nbgrader's automatic comment on an answer cell left as released


def table_of_contents(page: str, nb: NotebookNode) -> str:
    """nbgrader's page with its table of contents in the student's terms: each "Test cell" entry named by the
    exercise it tests (the heading above it), and a "Comment" entry only for a comment that says something (not
    empty, not nbgrader's "No response."), named by its exercise too."""
    for title, cell in exercises.titled(nb.cells):
        grading = cell.metadata.get("nbgrader", {})
        anchor = escape(str(grading.get("grade_id", "")), quote=True)
        if utils.is_grade(cell) and not utils.is_solution(cell) and title:
            page = page.replace(f'<li><a href="#{anchor}">Test cell</a>',
                                f'<li><a href="#{anchor}">{escape(title)}</a>', 1)
        comment = f'<li><a href="#comment-{anchor}">Comment</a></li>'
        if (grading.get("comment") or "").strip() in ("", NO_RESPONSE):
            page = page.replace(comment, "", 1)
        elif title:
            page = page.replace(comment, f'<li><a href="#comment-{anchor}">Comment on {escape(title)}</a></li>', 1)
    return page


class FeedbackExporter(SafeHTMLExporter):
    """:class:`SafeHTMLExporter`, quicker for a class of notebooks that are mostly the same: its templates
    are compiled once per process instead of once per feedback file (nbgrader builds a new exporter for
    every submission), a cell or output rendered for one submission is not highlighted, sanitised or
    rendered from markdown again for the next (each a function of the text), and the page's accessibility
    attributes are added without parsing it into a tree (:func:`accessible`)."""

    _templates = _CompiledTemplates()

    def _create_environment(self) -> jinja2.Environment:
        environment = super()._create_environment()
        environment.bytecode_cache = self._templates
        return environment

    def default_filters(self):
        yield from super().default_filters()
        yield "clean_html", _cleaned

    @jinja2.pass_context
    def markdown2html(self, context: jinja2.runtime.Context, source: str) -> str:
        """The safe exporter's, remembered for a cell without attachments: its HTML is a function of its text and the
        exporter's settings, and of the notebook's folder when images are embedded (the instructor's prose is
        the same in every submission)."""
        if context.get("cell", {}).get("attachments"):
            return super().markdown2html(context, source)
        folder = context.get("resources", {}).get("metadata", {}).get("path", "") if self.embed_images else ""
        settings = (self.embed_images, self.anchor_link_text, self.exclude_anchor_links,
                    json.dumps(self.lexer_options, sort_keys=True, default=str))
        key = (source, folder, *settings)
        if key not in _markdown:
            if len(_markdown) >= REMEMBERED:
                _markdown.clear()
            _markdown[key] = super().markdown2html(context, source)
        return _markdown[key]

    def from_notebook_node(self, nb: NotebookNode, resources: dict[str, Any] | None = None,
                           **kw: Any) -> tuple[str, dict[str, Any]]:
        if "highlight_code" not in self.filters:  # one configured by the course is kept
            info = nb.metadata.get("language_info", {})
            lexer = info.get("pygments_lexer", info.get("name")) or "ipython3"
            options = json.dumps(Highlight2HTML(parent=self).extra_formatter_options, sort_keys=True)

            def highlight_code(source: str, language: str | None = None, metadata: dict[str, Any] | None = None) -> str:
                return _highlighted(source, language or lexer, (metadata or {}).get("magics_language"), options)

            self.filters = {**self.filters, "highlight_code": highlight_code}
        # HTMLExporter.from_notebook_node up to its BeautifulSoup pass, which accessible() replaces
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self.filters["highlight_code"])
        self.register_filter("filter_data_type",
                             WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                   resources=resources))
        for cell in nb.cells:  # nbgrader's automatic comment on an unchanged answer reads as if a person wrote it
            grading = cell.metadata.get("nbgrader", {})
            if (grading.get("comment") or "").strip() == NO_RESPONSE:
                grading["comment"] = ""
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return accessible(table_of_contents(page, nb)), resources


def write_failure_feedback(folder: Path, notebooks: list[str], reason: str, max_score: float) -> None:
    """Feedback for a submission that could not be run: the reason, and the score 0."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in notebooks:
        page = (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(name)}</title></head><body>"
            f"<h1>{escape(name)}: not graded</h1><p>Your submission could not be run: {escape(reason)}.</p>"
            f"<p>Score: 0 / {max_score:g}</p></body></html>\n"
        )
        (folder / name).with_suffix(".html").write_text(page)
