"""``make grade``: autograde every submission in a sandbox, re-check it, and record the grades.

    python -m attn_grader.autograde [--jobs N | --scheduler tcp://host:8786] [--assignment PS]
                                    [--course DIR] [--db-url URL] [--no-sandbox]

The pipeline, one module a step, for every ``submitted/<student>/<assignment>/``:

1. **discover** (:mod:`.discover`): each submission is read once into memory (regular files only,
   no links, size-capped); students get safe internal ids for nbgrader;
2. **sanitise** (:mod:`.sanitize`): the notebook is rebuilt from the release with the student's
   answer cells; tampering is flagged;
3. **execute** (:mod:`.execute`): the real nbgrader autograde, on a Dask worker (:mod:`.cluster`), in a
   scratch course private to that batch; every kernel runs in the sandbox (:mod:`.sandbox`) with a
   working folder of its own;
4. **re-check** (:mod:`.recheck`): every answer again, in the sandbox, on inputs drawn from the
   course's secret (:mod:`.secret`), compared with the reference outside; :mod:`.scores` makes the
   final scores;
5. **record** (:mod:`.record`, the one writer: the process that runs ``make grade``): ``gradebook.db``,
   ``grades.csv``, ``grading_report.md``, ``feedback/``, ``grading_results.json``, each written
   atomically.  Each result is also appended, as it arrives, to ``.grader/journal.jsonl``: a run
   interrupted (Ctrl-C, a crash) and started again grades only what the journal does not hold.

The grader's own state (the secret, the lock, the scratch course with its gradebooks and the hidden
tests nbgrader restores) lives in ``<course>/.grader/`` (mode 0700), which no sandbox sees.  As root
the grader runs in a mount namespace of its own and its scratch folder is a tmpfs there: when the
grader ends, even by ``kill -9``, the scratch and every sandbox go with it.  One run per course at a
time: a second run waits for the first (``.grader/lock``).
"""

from __future__ import annotations

import sys

from . import sandbox  # the standard library only

if __name__ == "__main__":  # as root: re-executed in a mount namespace of its own, before the slow imports
    sandbox.private_mounts("attn_grader.autograde", sys.argv[1:])

from . import patches  # noqa: F401 - first of the rest: it changes how nbformat imports

# isort: split
import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import nbformat

from . import classreport, cluster, lms, recheck, record
from .discover import Submitted, find_assignments, find_submissions
from .patches import nbgrader_setup
from .result import Result, empty_result
from .sanitize import sanitize, strip_active_outputs
from .scores import final_scores
from .secret import course_secret, state_dir

warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader re-adding a submission
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = [os.path.join(REPO, p) for p in ("attn_ref", "attn_grader")]  # what a kernel may import


@dataclass
class Options:
    cell_timeout: int = 60  # seconds a cell may run before it is interrupted
    budget: int = 600  # seconds for one whole notebook
    memory: int = 4 << 30  # bytes of address space for a kernel and a re-check
    recheck_seconds: int = 120  # wall-clock seconds for one submission's re-check
    call_seconds: int = 30  # seconds for one call of a student's function in the re-check
    box_bytes: int = 256 << 20  # size of a sandbox's working folder
    sandbox: bool = True  # False only with --no-sandbox
    stall_seconds: int = 0  # nothing heard this long: the busy workers are restarted (0: budget + re-check + 180)


@dataclass
class Course:
    root: str
    assignments: list[str]
    releases: dict[str, tuple[str, nbformat.NotebookNode]] = field(default_factory=dict)  # a -> (nb name, release)
    setups: dict[str, str] = field(default_factory=dict)  # a -> the source's setup cell
    template: bytes = b""  # the template gradebook (every assignment generated, no student): travels to workers
    broken: dict[str, str] = field(default_factory=dict)  # a -> why its source could not be generated
    secret: bytes = b""


# ----------------------------------------------------------------------------------------- nbgrader

