"""What a student submits never reaches the grading host: a hostile class graded after an honest one.

The grading process runs with the instructor's rights. A hostile class (a kernel that turns its files into
links to the course's solutions and gradebook, links in the class folder, student ids that are nbgrader
patterns or spreadsheet formulas, script in an output) graded after an honest one must leave every honest
student's gradebook rows, feedback and autograded files as they were, change no file of the course outside
its grading folders, and leave nothing a kernel wrote but its notebook.
"""

from __future__ import annotations

import csv
import hashlib
import os
import stat
import textwrap
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from catalogues import corpus
from conftest import make_course
from hooklab.grading.course import Course
from hooklab.grading.kernels.sandbox import MiB, Sandbox
from hooklab.grading.submissions import find_submissions, opened_input, refusal
from test_autograde import grade

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

A = "02_forward_hooks"
NOTEBOOK = corpus.notebook_name(A)
HONEST = ("ada", "H307", "zoe")
REDIRECTING = ("a-mallory", "z-mallory")
# A module of the submission named after one that ipykernel imports while it starts, with the working folder on
# sys.path: it must not run (0-early gets the first kernel of a worker, z-early a spare).
STARTING = ("0-early", "z-early")
EARLY_MODULE = ("import builtins\nbuiltins.EARLY = 'ran before the notebook'\ndef load_ipython_extension(ip):\n    "
                "pass\n")
EARLY_PROBE = ("import builtins, os\nprint('early:', getattr(builtins, 'EARLY', None), "
               "os.path.exists('storemagic.py'))\n")
EARLY = "2000-01-01 00:00:00.000000 UTC"  # a student's own timestamp.txt, claiming to be on time
# In a kernel: replace every file of its folder with links to the course's solutions and gradebook (its folder
# is <course>/autograder/autograded/<student>/<assignment>, so the course is four levels up), and add files.
REDIRECT = textwrap.dedent(f"""\
    import os
    course = os.path.join(os.getcwd(), "..", "..", "..", "..")
    for name in os.listdir("."):
        os.remove(name)
    os.symlink(os.path.join(course, "solutions", {A!r}, {NOTEBOOK!r}), {NOTEBOOK!r})
    os.symlink(os.path.join(course, "gradebook.db"), "gradebook.db")
    os.symlink(os.path.join(course, "nbgrader_config.py"), "{Path(NOTEBOOK).stem}.html")
    open("evil.txt", "w").write("written by the kernel")
    """)
SCRIPT_OUTPUT = (
    "from IPython.display import HTML, Javascript, display\n"
    "display(HTML('<script>alert(1)</script><img src=x onerror=alert(2)><a href=\"javascript:alert(3)\">x</a>'))\n"
    "display(Javascript('alert(4)'))\n"
)


def solved(*extra: str) -> bytes:
    return corpus.notebook(A, corpus.solutions(A), extra=[*extra])


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under ``root``: a file's digest and mode, or what a link points at."""
    seen = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            seen[path.relative_to(root).as_posix()] = (f"link to {os.readlink(path)}", mode)
        elif stat.S_ISREG(mode):
            seen[path.relative_to(root).as_posix()] = (hashlib.sha256(path.read_bytes()).hexdigest(), mode)
    return seen


