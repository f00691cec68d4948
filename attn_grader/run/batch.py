"""One batch of sanitised submissions, graded on a worker (:func:`.cluster.grade_batch` calls it): the real
nbgrader autograde in a scratch course of the batch's own, every kernel in the sandbox, the re-checks
beside it, then the final scores, the notes cell and nbgrader's feedback of each submission.
"""

from __future__ import annotations

from . import patches  # noqa: F401 - first: it changes how nbformat imports

# isort: split
import contextlib
import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

import nbformat

from ..checking import recheck
from ..checking.scores import final_scores
from ..isolation import sandbox
from ..isolation.sanitize import clear_hidden_tests, strip_active_outputs
from ..reports import record
from ..reports.next_steps import next_steps_cell
from ..reports.result import Result, empty_result
from .course import Course, Options, converter, kernel_mounts, quiet_logs, scores_from_gradebook, set_final_scores
from .discover import Submitted


def _kernelspec(work: str, opts: Options, root: str) -> None:
    if opts.sandbox:
        spec = {"ro": list(kernel_mounts(root)[0]), "memory": opts.memory, "cpu": opts.budget + 60,
                "fsize": 256 << 20, "nproc": 256}
    else:
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

    from ..checking.core import tasks_of
    from ..isolation.execute import ContainedExecute

    if opts.book_url:  # the feedback's links (nbgrader_config.py's c.AttnGrader.book_url)
        from ..reports import next_steps

        next_steps.BOOK_URL = opts.book_url
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
    _kernelspec(work, opts, course.root)
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
        # The re-checks (each a sandboxed process of its own) run beside nbgrader's autograde, one at a
        # time in a thread: they need only the answers, and a notebook's kernel leaves the CPU idle
        # much of the time it runs (waiting for replies).
        rechecks, cases_of = {}, {}  # the re-check's inputs depend on each submission's answers
        with ThreadPoolExecutor(1, thread_name_prefix="attn-recheck") as pool:
            if tasks:
                for s, item in group:
                    cases_of[s.sid] = {t.func_name: recheck.cases_for(t, course.secret, item["answers"])
                                       for t in tasks}
                    rechecks[s.sid] = pool.submit(
                        recheck.run, tasks, cases_of[s.sid], course.setups[a],
                        recheck.with_added(item["answers"], item.get("added") or {}), work,
                        wall_seconds=opts.recheck_seconds, memory_bytes=opts.memory, cpu_seconds=opts.recheck_seconds,
                        call_seconds=opts.call_seconds, box_bytes=opts.box_bytes, use_sandbox=opts.sandbox,
                        imports=kernel_mounts(course.root, with_packages=False) if opts.sandbox else ((), ()))
            ContainedExecute.reports.clear()
            ContainedExecute.to_come = len(group)
            try:
                with quiet_logs(), contextlib.suppress(Exception):  # failures are per student; reported below
                    converter(Autograde, cdir, "sqlite:///" + db, a, opts, boxes).start()
            finally:
                ContainedExecute.discard_ahead()
        for s, item in group:
            r = empty_result(s.student, a, release, flags=item["flags"], notes=item["notes"], sandbox=opts.sandbox)
            try:
                _grade_one(s, r, db, a, cdir, nb_name, tasks, no_catalogue, rechecks, cases_of, opts,
                           course.hidden.get(a, []))
            except Exception as exc:  # noqa: BLE001 - whatever one submission made of its files costs its row only
                r.status, r.scores, r.total = "ungradable", {}, 0.0
                r.reason.append(f"the grader failed on this submission ({type(exc).__name__})")
            results.append(r)
        with quiet_logs(), contextlib.suppress(Exception):
            converter(GenerateFeedback, cdir, "sqlite:///" + db, a).start()
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


ADDED_RULE = ("cells you add run with your answers, in order, in both checks: a helper must be defined "
              "in a cell above the test that uses it")


def _say_added_cells(r: Result, final, index: dict) -> None:
    """The one rule for a student's own cells, said in the line of a task that lost points where a cell the
    student added raised, or where a name the answer uses was not defined."""
    failed = recheck.added_failures(index)
    for gid, note in final.task_notes.items():
        if final.scores.get(gid, 0.0) >= r.max.get(gid, 0.0) - 1e-9:
            continue
        if failed:
            r.task_notes[gid] = f"{note}; a cell you added failed: {', '.join(failed)[:160]} ({ADDED_RULE})"
        elif "NameError" in note:
            r.task_notes[gid] = f"{note} ({ADDED_RULE})"


def _grade_one(s: Submitted, r: Result, db: str, a: str, cdir: str, nb_name: str, tasks, no_catalogue, rechecks,
               cases_of, opts: Options, course_hidden: list[str]) -> None:
    """One submission's scores from nbgrader's gradebook, its kernel's report and its re-check; the notes
    cell into its autograded notebook."""
    nb_grades = scores_from_gradebook(db, a, s.sid)  # grade id -> (auto score, needs manual grading)
    nb_scores = {g: v[0] or 0.0 for g, v in nb_grades.items()}
    agdir = os.path.realpath(os.path.join(cdir, "autograded", s.sid, a))
    autograded = os.path.join(agdir, nb_name)
    from ..isolation.execute import ContainedExecute

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
        by_func = recheck.compare(tasks, cases_of[s.sid], index)
        verdicts = {f"{t.func_name}_test": by_func[t.func_name] for t in tasks}
        r.mistakes = {gid: {"name": v.mistake, "message": v.message, **(v.example or {})}
                      for gid, v in verdicts.items() if not v.passed and v.mistake}
        if index.get("blocked"):
            blocked = index["blocked"] if isinstance(index["blocked"], list) else [index["blocked"]]
            r.flags.append("re-check blocked: " + ", ".join(map(str, blocked[:20]))[:300])
        if index.get("malformed"):
            r.flags.append(f"re-check: {index['malformed']}")
    elif no_catalogue:
        r.notes.append(no_catalogue)
    final = final_scores([g for g in r.tasks if g not in r.manual_tasks], r.max, nb_scores, verdicts)
    r.task_notes.update(final.task_notes)
    _say_added_cells(r, final, index if tasks else {})
    r.flags += final.flags
    if r.status != "ungradable":
        # A cell graded by hand keeps nbgrader's automatic score only where nbgrader gave one (an answer left
        # as released scores 0); else it waits for a grader (the formgrader's "needs manual grade").
        r.auto = {**final.scores, **{g: float(v[0]) for g, v in nb_grades.items()
                                     if g in r.manual_tasks and v[0] is not None and not v[1]}}
        r.recount()
        with contextlib.suppress(Exception):
            set_final_scores(db, a, s.sid, final.scores)
            nb = nbformat.read(autograded, as_version=4)
            strip_active_outputs(nb, course_hidden)
            clear_hidden_tests(nb)
            nb.cells.insert(0, record.notes_cell(r.finish()))
            nb.cells.insert(0, next_steps_cell(r))
            nbformat.write(nb, autograded)
            r.graded_notebook = nbformat.writes(nb)  # the course's autograded/<student>/<assignment>/
