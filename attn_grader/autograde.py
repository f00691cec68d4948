"""``make grade``: autograde every submission, contained, re-checked, into grades.csv and feedback HTML.

    python -m attn_grader.autograde [--jobs N] [--assignment PS] [--course DIR]
    python -m attn_grader.autograde --shard K/N --results part_K.json   # one machine's slice
    python -m attn_grader.autograde --merge part_*.json                 # the one writer

For every ``submitted/<student>/<assignment>/`` of every assignment under ``solutions/``:

1. **sanitise** (:mod:`.sanitize`): only the expected notebook is kept, rebuilt from the release with
   the student's answer cells; tampering is flagged; an unreadable or missing notebook gets its row
   and reason;
2. **grade** with the real nbgrader in a *scratch* course (a temporary folder outside the repository)
   that holds only the rebuilt notebooks and a scratch gradebook made from the sources: no
   ``solutions/``.  The kernel runs through :mod:`.kernel_launcher` (memory and CPU limits, an
   audit hook refusing instructor files, an unprivileged user where that works) and
   :class:`.execute.ContainedExecute` (per-cell timeout, notebook budget, killed when it dies or
   hangs; every process it started is killed afterwards);
3. **re-check** every answer in an isolated process (:mod:`.recheck`): a task scores only when the
   notebook's test and the re-check both pass; a disagreement is flagged;
4. **merge** (this process only, the one writer): ``gradebook.db`` (a resubmission replaces every
   earlier grade), ``grades.csv`` (one row per student and assignment), ``grading_report.md``,
   ``feedback/<student>/<assignment>/<notebook>.html``.

With ``--jobs N`` the submissions are split into N shards (round robin over the sorted list), each
graded by a forked worker in its own scratch course with its own scratch gradebook; the results are
identical to ``--jobs 1``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import logging
import multiprocessing as mp
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

# jsonschema (under nbformat) builds an IRI grammar with rfc3987-syntax when it is imported: 1.3-2.4 s
# of every grading process (jsonschema issue #1428), for a format notebooks never use. Without the
# module jsonschema simply has no "iri" format checker.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
import nbformat  # noqa: E402

from . import recheck as recheck_mod  # noqa: E402
from .sanitize import sanitize  # noqa: E402

# nbgrader's gradebook API triggers SQLAlchemy's "not in session" warnings when a submission is re-added.
warnings.filterwarnings("ignore", message=".*not in session.*")

RESULTS_FILE = "grading_results.json"
CSV_FILE = "grades.csv"
REPORT_FILE = "grading_report.md"
IGNORE_DIRS = {".ipynb_checkpoints", "__pycache__"}


@dataclass
class Options:
    cell_timeout: int = 60  # seconds a cell may run before it is interrupted
    budget: int = 600  # seconds for one whole notebook
    memory: int = 4 << 30  # bytes of address space for the kernel and the re-check
    recheck_seconds: int = 120  # wall-clock seconds for one submission's re-check
    call_seconds: int = 30  # seconds for one call of a student's function in the re-check
    drop_privileges: bool = False  # opt-in: run kernels and re-checks as a fresh uid when root (see --help)


@dataclass
class Course:
    root: str
    assignments: list[str]
    releases: dict[str, tuple[str, nbformat.NotebookNode]] = field(default_factory=dict)  # a -> (nb name, release)
    setups: dict[str, str] = field(default_factory=dict)  # a -> the source's setup cell
    template_db: str = ""
    broken: dict[str, str] = field(default_factory=dict)  # a -> why its source could not be generated


# ----------------------------------------------------------------------------------------- discovery

def find_assignments(root: str, only: list[str] | None = None) -> list[str]:
    src = os.path.join(root, "solutions")
    names = sorted(d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, d + ".ipynb"))) \
        if os.path.isdir(src) else []
    if only:
        missing = [a for a in only if a not in names]
        if missing:
            raise SystemExit(f"no assignment {', '.join(missing)} under {src}")
        names = [a for a in names if a in only]
    return names


def find_submissions(root: str, assignments: list[str]) -> list[tuple[str, str]]:
    sub = os.path.join(root, "submitted")
    if not os.path.isdir(sub):
        return []
    out = []
    for student in sorted(os.listdir(sub)):
        if student in IGNORE_DIRS or not os.path.isdir(os.path.join(sub, student)):
            continue
        for a in assignments:
            if os.path.isdir(os.path.join(sub, student, a)):
                out.append((student, a))
    return out


def nbgrader_setup() -> None:
    """Put this Python's bin/ on PATH (nbgrader runs ``alembic`` from it) and spare nbgrader two costs.

    * When it creates a gradebook, nbgrader asks the ``alembic`` command for its schema's head
      revision (a subprocess, about 2.5 s); the answer is read here instead, in this process, from
      nbgrader's own migration scripts, once.
    * Every ``Gradebook(...)`` (a dozen per submission) makes a new SQLAlchemy engine, and an engine
      keeps the cache of compiled SQL, so every query was compiled anew; engines are kept here per
      process and database URL (``Gradebook.close`` only disposes of their connections).
    """
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    import functools

    import nbgrader.api as api

    if not hasattr(api.get_alembic_version, "cache_info"):
        api.get_alembic_version = functools.lru_cache(maxsize=1)(_alembic_head)
    if api.create_engine is not _cached_engine:
        _ENGINE_FACTORY.append(api.create_engine)
        api.create_engine = _cached_engine


_ENGINE_FACTORY: list = []
_ENGINES: dict = {}


def _cached_engine(url, **kwargs):
    key = (os.getpid(), str(url), tuple(sorted(kwargs.items())))  # a forked worker makes its own
    if key not in _ENGINES:
        _ENGINES[key] = _ENGINE_FACTORY[0](url, **kwargs)
    return _ENGINES[key]


def _alembic_head() -> str:
    import nbgrader
    from alembic.script import ScriptDirectory

    return ScriptDirectory(os.path.join(os.path.dirname(nbgrader.__file__), "alembic")).get_current_head()


def _nbgrader_config(root: str, db_url: str, opts: Options | None = None):
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = root
    c.CourseDirectory.course_id = "self-attention-step-by-step"
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.db_url = db_url
    c.OverwriteCells.add_missing_cells = True
    c.IgnorePattern.enabled = True
    c.IgnorePattern.pattern = r"(?s).*"
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.Autograde.create_student = True
    c.Autograde.force = True
    c.GenerateAssignment.force = True
    c.GenerateFeedback.force = True
    c.GenerateFeedback.exporter_class = "attn_grader.feedback.FeedbackHTML"
    c.GenerateAssignment.create_assignment = True
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
        # The outputs are in once the last cell has run: the kernel is killed rather than asked to
        # shut down (nbclient's "graceful" waits for it to exit), and kill_leftovers cleans up after it.
        c.ContainedExecute.shutdown_kernel = "immediate"
        c.ContainedExecute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]
    return c


@contextlib.contextmanager
def _quiet_logs():
    """nbgrader logs every step; the grader prints one line per submission instead."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    old = root.handlers[:], root.level
    root.handlers = [handler]
    root.setLevel(logging.WARNING)
    try:
        yield stream
    finally:
        root.handlers = old[0]
        root.setLevel(old[1])