def nbgrader_config(root: str, db_url: str, opts: Options | None = None, boxes: str = ""):
    """The course's nbgrader_config.py (the course's own, else this repository's), pointed at a scratch
    course; with ``opts``, the grader's contained executor."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = os.path.join(root, "nbgrader_config.py")
    if not os.path.isfile(path):
        path = os.path.join(REPO, "nbgrader_config.py")
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
    c.GenerateFeedback.force = True
    c.GenerateFeedback.exporter_class = "attn_grader.patches.FeedbackHTML"
    if opts is not None:
        from nbconvert.preprocessors import ClearMetadataPreprocessor
        from nbgrader.preprocessors import (
            AssignLatePenalties,
            CheckCellMetadata,
            IgnorePattern,
            LimitOutput,
            SaveAutoGrades,
        )

        from .execute import ContainedExecute

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
def _quiet_logs():
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


def _converter(cls, root: str, db_url: str, assignment: str, opts: Options | None = None, boxes: str = ""):
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
            _converter(GenerateAssignment, prep, "sqlite:///" + template_db, a).start()
            if master_url and (master_db is None or os.path.exists(master_db)):
                _converter(GenerateAssignment, prep, master_url, a).start()
            release = nbformat.read(os.path.join(prep, "release", a, a + ".ipynb"), as_version=4)
        except Exception as exc:  # noqa: BLE001 - one broken source must not stop the other assignments
            course.broken[a] = f"the source of {a} could not be generated ({type(exc).__name__})"
            continue
        course.releases[a] = (a + ".ipynb", release)
        source = nbformat.read(os.path.join(prep, "source", a, a + ".ipynb"), as_version=4)
        setup = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
        course.setups[a] = setup[0] if setup else ""
    if master_db and not os.path.exists(master_db) and os.path.exists(template_db):
        shutil.copy(template_db, master_db)  # a new course: its gradebook starts as the template
    if os.path.exists(template_db):
        with open(template_db, "rb") as f:
            course.template = f.read()
    shutil.rmtree(os.path.join(prep, "source"), ignore_errors=True)
    shutil.rmtree(os.path.join(prep, "release"), ignore_errors=True)
    return course


def _scores_from_gradebook(db: str, assignment: str, sid: str) -> dict[str, float]:
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook("sqlite:///" + db) as gb:
        try:
            sub = gb.find_submission(assignment, sid)
        except MissingEntry:
            return {}
        for nb in sub.notebooks:
            for grade in nb.grades:
                out[grade.name] = float(grade.auto_score or 0.0)
    return out


def _set_final_scores(db: str, assignment: str, sid: str, scores: dict[str, float]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + db) as gb:
        sub = gb.find_submission(assignment, sid)
        for nb in sub.notebooks:
            for grade in nb.grades:
                if grade.name in scores:
                    grade.auto_score = scores[grade.name]
                    grade.needs_manual_grade = False
        gb.db.commit()


# ----------------------------------------------------------------------------------------- one worker

def _kernelspec(work: str, opts: Options) -> None:
    spec = {"ro": PACKAGES, "memory": opts.memory, "cpu": opts.budget + 60, "fsize": 256 << 20, "nproc": 256}
    if not opts.sandbox:
        spec = {"disabled": True, "memory": opts.memory, "cpu": opts.budget + 60, "fsize": 256 << 20}
    kdir = os.path.join(work, "jupyter", "kernels", "attn-grade")
    os.makedirs(kdir, exist_ok=True)
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        # An interrupt travels as a message: a signal to the sandbox's outer process would not reach the kernel.
        json.dump({"argv": sandbox.kernel_argv(spec), "display_name": "attn_ref grading kernel",
                   "language": "python", "interrupt_mode": "message"}, f)


def grade_items(course: Course, items: list[tuple[Submitted, dict]], scratch: str, opts: Options,
                ran=None) -> list[Result]:
    """Grade sanitised submissions (a Dask task's batch) in a scratch course of their own; call
    ``ran(student, assignment)`` as soon as a notebook has run."""
    from nbgrader.converters import Autograde, GenerateFeedback

    from .core import tasks_of
    from .execute import ContainedExecute

    work = tempfile.mkdtemp(prefix="batch-", dir=scratch)
    cdir = os.path.join(work, "course")
    os.makedirs(cdir)
    # The kernels' working folders hold their IPC sockets, whose paths must stay short (108 bytes, the
    # kernel's limit for a socket's address): the staged /mnt/boxes, else a private folder in /tmp.
    staged_boxes = sandbox.boxes_folder("") if opts.sandbox else ""
    boxes = staged_boxes or tempfile.mkdtemp(prefix="attn-k-", dir="/tmp" if os.path.isdir("/tmp") else None)
    db = os.path.join(cdir, "gradebook.db")
    with open(db, "wb") as f:
        f.write(course.template)
    _kernelspec(work, opts)
    os.environ["JUPYTER_PATH"] = os.path.join(work, "jupyter")
    by_sid = {s.sid: s for s, _ in items}
    if ran is not None:
        ContainedExecute.on_done = lambda path: ran(by_sid[os.path.basename(os.path.dirname(path))].student,
                                                    os.path.basename(path)) \
            if os.path.basename(os.path.dirname(path)) in by_sid else None
    results: list[Result] = []
    groups: dict[str, list[tuple[Submitted, dict]]] = {}
    for s, item in items:
        groups.setdefault(s.assignment, []).append((s, item))
    for a, group in sorted(groups.items()):
        nb_name, release = course.releases[a]
        os.makedirs(os.path.join(cdir, "source", a), exist_ok=True)
        for s, item in group:
            d = os.path.join(cdir, "submitted", s.sid, a)
            os.makedirs(d, exist_ok=True)
            nbformat.write(item["notebook"], os.path.join(d, nb_name))
        try:
            tasks, no_catalogue = tasks_of(a), None
        except Exception as exc:  # noqa: BLE001 - an assignment without a catalogue is graded by nbgrader only
            tasks, no_catalogue = [], f"no catalogue attn_grader.catalogue.{a} ({type(exc).__name__}): re-check skipped"
        cases = {t.func_name: recheck.cases_for(t, course.secret) for t in tasks}
        # The re-checks (each a sandboxed process of its own) run beside nbgrader's autograde, one at a
        # time in a thread: they need only the answers, and a notebook's kernel leaves the CPU idle
        # much of the time it runs (waiting for replies).
        rechecks = {}
        with ThreadPoolExecutor(1, thread_name_prefix="attn-recheck") as pool:
            if tasks:
                for s, item in group:
                    rechecks[s.sid] = pool.submit(
                        recheck.run, tasks, cases, course.setups[a], item["answers"], work,
                        wall_seconds=opts.recheck_seconds, memory_bytes=opts.memory, cpu_seconds=opts.recheck_seconds,
                        call_seconds=opts.call_seconds, box_bytes=opts.box_bytes, use_sandbox=opts.sandbox)
            ContainedExecute.reports.clear()
            ContainedExecute.to_come = len(group)
            try:
                with _quiet_logs(), contextlib.suppress(Exception):  # failures are per student; reported below
                    _converter(Autograde, cdir, "sqlite:///" + db, a, opts, boxes).start()
            finally:
                ContainedExecute.discard_ahead()
        for s, item in group:
            r = empty_result(s.student, a, release, flags=item["flags"], notes=item["notes"], sandbox=opts.sandbox)
            nb_scores = _scores_from_gradebook(db, a, s.sid)
            agdir = os.path.realpath(os.path.join(cdir, "autograded", s.sid, a))
            autograded = os.path.join(agdir, nb_name)
            ex = ContainedExecute.reports.get(agdir, {})
            if not nb_scores or not os.path.exists(autograded):
                r.status = "ungradable"
                r.reason.append("nbgrader could not autograde the notebook")
            if ex.get("not_started"):  # not the student's doing: no grade, a reason, graded again next run
                r.status = "ungradable"
                r.reason.append(f"no grading kernel could start ({ex['not_started'][:200]})")
            elif ex.get("kernel_died"):
                r.flags.append(f"kernel: {ex['kernel_died']}")
            if ex.get("restarted"):
                r.notes.append(f"the first kernel did not start ({ex['restarted'][:200]}); a second one ran it")
            if ex.get("timeouts"):
                r.notes.append(f"cells interrupted after {opts.cell_timeout} s: {ex['timeouts']}")
            if ex.get("output_truncated"):
                r.notes.append("output truncated")
            r.flags += [f"tried: {w}" for w in ex.get("watched", [])]
            verdicts = {}
            if tasks:
                index = rechecks[s.sid].result()
                by_func = recheck.compare(tasks, cases, index)
                verdicts = {f"{t.func_name}_test": by_func[t.func_name] for t in tasks}
                r.mistakes = {gid: {"name": v.mistake, "message": v.message, **(v.example or {})}
                              for gid, v in verdicts.items() if not v.passed and v.mistake}
                if index.get("blocked"):
                    r.flags.append("re-check blocked: " + ", ".join(map(str, index["blocked"]))[:300])
            elif no_catalogue:
                r.notes.append(no_catalogue)
            final = final_scores(r.tasks, r.max, nb_scores, verdicts)
            r.task_notes.update(final.task_notes)
            r.flags += final.flags
            if r.status != "ungradable":
                r.scores = final.scores
                r.total = round(sum(final.scores.values()), 4)
                with contextlib.suppress(Exception):
                    _set_final_scores(db, a, s.sid, final.scores)
                    nb = nbformat.read(autograded, as_version=4)
                    strip_active_outputs(nb)
                    nb.cells.insert(0, record.notes_cell(r.finish()))
                    nbformat.write(nb, autograded)
            results.append(r)
        with _quiet_logs(), contextlib.suppress(Exception):
            _converter(GenerateFeedback, cdir, "sqlite:///" + db, a).start()
        for (s, _), r in zip(group, results[-len(group):], strict=True):
            fb = os.path.join(cdir, "feedback", s.sid, a, nb_name[:-6] + ".html")
            if os.path.exists(fb):
                with open(fb, encoding="utf-8") as f:
                    r.feedback_html = f.read()
            r.finish()
        shutil.rmtree(os.path.join(cdir, "autograded"), ignore_errors=True)  # the hidden tests in them: gone now
    ContainedExecute.on_done = None
    shutil.rmtree(work, ignore_errors=True)
    if not staged_boxes:
        shutil.rmtree(boxes, ignore_errors=True)
    return results


# ----------------------------------------------------------------------------------------- a run

@contextlib.contextmanager
def course_lock(root: str, verbose: bool = True):
    """One grading run per course at a time; a second one waits, and says so."""
    fd = os.open(os.path.join(state_dir(root), "lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if verbose:
                print(f"another grading run holds {root}/.grader/lock: waiting for it to finish", flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def scratch_folder(root: str):
    """The run's scratch folder in ``.grader/scratch``: a tmpfs in the grader's own mount namespace
    when root (gone with the grader, even after a kill); else a 0700 folder, removed at the end and,
    after a crash, by the next run (which holds the lock, so nothing else uses it)."""
    base = os.path.join(state_dir(root), "scratch")
    os.makedirs(base, mode=0o700, exist_ok=True)
    if os.environ.get(sandbox.PRIVATE_ENV) == str(os.getpid()) and os.geteuid() == 0:
        os.environ[sandbox.MOUNTS_ENV] = "1"  # this process and its workers may mount (privately)
        sandbox.mount_tmpfs(base, 8 << 30)
        sandbox.stage([*PACKAGES, recheck.HARNESS])  # once for every sandbox of this run
        os.environ[cluster.SCRATCH_ENV] = base  # the local cluster's workers put their batches here
        try:
            yield base
        finally:
            os.environ.pop(cluster.SCRATCH_ENV, None)
            sandbox.unstage()
            sandbox.unmount(base)
            os.environ.pop(sandbox.MOUNTS_ENV, None)
        return
    for stale in os.listdir(base):
        shutil.rmtree(os.path.join(base, stale), ignore_errors=True)
    path = tempfile.mkdtemp(prefix="run-", dir=base)
    os.environ[cluster.SCRATCH_ENV] = path
    try:
        yield path
    finally:
        os.environ.pop(cluster.SCRATCH_ENV, None)
        shutil.rmtree(path, ignore_errors=True)


def _code_digest(paths: list[str]) -> str:
    """A digest of every Python and catalogue file under ``paths``: what grading depends on besides
    the submission and the assignment's source."""
    h = hashlib.sha256()
    for root in paths:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".json")):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as f:
                        h.update(f.read())
    return h.hexdigest()