def honest_rows(course: Path) -> dict[str, list[tuple[str, float]]]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            student: sorted((grade.name, grade.score)
                            for grade in gradebook.find_submission(A, student).notebooks[0].grades)
            for student in HONEST
        }


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = make_course(tmp_path_factory.mktemp("course"))
    honest = tmp_path_factory.mktemp("honest")
    for student in HONEST:
        (honest / student / A).mkdir(parents=True)
        (honest / student / A / NOTEBOOK).write_bytes(solved())
    grade(course, honest)
    grading = course / "autograder"
    before = {
        "rows": honest_rows(course),
        "course": {name: entry for name, entry in snapshot(course).items()
                   if name.startswith(("solutions/", "nbgrader_config.py"))},
        **{step: {student: snapshot(grading / step / student) for student in HONEST}
           for step in ("autograded", "feedback")},
    }

    hostile = tmp_path_factory.mktemp("hostile")
    # submissions are queued in the order of their folders' names: the first of a worker's kernels is started
    # for its notebook, the later ones are spares started ahead; a-mallory gets the first, z-mallory a spare
    folders = {name: hostile / name / A
               for name in (*REDIRECTING, *STARTING, "linker", "H30[7]", "*", "=SUM(1,2)", "eve", "fat", "many",
                            "paged")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    for student in REDIRECTING:
        folders[student].joinpath(NOTEBOOK).write_bytes(solved(REDIRECT))
    for student in STARTING:
        folders[student].joinpath(NOTEBOOK).write_bytes(solved(EARLY_PROBE))
        folders[student].joinpath("storemagic.py").write_text(EARLY_MODULE)
    folders["linker"].joinpath(NOTEBOOK).write_bytes(solved())
    folders["linker"].joinpath("notes.txt").symlink_to(course / "solutions" / A / NOTEBOOK)
    folders["linker"].joinpath("data").symlink_to(course / "solutions", target_is_directory=True)
    (hostile / "ghost").symlink_to(honest / "ada", target_is_directory=True)
    folders["H30[7]"].joinpath(NOTEBOOK).write_bytes(corpus.notebook(A, {}))
    folders["*"].joinpath(NOTEBOOK).write_bytes(corpus.notebook(A, {}))
    folders["=SUM(1,2)"].joinpath(NOTEBOOK).write_bytes(solved())
    folders["eve"].joinpath(NOTEBOOK).write_bytes(solved(SCRIPT_OUTPUT))
    folders["eve"].joinpath("notes.html").write_text("<script>alert(5)</script>")  # a page of its own
    folders["paged"].joinpath(NOTEBOOK).write_bytes(solved())  # a folder where its feedback page goes
    page_place = folders["paged"] / Path(NOTEBOOK).with_suffix(".html").name
    page_place.mkdir()
    (page_place / "notes.txt").write_text("a note of the student's own")
    folders["linker"].joinpath("timestamp.txt").write_text(EARLY)
    for student in ("fat", "many"):
        folders[student].joinpath(NOTEBOOK).write_bytes(solved())
    with open(folders["fat"] / "data.bin", "wb") as handle:  # sparse: a size, no disk
        handle.truncate(Sandbox().submission_size + 1)
    for number in range(Sandbox().submission_files):
        folders["many"].joinpath(f"{number}.txt").write_text("x")
    summary = grade(course, hostile).stdout
    return {"course": course, "before": before, "summary": summary}


def test_honest_students_are_untouched_by_a_hostile_class(graded):
    course, before = graded["course"], graded["before"]
    assert honest_rows(course) == before["rows"]
    for step in ("autograded", "feedback"):
        assert {student: snapshot(course / "autograder" / step / student) for student in HONEST} == before[step], step


def test_no_file_of_the_course_outside_its_grading_folders_changes(graded):
    course = graded["course"]
    after = {name: entry for name, entry in snapshot(course).items()
             if name.startswith(("solutions/", "nbgrader_config.py"))}
    assert after == graded["before"]["course"]


def test_nothing_a_kernel_wrote_is_kept_but_its_notebook(graded):
    grading = graded["course"] / "autograder"
    for student in REDIRECTING:
        assert sorted(p.name for p in (grading / "autograded" / student / A).iterdir()) == [NOTEBOOK]
        assert sorted(p.name for p in (grading / "feedback" / student / A).iterdir()) == [
            Path(NOTEBOOK).with_suffix(".html").name]
    links = [str(p) for p in graded["course"].rglob("*") if p.is_symlink()]
    assert not links, f"links in the course after grading: {links}"


def test_links_in_the_class_folder_are_named_and_not_followed(graded):
    summary, grading = graded["summary"], graded["course"] / "autograder"
    for link in ("linker/02_forward_hooks/notes.txt", "linker/02_forward_hooks/data", "ghost"):
        assert f"{link}: a link, not followed" in summary, summary
    assert sorted(p.name for p in (grading / "submitted" / "linker" / A).iterdir()) == [NOTEBOOK]
    assert not (grading / "submitted" / "ghost").exists()
    page = (grading / "feedback" / "linker" / A / Path(NOTEBOOK).with_suffix(".html").name).read_text()
    assert "BEGIN HIDDEN TESTS" not in page


def test_ids_that_nbgrader_would_take_as_patterns_are_refused(graded):
    summary, grading = graded["summary"], graded["course"] / "autograder"
    for student in ("H30[7]", "*"):
        assert f"{student}/: refused as a student id" in summary, summary
        assert not (grading / "submitted" / student).exists()
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gradebook:
        assert {s.id for s in gradebook.students} == {*HONEST, *REDIRECTING, *STARTING, "linker", "=SUM(1,2)", "eve",
                                                      "fat", "many", "paged"}


def test_a_formula_id_is_graded_and_neutralised_in_the_csv(graded):
    with open(graded["course"] / "grades.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert "'=SUM(1,2)" in rows and "=SUM(1,2)" not in rows
    assert float(rows["'=SUM(1,2)"]["score"]) == float(rows["ada"]["score"]) > 0


class ActiveContent(HTMLParser):
    """The elements and attributes of a page that run code or load something."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag in ("script", "iframe", "object", "embed"):
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"{tag} {name}={value}")


def active(page: str) -> ActiveContent:
    parser = ActiveContent()
    parser.feed(page)
    return parser


def test_script_in_a_students_output_is_not_live_in_the_feedback(graded):
    feedback = graded["course"] / "autograder" / "feedback"
    page = active((feedback / "eve" / A / Path(NOTEBOOK).with_suffix(".html").name).read_text())
    assert page.found == []
    honest = active((feedback / "ada" / A / Path(NOTEBOOK).with_suffix(".html").name).read_text())
    assert honest.found == [] and {"h1", "pre"} <= honest.tags


def test_a_students_file_or_folder_named_as_a_page_is_not_copied_into_the_feedback(graded):
    """nbgrader copies a submission's other files into its feedback folder before it writes the pages: a folder
    named as a notebook's page would stand where the page goes (its feedback failed at every run), a page of the
    student's would sit beside the grader's. Neither is copied; the submission is graded and its page written."""
    feedback = graded["course"] / "autograder" / "feedback"
    page = feedback / "paged" / A / Path(NOTEBOOK).with_suffix(".html").name
    assert page.is_file() and "a note of the student's own" not in page.read_text()
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(A, "paged").score == sum(corpus.points(A).values())  # recorded, and:
    assert not (feedback / "eve" / A / "notes.html").exists()
    total = sum(corpus.points(A).values())
    assert [line.split() for line in graded["summary"].splitlines() if line.strip().startswith(f"paged/{A}")] == [
        [f"paged/{A}", f"{total:g}", "/", f"{total:g}", "✓"]], graded["summary"]


@pytest.mark.parametrize("student",
                         ["", ".", "..", ".hidden", "a/b", "a\\b", "a\x1b[2Kb", "tab\there", "H30[7]", "*", "who?",
                                     "ada\u200b", "ada\u00a0", "ad\u00ada", "ada\u2066"])
def test_a_student_id_that_could_name_another_folder_is_refused(student):
    assert refusal(student)


@pytest.mark.parametrize("student", ["ada", "H307", "Zoë", "o'brien", "jean-luc", "=SUM(1,2)", "s 1", "李"])
def test_an_ordinary_student_id_is_taken_as_it_is(student):
    assert refusal(student) == ""


def test_flat_input_ids_are_checked_and_links_skipped(tmp_path):
    course = Course(make_course(tmp_path / "course") / "nbgrader_config.py")
    flat = tmp_path / "flat"
    flat.mkdir()
    for name in (f"..{'_'}{NOTEBOOK}", f"H30[7]_{NOTEBOOK}", f"ada_{NOTEBOOK}"):
        (flat / name).write_bytes(solved())
    (flat / f"bob_{NOTEBOOK}").symlink_to(course.root / "solutions" / A / NOTEBOOK)
    found = find_submissions(flat, course, Sandbox())
    assert [s.student for s in found.submissions] == ["ada"]
    assert sum("refused as a student id" in problem for problem in found.problems) == 2, found.problems
    assert f"bob_{NOTEBOOK}: a link, not followed (only the files themselves are graded)" in found.problems


def test_a_submission_too_large_or_with_too_many_files_is_refused_before_it_is_copied(graded):
    summary, grading = graded["summary"], graded["course"] / "autograder"
    assert "fat/02_forward_hooks: " in summary and "(c.Sandbox.submission_size)" in summary, summary
    assert "many/02_forward_hooks: " in summary and "(c.Sandbox.submission_files)" in summary, summary
    for student in ("fat", "many"):
        assert not (grading / "submitted" / student).exists()
        page = (grading / "feedback" / student / A / Path(NOTEBOOK).with_suffix(".html").name).read_text()
        assert "c.Sandbox.submission_" in page


def test_a_students_own_timestamp_is_left_out(graded):
    assert "linker/02_forward_hooks/timestamp.txt: the student's own, left out" in graded["summary"]
    assert not (graded["course"] / "autograder" / "submitted" / "linker" / A / "timestamp.txt").exists()
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(A, "linker").timestamp is None  # nbgrader: handed in on time


def test_a_zip_extracts_only_what_is_within_the_limits(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr(f"ada/{A}/{NOTEBOOK}", solved())
        zipped.writestr(f"bomb/{A}/{NOTEBOOK}", solved())
        zipped.writestr(f"bomb/{A}/zeros.bin", bytes(2 * MiB))  # a few KiB in the zip
        for number in range(5):
            zipped.writestr(f"crowd/{A}/{number}.txt", "x")
    limits = Sandbox(submission_size=1 * MiB, submission_files=4)
    with opened_input(archive, limits) as (folder, problems):
        assert sorted(p.name for p in folder.iterdir()) == ["ada"]
        assert [problem.split(":")[0] for problem in problems] == [f"bomb/{A}", f"crowd/{A}"], problems


def test_nothing_of_a_submission_runs_while_its_kernel_starts(graded):
    """Its files arrive in the working folder at the first request, after the integrity snapshot."""
    for student in STARTING:
        nb = nbformat.read(graded["course"] / "autograder" / "autograded" / student / A / NOTEBOOK, as_version=4)
        printed = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert "early: None True\n" in printed, (student, [p for p in printed if "early" in p])


def test_a_zips_entries_are_counted_where_they_are_extracted_and_in_all(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for prefix in ("", "./", "../"):  # three spellings of ada's folder, extracted into one
            zipped.writestr(f"{prefix}ada/{A}/part{len(prefix)}.bin", bytes(MiB // 2))
        zipped.writestr(f"bo/{A}/{NOTEBOOK}", solved())
        for number in range(3):  # a flat zip's notebooks, each within the notebook size
            zipped.writestr(f"s{number}_{NOTEBOOK}", bytes(MiB // 2))
        zipped.writestr(f"big_{NOTEBOOK}", bytes(2 * MiB))
    limits = Sandbox(submission_size=1 * MiB, notebook_size=1 * MiB, input_size=5 * MiB // 4)
    with opened_input(archive, limits) as (folder, problems):
        refused = {problem.split(":")[0]: problem for problem in problems}
        assert "(c.Sandbox.submission_size)" in refused[f"ada/{A}"]
        assert "(c.Sandbox.notebook_size)" in refused[f"big_{NOTEBOOK}"]
        assert sum("(c.Sandbox.input_size)" in problem for problem in problems) == 1, problems
        assert sorted(p.name for p in folder.iterdir()) == ["bo", f"s0_{NOTEBOOK}", f"s1_{NOTEBOOK}"]


def test_a_damaged_zip_member_costs_only_its_student(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zipped:
        zipped.writestr(f"ada/{A}/{NOTEBOOK}", solved())
        zipped.writestr(f"bo/{A}/{NOTEBOOK}", solved())
    data = bytearray(archive.read_bytes())
    start = data.index(b'"cells"', data.index(f"bo/{A}".encode()))
    data[start:start + 7] = b'"CELLS"'  # bo's bytes no longer match their checksum
    archive.write_bytes(bytes(data))
    with opened_input(archive, Sandbox()) as (folder, problems):
        assert sorted(p.name for p in folder.iterdir()) == ["ada"]
        assert len(problems) == 1 and problems[0].startswith(f"bo/{A}: damaged in the zip"), problems


def test_an_unreadable_submission_folder_costs_only_its_student(tmp_path):
    course = Course(make_course(tmp_path / "course") / "nbgrader_config.py")
    folder = tmp_path / "class"
    for student in ("ada", "bo", "cy"):
        (folder / student / A).mkdir(parents=True)
        (folder / student / A / NOTEBOOK).write_bytes(solved())
    (folder / "bo" / A / os.fsdecode(b"\xff\xfe.txt")).write_text("a name that is not UTF-8")
    parent = os.open(folder / "cy" / A, os.O_DIRECTORY)
    for _ in range(80):  # folders deeper than a path may be long (4096 bytes), made one below the other
        os.mkdir("d" * 60, dir_fd=parent)
        child = os.open("d" * 60, os.O_DIRECTORY, dir_fd=parent)
        os.close(parent)
        parent = child
    os.close(parent)
    found = find_submissions(folder, course, Sandbox())
    by_student = {s.student: s for s in found.submissions}
    assert sorted(by_student["ada"].files) == [NOTEBOOK] and not by_student["ada"].refused
    assert sorted(by_student["bo"].files) == sorted([NOTEBOOK, os.fsdecode(b"\xff\xfe.txt")])
    assert by_student["cy"].refused.startswith("its files could not be read") and not by_student["cy"].files


def test_a_zip_is_limited_per_submission_and_any_damage_costs_only_its_own(tmp_path):
    """Two assignments of one student, each within the limit though not together; a damaged LZMA member."""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for assignment in (A, "03_backward_hooks"):
            zipped.writestr(f"ada/{assignment}/data.bin", bytes(3 * MiB // 4), zipfile.ZIP_DEFLATED)
        zipped.writestr(f"bo/{A}/{NOTEBOOK}", solved(), zipfile.ZIP_LZMA)
    data = bytearray(archive.read_bytes())
    start = data.index(f"bo/{A}".encode()) + 100  # inside bo's compressed bytes
    data[start:start + 64] = bytes(byte ^ 0xFF for byte in data[start:start + 64])
    archive.write_bytes(bytes(data))
    with opened_input(archive, Sandbox(submission_size=1 * MiB)) as (folder, problems):
        assert sorted(p.relative_to(folder).as_posix() for p in folder.glob("*/*")) == [
            f"ada/{A}", "ada/03_backward_hooks"]
        assert [problem.split(":")[0] for problem in problems] == [f"bo/{A}"], problems


def test_an_unreadable_or_very_deep_student_folder_costs_only_its_student(tmp_path):
    course = Course(make_course(tmp_path / "course") / "nbgrader_config.py")
    folder = tmp_path / "class"
    for student in ("ada", "bo"):
        (folder / student / A).mkdir(parents=True)
        (folder / student / A / NOTEBOOK).write_bytes(solved())
    parent = os.open(folder / "bo" / A, os.O_DIRECTORY)
    for _ in range(1100):  # deeper than Python's recursion (a walk that recurses), within a path's length
        os.mkdir("d", dir_fd=parent)
        child = os.open("d", os.O_DIRECTORY, dir_fd=parent)
        os.close(parent)
        parent = child
    os.close(parent)
    try:
        found = find_submissions(folder, course, Sandbox())
    finally:  # removed deepest first: shutil.rmtree (pytest's clean-up) recurses too
        deepest = folder / "bo" / A
        while (deepest / "d").is_dir():
            deepest = deepest / "d"
        while deepest != folder / "bo" / A:
            deepest.rmdir()
            deepest = deepest.parent
    by_student = {s.student: s for s in found.submissions}
    assert by_student["bo"].refused.startswith("its files could not be read") and not by_student["bo"].files
    assert sorted(by_student["ada"].files) == [NOTEBOOK] and not by_student["ada"].refused