def _converter(cls, root: str, db_url: str, assignment: str, opts: Options | None = None):
    from nbgrader.coursedir import CourseDirectory

    cfg = _nbgrader_config(root, db_url, opts)
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id = assignment
    conv = cls(coursedir=coursedir, config=cfg)
    conv.log.setLevel(logging.CRITICAL)
    return conv


def sqlite_path(db_url: str) -> str | None:
    """The file of a ``sqlite:///path`` URL; None for a database server (PostgreSQL, ...)."""
    return db_url[len("sqlite:///"):] if db_url.startswith("sqlite:///") else None


def course_db_url(root: str, db_url: str | None = None) -> str:
    """The course gradebook: ``db_url`` (nbgrader's ``CourseDirectory.db_url``) or gradebook.db in the course."""
    return db_url or "sqlite:///" + os.path.join(root, "gradebook.db")


def prepare(root: str, assignments: list[str], scratch: str, master_url: str | None = None) -> Course:
    """Generate each assignment from its source into a template gradebook (and the course's one)."""
    from nbgrader.converters import GenerateAssignment

    prep = os.path.join(scratch, "prep")
    master_db = sqlite_path(master_url) if master_url else None
    course = Course(root=root, assignments=assignments, template_db=os.path.join(prep, "template.db"))
    for a in assignments:
        os.makedirs(os.path.join(prep, "source", a), exist_ok=True)
        shutil.copy(os.path.join(root, "solutions", a, a + ".ipynb"), os.path.join(prep, "source", a, a + ".ipynb"))
        try:
            _converter(GenerateAssignment, prep, "sqlite:///" + course.template_db, a).start()
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
    if master_db and not os.path.exists(master_db) and os.path.exists(course.template_db):
        shutil.copy(course.template_db, master_db)  # a new course: its gradebook starts as the template
    # Nothing with a solution stays on disk while students' code runs: only the template gradebook.
    shutil.rmtree(os.path.join(prep, "source"), ignore_errors=True)
    shutil.rmtree(os.path.join(prep, "release"), ignore_errors=True)
    return course


