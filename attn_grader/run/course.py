"""The nbgrader side of a course: the grading options, the course's assignments generated once into a
template gradebook, nbgrader's configuration and converters, and the scores in a gradebook.

Used by the run (:mod:`.grading`), by every worker's batch (:mod:`.batch`) and by ``make release``.
"""

from __future__ import annotations

from . import patches  # noqa: F401 - first: it changes how nbformat imports

# isort: split
import contextlib
import functools
import io
import logging
import os
import shutil
import warnings
from dataclasses import dataclass, field

import nbformat

from ..isolation.sanitize import hidden_lines
from ..reports.similarity import MIN_SHARED, THRESHOLD

warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader re-adding a submission
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = [os.path.join(REPO, p) for p in ("attn_ref", "attn_grader")]  # the grader's own (its code digest)


@functools.cache
def kernel_mounts(root: str, with_packages: bool = True) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a grading kernel imports, as this environment resolves it for a kernel (``python -I``: not
    necessarily the packages this process imported from its working folder): (the folders of our packages
    and their dependencies beyond the Python installation, mounted read-only in its sandbox; nothing of the
    course at ``root`` but those packages, folders to hide).  ``with_packages`` False: the dependencies
    alone, our packages hidden where they lie in what is mounted anyway (a re-check, where the reference
    must not be importable)."""
    from ..isolation import mounts
    from ..isolation.kernel import PACKAGES as KERNEL_PACKAGES

    found, hidden = mounts.import_mounts(KERNEL_PACKAGES, avoid=[root], with_modules=with_packages)
    return tuple(found), tuple(hidden)


@dataclass
class Options:
    cell_timeout: int = 60  # seconds a cell may run before it is interrupted
    budget: int = 600  # seconds for one whole notebook
    memory: int = 4 << 30  # bytes of address space for a kernel and a re-check
    recheck_seconds: int = 120  # wall-clock seconds for one submission's re-check
    call_seconds: int = 30  # seconds for one call of a student's function in the re-check
    box_bytes: int = 256 << 20  # size of a sandbox's working folder
    sandbox: bool = True  # False only with --no-sandbox
    max_notebook_bytes: int = 1 << 30  # a larger submitted notebook is ungradable (the reason says how to raise it)
    stall_seconds: int = 0  # nothing heard this long: the busy workers are restarted (0: budget + re-check + 180)
    similarity: float = THRESHOLD  # alike answers are in the class report from this score (0..1)
    similarity_min: int = MIN_SHARED  # ... when they share this much normalised code (.similarity)
    book_url: str = ""  # the book the feedback links to (c.AttnGrader.book_url; ATTN_BOOK_URL overrides it)


@dataclass
class Course:
    root: str
    assignments: list[str]
    releases: dict[str, tuple[str, nbformat.NotebookNode]] = field(default_factory=dict)  # a -> (nb name, release)
    setups: dict[str, str] = field(default_factory=dict)  # a -> the source's setup cell
    template: bytes = b""  # the template gradebook (every assignment generated, no student): travels to workers
    broken: dict[str, str] = field(default_factory=dict)  # a -> why its source could not be generated
    secret: bytes = b""
    hidden: dict[str, list[str]] = field(default_factory=dict)  # a -> the lines of its hidden tests


def config_path(root: str) -> str:
    """The course's nbgrader_config.py: its own, else this repository's."""
    path = os.path.join(root, "nbgrader_config.py")
    return path if os.path.isfile(path) else os.path.join(REPO, "nbgrader_config.py")


def settings(root: str) -> dict:
    """``c.AttnGrader.*`` of the course's nbgrader_config.py: the grader's own settings (book_url, canvas_ids,
    canvas_notes_column)."""
    from traitlets.config.loader import PyFileConfigLoader

    path = config_path(root)
    if not os.path.isfile(path):
        return {}
    return dict(PyFileConfigLoader(os.path.basename(path), os.path.dirname(path)).load_config().get("AttnGrader", {}))


def nbgrader_config(root: str, db_url: str, opts: Options | None = None, boxes: str = ""):
    """The course's nbgrader_config.py (the course's own, else this repository's), pointed at a scratch
    course; with ``opts``, the grader's contained executor."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = config_path(root)
    c = Config()
    if os.path.isfile(path):
        c.merge(PyFileConfigLoader(os.path.basename(path), os.path.dirname(path)).load_config())
    c.CourseDirectory.root = root
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.db_url = db_url
    c.Autograde.create_student = True
    c.Autograde.force = True
    c.GenerateAssignment.force = True
    c.GenerateAssignment.create_assignment = True
    c.OneLanguage.language = "both"  # the bilingual release: a handed-in text cell of any release is one side of it
    c.GenerateFeedback.force = True
    c.GenerateFeedback.exporter_class = "attn_grader.run.feedback_page.FeedbackHTML"
    if opts is not None:
        from nbconvert.preprocessors import ClearMetadataPreprocessor
        from nbgrader.preprocessors import (
            AssignLatePenalties,
            CheckCellMetadata,
            IgnorePattern,
            LimitOutput,
            SaveAutoGrades,
        )

        from ..isolation.execute import ContainedExecute

        c.Autograde.autograde_preprocessors = [ContainedExecute, IgnorePattern, ClearMetadataPreprocessor,
                                               LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
        c.ContainedExecute.timeout = opts.cell_timeout
        c.ContainedExecute.budget = opts.budget
        c.ContainedExecute.kernel_name = "attn-grade"
        c.ContainedExecute.boxes = boxes
        c.ContainedExecute.box_bytes = opts.box_bytes
        # A kernel starts in about a second; one that has not answered kernel_info in 30 s will not
        # (seen once in ~1,200 starts: papermill#776, jupyter_client#154): the second attempt comes
        # sooner than after nbclient's default 60 s.
        c.ContainedExecute.startup_timeout = 30
        # The outputs are in once the last cell has run: the kernel (its sandbox) is killed rather than
        # asked to shut down, which nbclient's "graceful" waits for.
        c.ContainedExecute.shutdown_kernel = "immediate"
        c.ContainedExecute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]
    return c


