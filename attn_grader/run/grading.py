"""One grading run of a course, in the process that runs ``make grade`` (the one writer): the course lock,
the scratch folder, the journal an interrupted run resumes from, the class handed to the Dask cluster
in batches (:mod:`.batch` on the workers), and the course's files written from the results
(:mod:`attn_grader.reports.record`).
"""

from __future__ import annotations

from . import patches  # noqa: F401 - first: it changes how nbformat imports

# isort: split
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict

from ..checking import recheck
from ..files.secret import course_secret, state_dir
from ..isolation import sandbox
from ..isolation.sanitize import Sanitized, sanitize
from ..reports import classreport, lms, record, similarity
from ..reports.result import Result, empty_result
from . import cluster
from .course import (
    PACKAGES,
    Options,
    course_db_url,
    kernel_mounts,
    nbgrader_config,
    prepare,
    quiet_logs,
)
from .course import settings as course_settings
from .discover import Submitted, find_assignments, find_submissions
from .late import penalty_function, read_extensions
from .patches import nbgrader_setup


def _say(line: str) -> None:
    """One progress line in ONE write: Dask's callback thread reports "ran" while this thread reports scores,
    and print's two writes (the text, then the newline) could interleave two lines into one."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


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
        sandbox.stage([*kernel_mounts(root)[0], *kernel_mounts(root, False)[0], recheck.HARNESS])  # once for the run
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
    """What a grade depends on: the submitted bytes and timestamp, what else is in the folder, the assignment's
    source, the grader and the reference."""
    h = hashlib.sha256(code.encode())
    h.update(json.dumps([s.timestamp, s.timestamp_note, s.problem, s.entries]).encode())
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
                json.dumps(entry, ensure_ascii=False).encode("utf-8")  # text no file can hold: dropped, graded again
                r = Result.from_dict(entry["result"])
                kept[r.key] = (entry["digest"], r)
    return kept


def run(root: str, jobs: int = 1, only: list[str] | None = None, opts: Options | None = None,
        results_out: str | None = None, verbose: bool = True, db_url: str | None = None,
        scheduler: str | None = None, export: list[str] | tuple = (), students: list[str] | None = None,
        regrade: bool = False) -> dict[str, Result]:
    """Grade the course at ``root`` from this process (the one writer) on a Dask cluster: a local one
    of ``jobs`` worker processes, or the one at ``scheduler``; return {"student/assignment": Result} of
    what this run graded.  Only submissions new or changed since they were graded are graded (``regrade``:
    all of them); ``students``: only theirs, every one, and nothing else of the course changes."""
    opts = opts or Options()
    root = os.path.realpath(root)
    with course_lock(root, verbose), scratch_folder(root) as scratch:
        try:
            return _run(root, jobs, only, opts, results_out, verbose, db_url, scratch, scheduler, list(export),
                        students, regrade)
        finally:
            sandbox.remove_idle_cgroups()


def _run(root, jobs, only, opts, results_out, verbose, db_url, scratch, scheduler, export, students,
         regrade) -> dict[str, Result]:
    start = time.monotonic()
    assignments = find_assignments(root, only)
    notebooks = {a: a + ".ipynb" for a in assignments}
    subs = find_submissions(root, assignments, notebooks, cap=opts.max_notebook_bytes)
    if students:
        unknown = sorted(set(students) - {s.student for s in subs})
        if unknown and verbose:
            print(f"no submission of {', '.join(map(record.shown, unknown))} under submitted/: its grades, if any, "
                  "leave the gradebook", flush=True)
    if not subs and not os.path.exists(os.path.join(root, record.RESULTS_FILE)):
        if verbose:
            print(f"no submissions under {os.path.join(root, 'submitted')}/<student>/<assignment>/: nothing to grade "
                  "(try make grade-demo)", flush=True)
        return {}
    with cluster.connect(max(1, min(jobs, len(subs))), scheduler, verbose) as engine:  # starts meanwhile
        return _grade_class(root, assignments, subs, opts, results_out, verbose, db_url, scratch, engine, start,
                            export, students, regrade)


def _grade_class(root, assignments, subs, opts, results_out, verbose, db_url, scratch, engine,
                 start, export, students=None, regrade=False) -> dict[str, Result]:
    nbgrader_setup()  # after the cluster has started starting: its workers import meanwhile
    master_url = course_db_url(root, db_url)
    with quiet_logs():
        course = prepare(root, assignments, scratch, master_url)
    course.secret = course_secret(root)
    # The course's gradebook is written in place, one transaction per submission as it arrives: a formgrader
    # running beside the grader (which keeps its database connection open) sees every grade, and the scores
    # and comments its graders set are never replaced by an older copy.
    working_url = master_url
    stored_before = record.load_results(root)
    everyone = subs
    if students:
        subs = [s for s in subs if s.student in students]
    n = len(subs)
    done: dict[str, Result] = {}
    code = _code_digest(PACKAGES) + json.dumps({k: v for k, v in asdict(opts).items()  # what grades depend on
                                                if not k.startswith("similarity")}, sort_keys=True)
    digests = {(s.student, s.assignment): _digest(s, root, code) for s in subs}
    by_key = {(s.student, s.assignment): s for s in subs}
    kept = _journal_kept(root)
    if not regrade and not students:  # what was graded and has not changed since is not graded again
        unchanged = [s for s in subs if (old := stored_before.get(f"{s.student}/{s.assignment}")) is not None
                     and old.status != "ungradable" and old.digest == digests[(s.student, s.assignment)]]
        if unchanged and verbose:
            print(f"{len(unchanged)} submission(s) unchanged since graded: kept (make grade ARGS=--regrade grades "
                  "them again)", flush=True)
        subs = [s for s in subs if s not in unchanged]
        n = len(subs)
    journal = open(os.path.join(state_dir(root), JOURNAL), "a", encoding="utf-8")  # noqa: SIM115

    def report(r: Result, fresh: bool = True) -> None:
        s = by_key.get((r.student, r.assignment))
        if fresh and s is not None:  # nbgrader's files of the submission, and what the grade depends on
            r.timestamp, r.secret = s.timestamp, s.secret
            r.digest = digests.get((s.student, s.assignment), "")
            if s.timestamp_note:
                r.notes = [*r.notes, s.timestamp_note]
        done[r.key] = r
        with quiet_logs():
            record.merge_gradebook(working_url, [r])
        if fresh:
            record.put_feedback(root, r)
            record.put_autograded(root, r)
            if r.status != "ungradable":  # a grader's failure is graded again by the next run
                journal.write(json.dumps({"digest": digests.get((r.student, r.assignment), ""),
                                          "result": r.to_dict()}) + "\n")
                journal.flush()
        if verbose:
            _say(record.progress_line(len(done), n, r))

    ran_count = 0
    items = []

    def ran(student, a):
        nonlocal ran_count
        ran_count += 1
        if verbose:
            _say(f"[ran {ran_count}/{len(items)}] {record.shown(student)} {a}")

    reused = 0
    answers: dict[str, dict[str, dict[str, str]]] = {a: {} for a in assignments if a in course.releases}
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
        try:
            clean = sanitize(s, {course.releases[s.assignment][0]: release})
        except Exception as exc:  # noqa: BLE001 - whatever a notebook holds costs its own row only, never the run
            clean = Sanitized(None, reason=f"the grader could not read this notebook ({type(exc).__name__})")
        if clean.notebook is not None:
            answers[s.assignment][s.student] = clean.answers
        if clean.notebook is None:
            r = empty_result(s.student, s.assignment, release, reason=[clean.reason], flags=clean.flags,
                             notes=clean.notes, sandbox=opts.sandbox)
            r.status = "ungradable"
            report(r.finish())
            continue
        items.append((s, {"notebook": clean.notebook, "answers": clean.answers, "added": clean.added,
                          "flags": clean.flags, "notes": clean.notes}))
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
        present = {(s.student, s.assignment) for s in everyone}

        def still_submitted(student: str, a: str) -> bool:  # STUDENT=: the others' grades stay as they are
            return (student, a) in present or bool(students) and student not in students

        def sync(results: dict[str, Result]) -> None:
            """The graders' scores and comments, lateness and the late policy, gone submissions removed."""
            cfg = nbgrader_config(root, master_url)
            with quiet_logs():
                record.sync_gradebook(working_url, results, assignments, still_submitted,
                                      penalty_function(cfg), read_extensions(root))

        stored = record.merge(root, done, assignments, still_submitted, sync=sync)
    finally:
        journal.close()
    if results_out:
        record.write_atomic(results_out, json.dumps({"assignments": assignments,
                                                     "results": {k: r.to_dict() for k, r in done.items()}},
                                                    sort_keys=True))
    _similar_pairs(root, everyone, course, answers, opts, verbose)
    seconds = time.monotonic() - start
    classreport.write(root, stored, {"finished": time.time(), "seconds": round(seconds, 1), "workers": workers,
                                     "graded": len(done), "sandbox": opts.sandbox})
    if export:
        lms.export(root, export, stored, {k: v for k, v in course_settings(root).items() if k in lms.SETTINGS})
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