# ----------------------------------------------------------------------------------------- processes

def _token_pids(token: str) -> list[int]:
    pids = []
    needle = f"ATTN_GRADING_TOKEN={token}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def _uid_pids(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(entry))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int, exclude: set[int] | frozenset = frozenset()) -> list[int]:
    """Every process below ``pid``, except the subtrees of the processes in ``exclude``."""
    children = _children_map()
    out, stack = [], [c for c in children.get(pid, []) if c not in exclude]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def set_subreaper(on: bool) -> None:
    """Make orphans of the kernel (a daemon that left its session) our children, so they can be found."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1 if on else 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def kill_leftovers(token: str, uid: int | None = None, baseline: set[int] | None = None) -> int:
    """Kill every process started by a kernel; return how many.

    Found three ways: the grading token in its environment, the kernel's uid (when the kernel runs
    as its own user) and, with ``baseline`` (the children this process had before grading), every
    process below this one that is not below those (orphans come back to us as the subreaper).
    """
    killed = 0
    for _ in range(3):
        pids = set(_token_pids(token)) | (set(_uid_pids(uid)) if uid is not None else set())
        if baseline is not None:
            pids |= set(descendants(os.getpid(), baseline))
        pids.discard(os.getpid())
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.05)
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
    return killed


def _probe_unprivileged(uid: int, scratch: str) -> bool:
    """Can a process running as ``uid`` start this Python and import attn_ref and ipykernel?"""
    if os.geteuid() != 0:
        return False

    def drop():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    try:
        r = subprocess.run([sys.executable, "-c", "import attn_grader.core, ipykernel"], cwd=scratch,
                           preexec_fn=drop, capture_output=True, timeout=60, env={"HOME": scratch,
                                                                                    "PATH": "/usr/bin:/bin"})
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# ----------------------------------------------------------------------------------------- one worker

def _scores_from_gradebook(db: str, assignment: str, student: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook("sqlite:///" + db) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        for nb in sub.notebooks:
            for grade in nb.grades:
                out[grade.name] = (float(grade.auto_score or 0.0), float(grade.max_score))
    return out


def _set_final_scores(db: str, assignment: str, student: str, scores: dict[str, float]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + db) as gb:
        sub = gb.find_submission(assignment, student)
        for nb in sub.notebooks:
            for grade in nb.grades:
                if grade.name in scores:
                    grade.auto_score = scores[grade.name]
                    grade.needs_manual_grade = False
        gb.db.commit()


def _notes_cell(result: dict) -> nbformat.NotebookNode:
    lines = ["### Grading notes", ""]
    for gid in result["tasks"]:
        score, mx = result["scores"].get(gid), result["max"].get(gid)
        why = result["task_notes"].get(gid, "")
        lines.append(f"- **{gid}**: {score if score is not None else '-'} / {mx}" + (f" — {why}" if why else ""))
    for flag in result["flags"]:
        lines.append(f"- flag: {flag}")
    for note in result["notes"]:
        lines.append(f"- note: {note}")
    return nbformat.v4.new_markdown_cell("\n".join(lines))


def _policy(work: str, root: str, token: str, uid: int | None, opts: Options) -> str:
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    protect = [os.path.join(root, p) for p in ("solutions", "gradebook.db", CSV_FILE, RESULTS_FILE, REPORT_FILE,
                                              "feedback", "autograded", "submitted", "source")]
    protect += [os.path.join(work, "course", "gradebook.db"), os.path.join(work, "course", "submitted"),
                os.path.join(os.path.dirname(work), "prep")]
    policy = {"rlimit_as": opts.memory, "rlimit_cpu": opts.budget + 60, "rlimit_fsize": 256 << 20,
              "home": home, "token": token, "deny": protect, "deny_write": [root, os.path.join(work, "course")],
              "log": os.path.join(work, "denied.log")}
    if uid is not None:
        policy.update(uid=uid, gid=uid)
    path = os.path.join(work, "policy.json")
    with open(path, "w") as f:
        json.dump(policy, f)
    kdir = os.path.join(work, "jupyter", "kernels", "attn-grade")
    os.makedirs(kdir, exist_ok=True)
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "attn_grader.kernel_launcher", "--policy", path,
                            "-f", "{connection_file}"],
                   "display_name": "attn_ref grading kernel", "language": "python"}, f)
    return path


def _denied(work: str) -> list[str]:
    try:
        with open(os.path.join(work, "denied.log")) as f:
            lines = f.read().splitlines()[:50]
        open(os.path.join(work, "denied.log"), "w").close()
    except OSError:
        return []
    out = []
    for line in lines:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            d = json.loads(line)
            out.append(f"blocked {d['event']} of {d['path']}")
    return list(dict.fromkeys(out))


def grade_shard(course: Course, items: list[dict], scratch: str, opts: Options, report=None,
                ran=None) -> list[dict]:
    """Grade the sanitised submissions ``items`` in a scratch course of their own; return results.

    ``report(result)`` is called with each result (once its assignment's batch has its feedback);
    ``ran(student, assignment)`` as soon as a notebook has run, so that a long batch shows progress.
    """
    from nbgrader.converters import Autograde, GenerateFeedback

    from .core import tasks_of
    from .execute import ContainedExecute

    work = tempfile.mkdtemp(prefix="shard-", dir=scratch)
    os.chmod(work, 0o755)
    cdir = os.path.join(work, "course")
    os.makedirs(cdir)
    db = os.path.join(cdir, "gradebook.db")
    shutil.copy(course.template_db, db)
    token = secrets.token_hex(16)
    uid = None
    if opts.drop_privileges and os.geteuid() == 0:
        candidate = 100000 + secrets.randbelow(1 << 30)
        if _probe_unprivileged(candidate, work):
            uid = candidate
    _policy(work, course.root, token, uid, opts)
    baseline = set(_children_map().get(os.getpid(), []))
    set_subreaper(True)
    if uid is not None:
        os.chown(os.path.join(work, "home"), uid, uid)
    os.environ["JUPYTER_PATH"] = os.path.join(work, "jupyter")
    os.environ["ATTN_GRADING_SCRATCH"] = work
    results = []
    by_assignment: dict[str, list[dict]] = {}
    for item in items:
        by_assignment.setdefault(item["assignment"], []).append(item)
    for a, group in sorted(by_assignment.items()):
        nb_name = course.releases[a][0]
        os.makedirs(os.path.join(cdir, "source", a), exist_ok=True)
        for item in group:
            d = os.path.join(cdir, "submitted", item["student"], a)
            os.makedirs(d, exist_ok=True)
            nbformat.write(nbformat.from_dict(item["notebook"]), os.path.join(d, nb_name))
        ContainedExecute.reports.clear()
        original_preprocess = ContainedExecute.preprocess

        def preprocess_and_clean(self, nb, resources=None, km=None, _orig=original_preprocess):
            try:
                return _orig(self, nb, resources, km)
            finally:
                kill_leftovers(token, uid, baseline)
                path = os.path.realpath((resources or {}).get("metadata", {}).get("path", "") or ".")
                ContainedExecute.reports.setdefault(path, {})["denied"] = _denied(work)
                if ran is not None:  # path: .../autograded/<student>/<assignment>
                    ran(os.path.basename(os.path.dirname(path)), os.path.basename(path))
        ContainedExecute.preprocess = preprocess_and_clean
        try:
            with _quiet_logs():
                conv = _converter(Autograde, cdir, "sqlite:///" + db, a, opts)
                try:
                    conv.start()
                except BaseException as exc:  # noqa: BLE001 - failures are per student; reported below
                    if isinstance(exc, KeyboardInterrupt):
                        raise
        finally:
            ContainedExecute.preprocess = original_preprocess
            kill_leftovers(token, uid, baseline)
        try:
            tasks = tasks_of(a)
        except Exception as exc:  # noqa: BLE001 - an assignment without a catalogue is graded by nbgrader only
            tasks, no_catalogue = [], f"no catalogue attn_grader.catalogue.{a} ({type(exc).__name__}): re-check skipped"
        else:
            no_catalogue = None
        for item in group:
            student = item["student"]
            result = _empty_result(course, a, student, item)
            nb_scores = _scores_from_gradebook(db, a, student)
            agdir = os.path.realpath(os.path.join(cdir, "autograded", student, a))
            exec_report = ContainedExecute.reports.get(agdir, {})
            autograded = os.path.join(agdir, nb_name)
            if not nb_scores or not os.path.exists(autograded):
                result["status"] = "ungradable"
                result["reason"].append("nbgrader could not autograde the notebook")
            if exec_report.get("kernel_died"):
                result["flags"].append(f"kernel: {exec_report['kernel_died']}")
            if exec_report.get("restarted"):
                result["notes"].append(f"the first kernel did not start ({exec_report['restarted'][:200]}); "
                                       "a second one ran the notebook")
            if exec_report.get("timeouts"):
                result["notes"].append(f"cells interrupted after {opts.cell_timeout} s: {exec_report['timeouts']}")
            if exec_report.get("output_truncated"):
                result["notes"].append("output truncated")
            result["flags"].extend(exec_report.get("denied", []))
            # The re-check, outside the student's kernel.
            rwork = tempfile.mkdtemp(prefix="recheck-", dir=work)
            os.chmod(rwork, 0o755)
            if tasks:
                index = recheck_mod.run(tasks, course.setups[a], item["answers"], rwork,
                                        wall_seconds=opts.recheck_seconds, memory_bytes=opts.memory,
                                        cpu_seconds=opts.recheck_seconds, call_seconds=opts.call_seconds,
                                        user=(uid, uid) if uid is not None else None)
                verdicts = recheck_mod.compare(tasks, index, rwork)
            else:
                index, verdicts = {}, {}
                result["notes"].append(no_catalogue)
            if index.get("denied"):
                result["flags"].append("re-check blocked: " + ", ".join(dict.fromkeys(index["denied"]))[:300])
            kill_leftovers(token, uid, baseline)
            by_func = {t.func_name: t for t in tasks}
            final: dict[str, float] = {}
            for gid in result["tasks"]:
                nb_score, mx = nb_scores.get(gid, (0.0, result["max"][gid]))
                func = gid[: -len("_test")] if gid.endswith("_test") else None
                verdict = verdicts.get(func) if func in by_func else None
                ok_nb = nb_score >= mx - 1e-9
                if verdict is None:  # a graded cell without a catalogued task: nbgrader's score stands
                    final[gid] = nb_score
                    continue
                if ok_nb and verdict.passed:
                    final[gid] = mx
                else:
                    final[gid] = 0.0 if not verdict.passed else nb_score
                    if not verdict.passed:
                        result["task_notes"][gid] = f"re-check: {verdict.reason}"
                    if ok_nb and not verdict.passed:
                        result["flags"].append(f"{gid}: notebook test passed but the re-check failed "
                                               f"({verdict.reason[:160]})")
                    elif not ok_nb and verdict.passed:
                        result["task_notes"][gid] = "the notebook's test failed (see the feedback)"
            if result["status"] != "ungradable":
                result["scores"] = final
                result["total"] = round(sum(final.values()), 4)
            if result["status"] != "ungradable" and os.path.exists(autograded):
                with contextlib.suppress(Exception):
                    _set_final_scores(db, a, student, final)
                    nb = nbformat.read(autograded, as_version=4)
                    nb.cells.insert(0, _notes_cell(result))
                    nbformat.write(nb, autograded)
            results.append(result)
        # Feedback for every graded student of this assignment, in one nbgrader call.
        try:
            with _quiet_logs():
                _converter(GenerateFeedback, cdir, "sqlite:///" + db, a).start()
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
        for result in results:
            if result["assignment"] != a:
                continue
            fb = os.path.join(cdir, "feedback", result["student"], a, nb_name[:-6] + ".html")
            if os.path.exists(fb):
                with open(fb, encoding="utf-8") as f:
                    result["feedback_html"] = f.read()
            _finish(result)
            if report is not None:
                report(result)
    kill_leftovers(token, uid, baseline)
    set_subreaper(False)
    shutil.rmtree(work, ignore_errors=True)
    return results


def _empty_result(course: Course, a: str, student: str, item: dict | None = None) -> dict:
    release = course.releases[a][1] if a in course.releases else nbformat.v4.new_notebook()
    tasks, mx = [], {}
    for cell in release.cells:
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            tasks.append(nbg["grade_id"])
            mx[nbg["grade_id"]] = float(nbg.get("points", 0))
    item = item or {}
    return {"student": student, "assignment": a, "tasks": tasks, "max": mx, "scores": {}, "task_notes": {},
            "total": 0.0, "max_total": round(sum(mx.values()), 4), "status": "ok",
            "reason": list(item.get("reason", [])), "flags": list(item.get("flags", [])),
            "notes": list(item.get("notes", [])), "feedback_html": None}


def _finish(result: dict) -> dict:
    if result["status"] == "ok" and result["flags"]:
        result["status"] = "flagged"
    return result


def deal(items: list[dict], assignments: list[str], jobs: int) -> list[list[dict]]:
    """Split the submissions into ``jobs`` shares of equal size, each a contiguous run of the
    submissions sorted by assignment.

    A worker pays a fixed cost per assignment it grades (an nbgrader autograde and feedback pass,
    about a second), so a share should span as few assignments as it can: here at most
    len(assignments) / jobs + 1, where dealing the submissions round robin would give every worker
    every assignment.
    """
    order = {a: i for i, a in enumerate(assignments)}
    ranked = sorted(items, key=lambda item: order.get(item["assignment"], len(order)))  # stable: students stay sorted
    size, extra = divmod(len(ranked), jobs)
    shares, start = [], 0
    for k in range(jobs):
        end = start + size + (k < extra)
        shares.append(ranked[start:end])
        start = end
    return shares


def _worker(course, items, scratch, opts, queue):
    try:
        grade_shard(course, items, scratch, opts, report=queue.put, ran=lambda s, a: queue.put(("ran", s, a)))
    finally:
        queue.put(None)


# ----------------------------------------------------------------------------------------- the one writer

def _fmt(x: float) -> str:
    return f"{x:g}"


def progress_line(i: int, n: int, r: dict) -> str:
    score = f"{_fmt(r['total'])}/{_fmt(r['max_total'])}" if r["status"] != "ungradable" else \
        f"-/{_fmt(r['max_total'])}"
    extra = []
    if r["reason"]:
        extra.append("reason: " + "; ".join(r["reason"]))
    if r["flags"]:
        extra.append("flag: " + "; ".join(r["flags"])[:200])
    return f"[{i}/{n}] {r['student']} {r['assignment']}: {score}" + (f" ({' | '.join(extra)})" if extra else "")


def write_outputs(root: str, results: dict[str, dict], assignments_order: list[str], releases) -> None:
    """grades.csv, grading_report.md and feedback/ from every stored result (sorted: deterministic)."""
    keys = sorted(results)
    columns: list[str] = []
    for a in assignments_order:
        for r in (results[k] for k in keys if results[k]["assignment"] == a):
            for gid in r["tasks"]:
                if gid not in columns:
                    columns.append(gid)
            break
    tmp = os.path.join(root, CSV_FILE + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "assignment", *columns, "total", "max", "status", "reason"])
        for k in keys:
            r = results[k]
            row = [r["student"], r["assignment"]]
            for gid in columns:
                if gid not in r["tasks"]:
                    row.append("")
                elif r["status"] == "ungradable":
                    row.append("")
                else:
                    row.append(_fmt(r["scores"].get(gid, 0.0)))
            row.append(_fmt(r["total"]) if r["status"] != "ungradable" else "")
            row.append(_fmt(r["max_total"]))
            row.append(r["status"])
            row.append("; ".join([*r["reason"], *r["flags"]]))
            w.writerow(row)
    os.replace(tmp, os.path.join(root, CSV_FILE))
    lines = ["# Grading report", "", f"{len(keys)} submissions.", "",
             "| student | assignment | score | status | reasons and flags |", "|---|---|---|---|---|"]
    for k in keys:
        r = results[k]
        why = "; ".join([*r["reason"], *r["flags"]]).replace("|", "\\|")
        score = f"{_fmt(r['total'])}/{_fmt(r['max_total'])}" if r["status"] != "ungradable" else "-"
        lines.append(f"| {r['student']} | {r['assignment']} | {score} | {r['status']} | {why} |")
    lines += ["", "## Details", ""]
    for k in keys:
        r = results[k]
        details = [f"{gid}: {note}" for gid, note in r["task_notes"].items()] + [f"note: {n}" for n in r["notes"]]
        if details or r["flags"] or r["reason"]:
            lines.append(f"### {r['student']} / {r['assignment']}")
            lines += [f"- {d}" for d in [*r["reason"], *r["flags"], *details]]
            lines.append("")
    with open(os.path.join(root, REPORT_FILE), "w") as f:
        f.write("\n".join(lines) + "\n")


def merge_gradebook(db_url: str, results: list[dict]) -> None:
    """Write the final grades into the gradebook at ``db_url`` (the only writer; resubmissions replace)."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for r in results:
            gb.update_or_create_student(r["student"])
            with contextlib.suppress(MissingEntry):
                gb.remove_submission(r["assignment"], r["student"])
            sub = gb.add_submission(r["assignment"], r["student"])
            for nb in sub.notebooks:
                for grade in nb.grades:
                    grade.auto_score = r["scores"].get(grade.name, 0.0) if r["status"] != "ungradable" else 0.0
                    grade.needs_manual_grade = False
            gb.db.commit()


def _db_fingerprint(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        dump = "\n".join(con.iterdump())
        con.close()
    except sqlite3.Error:
        with open(path, "rb") as f:
            dump = f.read().hex()
    import hashlib

    return hashlib.sha256(dump.encode()).hexdigest()


def load_results(root: str) -> dict[str, dict]:
    try:
        with open(os.path.join(root, RESULTS_FILE)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def grade(root: str, jobs: int = 1, only: list[str] | None = None, opts: Options | None = None,
          shard: tuple[int, int] | None = None, results_out: str | None = None, verbose: bool = True,
          db_url: str | None = None) -> dict:
    """Grade the course at ``root``; return {"student/assignment": result} of this run.

    ``db_url``: the course gradebook (default: gradebook.db in the course), e.g. a PostgreSQL URL.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in session.*")
        return _grade(root, jobs, only, opts, shard, results_out, verbose, db_url)


def _grade(root, jobs, only, opts, shard, results_out, verbose, db_url=None) -> dict:
    opts = opts or Options()
    nbgrader_setup()
    root = os.path.realpath(root)
    assignments = find_assignments(root, only)
    submissions = find_submissions(root, assignments)
    if shard is not None:
        k, n = shard
        submissions = [s for i, s in enumerate(submissions) if i % n == k]
    if not submissions and shard is None and not os.path.exists(os.path.join(root, RESULTS_FILE)):
        if verbose:
            print(f"no submissions under {os.path.join(root, 'submitted')}/<student>/<assignment>/: nothing to grade "
                  "(try make grade-demo)", flush=True)
        return {}
    scratch = tempfile.mkdtemp(prefix="attn-grade-")
    os.chmod(scratch, 0o755)
    master_url = course_db_url(root, db_url)
    master_db = sqlite_path(master_url)
    # This run's grades are written as they arrive. A SQLite gradebook is copied first (beside the
    # template, where no kernel can see it) and the copy replaces the file at the end, in one step;
    # a database server (db_url) is written directly, one transaction per submission.
    working_url = "sqlite:///" + os.path.join(scratch, "prep", "gradebook.working.db") if master_db else master_url
    merging = shard is None
    before = None
    start = time.monotonic()
    try:
        with _quiet_logs():
            course = prepare(root, assignments, scratch, master_url if merging else None)
        merging = merging and (master_db is None or os.path.exists(master_db))
        if merging and master_db:
            shutil.copy(master_db, sqlite_path(working_url))
            before = _db_fingerprint(master_db)
        n = len(submissions)
        done: list[dict] = []
        items = []

        def report(result):
            done.append(result)
            if merging:  # the one writer, while the workers grade on
                with _quiet_logs():
                    merge_gradebook(working_url, [result])
            if verbose:
                print(progress_line(len(done), n, result), flush=True)

        ran_count = 0

        def ran(student, a):
            nonlocal ran_count
            ran_count += 1
            if verbose:
                print(f"[ran {ran_count}/{len(items)}] {student} {a}", flush=True)
        for student, a in submissions:
            if a in course.broken:
                r = _empty_result(course, a, student, {"reason": [course.broken[a]]})
                r["status"] = "ungradable"
                report(_finish(r))
                continue
            s = sanitize(os.path.join(root, "submitted", student, a), {course.releases[a][0]: course.releases[a][1]})
            item = {"student": student, "assignment": a, "answers": s.answers, "flags": s.flags, "notes": s.notes,
                    "reason": [s.reason] if s.reason else []}
            if s.notebook is None:
                r = _empty_result(course, a, student, item)
                r["status"] = "ungradable"
                report(_finish(r))
            else:
                item["notebook"] = s.notebook
                items.append(item)
        jobs = max(1, min(jobs, len(items) or 1))
        if jobs == 1:
            grade_shard(course, items, scratch, opts, report=report, ran=ran)
        else:
            ctx = mp.get_context("fork")
            queue = ctx.Queue()
            procs = [ctx.Process(target=_worker, args=(course, share, scratch, opts, queue))
                     for share in deal(items, assignments, jobs)]
            for p in procs:
                p.start()
            finished = 0
            while finished < jobs:
                try:
                    got = queue.get(timeout=5)
                except Exception:  # noqa: BLE001 - queue.Empty: check that the workers live
                    if not any(p.is_alive() for p in procs):
                        break
                    continue
                if got is None:
                    finished += 1
                elif isinstance(got, tuple):  # ("ran", student, assignment)
                    ran(*got[1:])
                else:
                    report(got)
            for p in procs:
                p.join()
        graded = {f"{r['student']}/{r['assignment']}" for r in done}
        for item in items:  # a worker that crashed: the submission still gets its row
            if f"{item['student']}/{item['assignment']}" not in graded:
                r = _empty_result(course, item["assignment"], item["student"], item)
                r["status"] = "ungradable"
                r["reason"].append("the grading worker failed")
                report(r)
        this_run = {f"{r['student']}/{r['assignment']}": r for r in done}
        if results_out:
            with open(results_out, "w") as f:
                json.dump({"assignments": assignments, "results": this_run}, f, sort_keys=True)
        if merging:
            if master_db:
                if _db_fingerprint(master_db) != before:
                    print("warning: gradebook.db was modified during grading; replaced by the grader's copy",
                          flush=True)
                    for r in this_run.values():
                        r["notes"].append("gradebook.db was modified during grading and restored")
                shutil.copy(sqlite_path(working_url), master_db + ".tmp")
                os.replace(master_db + ".tmp", master_db)
            merge(root, this_run, assignments, graded_assignments=assignments, gradebook_written=True)
        if verbose:
            _summary(this_run, time.monotonic() - start, jobs)
        return this_run
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def merge(root: str, this_run: dict[str, dict], assignments: list[str], graded_assignments: list[str],
          gradebook_written: bool = False, db_url: str | None = None) -> None:
    """The one writer: update grading_results.json, gradebook.db (unless ``gradebook_written``: the
    grades are in it already), grades.csv, the report and feedback."""
    results = load_results(root)
    # Submissions of the graded assignments that are gone from submitted/ lose their row.
    for key in list(results):
        student, a = key.split("/", 1)
        if a in graded_assignments and not os.path.isdir(os.path.join(root, "submitted", student, a)):
            results.pop(key)
    for key, r in this_run.items():
        html = r.pop("feedback_html", None)
        fb_dir = os.path.join(root, "feedback", r["student"], r["assignment"])
        shutil.rmtree(fb_dir, ignore_errors=True)
        if html:
            os.makedirs(fb_dir, exist_ok=True)
            with open(os.path.join(fb_dir, r["assignment"] + ".html"), "w", encoding="utf-8") as f:
                f.write(html)
        results[key] = r
    if not gradebook_written:
        with _quiet_logs():
            merge_gradebook(course_db_url(root, db_url), list(this_run.values()))
    with open(os.path.join(root, RESULTS_FILE), "w") as f:
        json.dump(results, f, sort_keys=True, indent=1)
    order = sorted({r["assignment"] for r in results.values()})
    write_outputs(root, results, order, None)


def _summary(this_run: dict[str, dict], seconds: float, jobs: int) -> None:
    rs = list(this_run.values())
    ok = sum(r["status"] == "ok" for r in rs)
    flagged = sum(r["status"] == "flagged" for r in rs)
    bad = sum(r["status"] == "ungradable" for r in rs)
    full = sum(r["status"] != "ungradable" and r["total"] >= r["max_total"] - 1e-9 for r in rs)
    print(f"graded {len(rs)} submissions in {seconds:.1f} s with {jobs} job(s): {ok} ok, {flagged} flagged, "
          f"{bad} ungradable, {full} full marks. See {CSV_FILE} and {REPORT_FILE}.", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--course", default=".", help="course root (holds solutions/ and submitted/)")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once")
    p.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    p.add_argument("--cell-timeout", type=int, default=Options.cell_timeout)
    p.add_argument("--budget", type=int, default=Options.budget)
    p.add_argument("--memory-gb", type=float, default=Options.memory / (1 << 30))
    p.add_argument("--drop-privileges", action="store_true",
                   help="when root: run kernels and re-checks as a fresh unprivileged uid (needs the Python "
                        "installation readable by other users; not tested on this course's CI)")
    p.add_argument("--shard", help="K/N: grade only slice K (0-based) of N; with --results, do not merge")
    p.add_argument("--results", help="write this run's results (JSON) here")
    p.add_argument("--merge", nargs="+", help="merge results files written by --shard runs")
    p.add_argument("--db-url", help="the course gradebook as an nbgrader db_url, e.g. postgresql://user@host/course "
                                    "(default: sqlite:///<course>/gradebook.db)")
    args = p.parse_args(argv)
    root = os.path.realpath(args.course)
    nbgrader_setup()
    if args.merge:
        this_run, assignments = {}, set()
        for path in args.merge:
            with open(path) as f:
                data = json.load(f)
            this_run.update(data["results"])
            assignments.update(data["assignments"])
        master_assignments = find_assignments(root, sorted(assignments))
        with _quiet_logs():
            scratch = tempfile.mkdtemp(prefix="attn-merge-")
            try:
                prepare(root, master_assignments, scratch, course_db_url(root, args.db_url))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        merge(root, this_run, master_assignments, graded_assignments=[], db_url=args.db_url)
        print(f"merged {len(this_run)} results into {CSV_FILE}")
        return 0
    opts = Options(cell_timeout=args.cell_timeout, budget=args.budget, memory=int(args.memory_gb * (1 << 30)),
                   drop_privileges=args.drop_privileges)
    shard = tuple(int(x) for x in args.shard.split("/")) if args.shard else None
    if shard is not None and not args.results:
        p.error("--shard needs --results FILE (merge the files with --merge)")
    grade(root, jobs=args.jobs, only=args.assignment, opts=opts, shard=shard, results_out=args.results,
          db_url=args.db_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