JOURNAL = "journal.jsonl"  # in .grader/: each result of a run as it arrives, until the run has written it all


def _digest(s: Submitted, root: str, code: str) -> str:
    """What a grade depends on: the submitted bytes, the assignment's source, the grader and the reference."""
    h = hashlib.sha256(code.encode())
    h.update(s.notebook or b"")
    src = os.path.join(root, "solutions", s.assignment, s.assignment + ".ipynb")
    with contextlib.suppress(OSError), open(src, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def _journal_kept(root: str) -> dict[str, tuple[str, Result]]:
    """The results an interrupted run wrote to its journal: {key: (digest, Result)}."""
    path = os.path.join(state_dir(root), JOURNAL)
    kept = {}
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
                entry = json.loads(line)
                r = Result.from_dict(entry["result"])
                kept[r.key] = (entry["digest"], r)
    return kept


def run(root: str, jobs: int = 1, only: list[str] | None = None, opts: Options | None = None,
        results_out: str | None = None, verbose: bool = True, db_url: str | None = None,
        scheduler: str | None = None, export: list[str] | tuple = ()) -> dict[str, Result]:
    """Grade the course at ``root`` from this process (the one writer) on a Dask cluster: a local one
    of ``jobs`` worker processes, or the one at ``scheduler``; return {"student/assignment": Result}."""
    opts = opts or Options()
    root = os.path.realpath(root)
    with course_lock(root, verbose), scratch_folder(root) as scratch:
        return _run(root, jobs, only, opts, results_out, verbose, db_url, scratch, scheduler, list(export))


def _run(root, jobs, only, opts, results_out, verbose, db_url, scratch, scheduler, export) -> dict[str, Result]:
    start = time.monotonic()
    assignments = find_assignments(root, only)
    notebooks = {a: a + ".ipynb" for a in assignments}
    subs = find_submissions(root, assignments, notebooks)
    if not subs and not os.path.exists(os.path.join(root, record.RESULTS_FILE)):
        if verbose:
            print(f"no submissions under {os.path.join(root, 'submitted')}/<student>/<assignment>/: nothing to grade "
                  "(try make grade-demo)", flush=True)
        return {}
    with cluster.connect(max(1, min(jobs, len(subs))), scheduler, verbose) as engine:  # starts meanwhile
        return _grade_class(root, assignments, subs, opts, results_out, verbose, db_url, scratch, engine, start,
                            export)


def _grade_class(root, assignments, subs, opts, results_out, verbose, db_url, scratch, engine,
                 start, export) -> dict[str, Result]:
    nbgrader_setup()  # after the cluster has started starting: its workers import meanwhile
    master_url = course_db_url(root, db_url)
    master_db = sqlite_path(master_url)
    with _quiet_logs():
        course = prepare(root, assignments, scratch, master_url)
    course.secret = course_secret(root)
    # A SQLite gradebook is copied into the scratch and replaces the course's in one step at the end
    # (or when the run is interrupted); a database server is written directly, one transaction per submission.
    working_url = "sqlite:///" + os.path.join(scratch, "prep", "gradebook.working.db") if master_db else master_url
    if master_db and os.path.exists(master_db):
        shutil.copy(master_db, sqlite_path(working_url))
    n = len(subs)
    done: dict[str, Result] = {}
    code = _code_digest(PACKAGES) + json.dumps(asdict(opts), sort_keys=True)
    digests = {(s.student, s.assignment): _digest(s, root, code) for s in subs}
    kept = _journal_kept(root)
    journal = open(os.path.join(state_dir(root), JOURNAL), "a", encoding="utf-8")  # noqa: SIM115

    def report(r: Result, fresh: bool = True) -> None:
        done[r.key] = r
        with _quiet_logs():
            record.merge_gradebook(working_url, [r])
        if fresh:
            record.put_feedback(root, r)
            if r.status != "ungradable":  # a grader's failure is graded again by the next run
                journal.write(json.dumps({"digest": digests.get((r.student, r.assignment), ""),
                                          "result": r.to_dict()}) + "\n")
                journal.flush()
        if verbose:
            print(record.progress_line(len(done), n, r), flush=True)

    ran_count = 0
    items = []

    def ran(student, a):
        nonlocal ran_count
        ran_count += 1
        if verbose:
            print(f"[ran {ran_count}/{len(items)}] {record.shown(student)} {a}", flush=True)

    reused = 0
    for s in subs:
        release = course.releases.get(s.assignment, (None, None))[1]
        old = kept.get(f"{s.student}/{s.assignment}")
        if old is not None and old[0] == digests[(s.student, s.assignment)]:
            reused += 1
            report(old[1], fresh=False)
            continue
        if s.assignment in course.broken:
            r = empty_result(s.student, s.assignment, release, reason=[course.broken[s.assignment]],
                             sandbox=opts.sandbox)
            r.status = "ungradable"
            report(r)
            continue
        clean = sanitize(s, {course.releases[s.assignment][0]: release})
        if clean.notebook is None:
            r = empty_result(s.student, s.assignment, release, reason=[clean.reason], flags=clean.flags,
                             notes=clean.notes, sandbox=opts.sandbox)
            r.status = "ungradable"
            report(r.finish())
            continue
        items.append((s, {"notebook": clean.notebook, "answers": clean.answers, "flags": clean.flags,
                          "notes": clean.notes}))
    if reused and verbose:
        print(f"{reused} submissions graded by the interrupted run are kept (unchanged since); "
              f"{len(items)} to grade", flush=True)

    def failed(item, why: str) -> Result:
        s, it = item
        r = empty_result(s.student, s.assignment, course.releases[s.assignment][1], reason=[why],
                         flags=it["flags"], notes=it["notes"], sandbox=opts.sandbox)
        r.status = "ungradable"
        return r

    workers = 0
    try:
        if items:
            client = engine.client
            workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            cluster.grade_all(client, course, items, opts, report, failed, ran, stall_seconds=opts.stall_seconds)
    finally:
        journal.close()
        if master_db:  # what has been graded is kept, even when the run was interrupted
            shutil.copy(sqlite_path(working_url), master_db + ".tmp")
            os.replace(master_db + ".tmp", master_db)
    if results_out:
        record.write_atomic(results_out, json.dumps({"assignments": assignments,
                                                     "results": {k: r.to_dict() for k, r in done.items()}},
                                                    sort_keys=True))
    present = {(s.student, s.assignment) for s in subs}
    stored = record.merge(root, done, assignments, lambda st, a: (st, a) in present)
    seconds = time.monotonic() - start
    classreport.write(root, stored, {"finished": time.time(), "seconds": round(seconds, 1), "workers": workers,
                                     "graded": len(done), "sandbox": opts.sandbox})
    if export:
        lms.export(root, export, stored)
    # Everything graded is in the course's files now; an interrupted run's results of assignments
    # not graded this time stay in the journal for the run that grades them.
    left = [json.dumps({"digest": d, "result": r.to_dict()})
            for k, (d, r) in kept.items() if k not in done]
    if left:
        record.write_atomic(os.path.join(state_dir(root), JOURNAL), "\n".join(left) + "\n", 0o600)
    else:
        os.unlink(os.path.join(state_dir(root), JOURNAL))
    if verbose:
        _summary(done, seconds, workers, opts, export)
    return done


def _summary(this_run: dict[str, Result], seconds: float, workers: int, opts: Options, export=()) -> None:
    rs = list(this_run.values())
    count = {s: sum(r.status == s for r in rs) for s in ("ok", "flagged", "ungradable")}
    full = sum(r.status != "ungradable" and r.total >= r.max_total - 1e-9 for r in rs)
    files = [record.CSV_FILE, record.REPORT_FILE, classreport.REPORT_FILE, *(lms.FILES[f] for f in export)]
    print(f"graded {len(rs)} submissions in {seconds:.1f} s on {workers} worker(s): {count['ok']} ok, "
          f"{count['flagged']} flagged, {count['ungradable']} ungradable, {full} full marks"
          f"{'' if opts.sandbox else ', WITHOUT the sandbox (--no-sandbox)'}. "
          f"See {', '.join(files[:-1])} and {files[-1]}.", flush=True)


def grade(root: str, jobs: int = 1, only: list[str] | None = None, opts: Options | None = None,
          results_out: str | None = None, verbose: bool = True, db_url: str | None = None,
          scheduler: str | None = None, export: list[str] | tuple = ()) -> dict[str, Result]:
    """Grade the course at ``root`` the way ``make grade`` does (a grader process of its own); return
    {"student/assignment": Result} of this run."""
    opts = opts or Options()
    with tempfile.TemporaryDirectory() as tmp:
        out = results_out or os.path.join(tmp, "results.json")
        argv = [sys.executable, "-m", "attn_grader.autograde", "--course", root, "--jobs", str(jobs),
                "--results", out, "--options", json.dumps(asdict(opts))]
        argv += [x for a in (only or []) for x in ("--assignment", a)]
        argv += ["--db-url", db_url] if db_url else []
        argv += ["--scheduler", scheduler] if scheduler else []
        argv += ["--export", ",".join(export)] if export else []
        argv += [] if verbose else ["--quiet"]
        proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in proc.stdout:  # the progress lines, through this process's sys.stdout
            if verbose:
                print(line, end="", flush=True)
        err = proc.stderr.read()
        if proc.wait() != 0:
            raise RuntimeError(f"grading failed (exit {proc.returncode}): {err[-2000:]}")
        if not os.path.exists(out):
            return {}
        with open(out) as f:
            data = json.load(f)
    return {k: Result.from_dict(v) for k, v in data["results"].items()}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--course", default=".", help="course root (holds solutions/ and submitted/)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes of the local Dask cluster")
    p.add_argument("--scheduler", help="grade on the Dask cluster whose scheduler is at this address "
                                       "(tcp://host:8786) instead of a local one")
    p.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    p.add_argument("--cell-timeout", type=int, default=Options.cell_timeout)
    p.add_argument("--budget", type=int, default=Options.budget)
    p.add_argument("--memory-gb", type=float, default=Options.memory / (1 << 30))
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade without the sandbox where bubblewrap cannot run (every row says so)")
    p.add_argument("--options", help=argparse.SUPPRESS)  # grade(): every Options field as JSON
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--export", default="", help="also write the grades for an LMS: canvas, moodle or canvas,moodle "
                                                 "(grades_canvas.csv, grades_moodle.csv)")
    p.add_argument("--results", help="also write this run's results (JSON) here")
    p.add_argument("--db-url", help="the course gradebook as an nbgrader db_url, e.g. postgresql://user@host/course "
                                    "(default: sqlite:///<course>/gradebook.db)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be 1 or more")
    try:
        export = lms.parse_formats(args.export)
        if export:
            lms.read_roster(os.path.realpath(args.course))  # a bad roster is said before the class is graded
    except lms.ExportError as exc:
        p.error(f"--export: {exc}")
    root = os.path.realpath(args.course)
    if args.options:
        opts = Options(**json.loads(args.options))
    else:
        opts = Options(cell_timeout=args.cell_timeout, budget=args.budget, memory=int(args.memory_gb * (1 << 30)))
    if args.no_sandbox:
        opts.sandbox = False
    if opts.sandbox:
        why = sandbox.unusable()
        if why:
            print(f"make grade: refusing to grade without a sandbox: {why}.\n"
                  "To grade anyway, unprotected (every row will say so): make grade ARGS=--no-sandbox "
                  "or python -m attn_grader.autograde --no-sandbox", file=sys.stderr)
            return 2
    signal.signal(signal.SIGINT, cluster.on_sigint)
    try:
        run(root, jobs=args.jobs, only=args.assignment, opts=opts, results_out=args.results,
            verbose=not args.quiet, db_url=args.db_url, scheduler=args.scheduler, export=export)
    except lms.ExportError as exc:
        print(f"make grade: the grades are written, the LMS export is not: {exc}", file=sys.stderr)
        return 2
    except cluster.NoCluster as exc:
        print(f"make grade: {exc}. Start one (README, 'More than one machine') or grade here with JOBS=N.",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: what was graded is kept in {os.path.join(root, '.grader', JOURNAL)} and the "
              "gradebook; run the same command again to grade the rest.", file=sys.stderr, flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