def _similar_pairs(root, subs, course, answers, opts: Options, verbose: bool) -> None:
    """Who copied from whom (:mod:`.similarity`): the alike pairs of every assignment graded, for the class
    report only.  A submission kept from an interrupted run is read again for its answers."""
    try:
        for s in subs:
            if s.assignment in answers and s.student not in answers[s.assignment]:
                clean = sanitize(s, {course.releases[s.assignment][0]: course.releases[s.assignment][1]})
                if clean.notebook is not None:
                    answers[s.assignment][s.student] = clean.answers
        found = similarity.find(answers, {a: course.releases[a][1] for a in answers}, opts.similarity,
                                opts.similarity_min)
        similarity.save(root, found)
    except Exception as exc:  # noqa: BLE001 - the grades are written; the comparison is an extra
        print(f"make grade: the similarity report was not made ({type(exc).__name__}: {exc})", flush=True)
        return
    if verbose:
        n = sum(len(v["pairs"]) for v in found.values())
        print(f"similarity: {n} pair(s) of submissions alike (score >= {opts.similarity:g}) in "
              f"{classreport.REPORT_FILE}", flush=True)


def _summary(this_run: dict[str, Result], seconds: float, workers: int, opts: Options, export=()) -> None:
    rs = list(this_run.values())
    count = {s: sum(r.status == s for r in rs) for s in ("ok", "flagged", "ungradable")}
    full = sum(r.status != "ungradable" and r.total >= r.max_total - 1e-9 for r in rs)
    files = [record.CSV_FILE, record.REPORT_FILE, classreport.REPORT_FILE, *(lms.FILES[f] for f in export)]
    print(f"graded {len(rs)} submissions in {seconds:.1f} s on {workers} worker(s): {count['ok']} ok, "
          f"{count['flagged']} flagged, {count['ungradable']} ungradable, {full} full marks"
          f"{'' if opts.sandbox else ', WITHOUT the sandbox (--no-sandbox)'}. "
          f"See {', '.join(files[:-1])} and {files[-1]}.", flush=True)