@contextlib.contextmanager
def quiet_logs():
    """nbgrader logs every step; the grader prints one line per submission instead."""
    handler = logging.StreamHandler(io.StringIO())
    root = logging.getLogger()
    old = root.handlers[:], root.level
    root.handlers = [handler]
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers = old[0]
        root.setLevel(old[1])


def converter(cls, root: str, db_url: str, assignment: str, opts: Options | None = None, boxes: str = ""):
    from nbgrader.coursedir import CourseDirectory

    cfg = nbgrader_config(root, db_url, opts, boxes)
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id = assignment
    conv = cls(coursedir=coursedir, config=cfg)
    conv.log.setLevel(logging.CRITICAL)
    return conv


def sqlite_path(db_url: str) -> str | None:
    """The file of a ``sqlite:///path`` URL; None for a database server (PostgreSQL, ...)."""
    return db_url[len("sqlite:///"):] if db_url.startswith("sqlite:///") else None


def course_db_url(root: str, db_url: str | None = None) -> str:
    return db_url or "sqlite:///" + os.path.join(root, "gradebook.db")


def prepare(root: str, assignments: list[str], scratch: str, master_url: str | None = None) -> Course:
    """Generate each assignment from its source into a template gradebook (and the course's one)."""
    from nbgrader.converters import GenerateAssignment

    prep = os.path.join(scratch, "prep")
    master_db = sqlite_path(master_url) if master_url else None
    template_db = os.path.join(prep, "template.db")
    course = Course(root=root, assignments=assignments)
    for a in assignments:
        os.makedirs(os.path.join(prep, "source", a), exist_ok=True)
        shutil.copy(os.path.join(root, "solutions", a, a + ".ipynb"), os.path.join(prep, "source", a, a + ".ipynb"))
        try:
            converter(GenerateAssignment, prep, "sqlite:///" + template_db, a).start()
            if master_url and (master_db is None or os.path.exists(master_db)):
                converter(GenerateAssignment, prep, master_url, a).start()
            release = nbformat.read(os.path.join(prep, "release", a, a + ".ipynb"), as_version=4)
        except Exception as exc:  # noqa: BLE001 - one broken source must not stop the other assignments
            course.broken[a] = f"the source of {a} could not be generated ({type(exc).__name__})"
            continue
        course.releases[a] = (a + ".ipynb", release)
        source = nbformat.read(os.path.join(prep, "source", a, a + ".ipynb"), as_version=4)
        setup = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
        course.setups[a] = setup[0] if setup else ""
        course.hidden[a] = hidden_lines(source.cells)
    if master_db and not os.path.exists(master_db) and os.path.exists(template_db):
        shutil.copy(template_db, master_db)  # a new course: its gradebook starts as the template
    if os.path.exists(template_db):
        with open(template_db, "rb") as f:
            course.template = f.read()
    shutil.rmtree(os.path.join(prep, "source"), ignore_errors=True)
    shutil.rmtree(os.path.join(prep, "release"), ignore_errors=True)
    return course


def scores_from_gradebook(db: str, assignment: str, sid: str) -> dict[str, tuple[float | None, bool]]:
    """{grade id: (nbgrader's automatic score, whether it needs grading by hand)} of one submission."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook("sqlite:///" + db) as gb:
        try:
            sub = gb.find_submission(assignment, sid)
        except MissingEntry:
            return {}
        for nb in sub.notebooks:
            for grade in nb.grades:
                out[grade.name] = (None if grade.auto_score is None else float(grade.auto_score),
                                   bool(grade.needs_manual_grade))
    return out


def set_final_scores(db: str, assignment: str, sid: str, scores: dict[str, float]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + db) as gb:
        sub = gb.find_submission(assignment, sid)
        for nb in sub.notebooks:
            for grade in nb.grades:
                if grade.name in scores:
                    grade.auto_score = scores[grade.name]
                    grade.needs_manual_grade = False
        gb.db.commit()
