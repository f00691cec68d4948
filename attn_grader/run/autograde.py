"""``make grade``: autograde every submission in a sandbox, re-check it, and record the grades.

    python -m attn_grader.run.autograde [--jobs N | --scheduler tcp://host:8786] [--assignment PS]
                                    [--student NAME] [--regrade]
                                    [--course DIR] [--db-url URL] [--no-sandbox]
                                    [--similarity SCORE] [--similarity-min N]

The pipeline, one module a step, for every ``submitted/<student>/<assignment>/`` (each step's stage is the
package it is in: ``run``, ``isolation``, ``checking``, ``reports``; see :mod:`attn_grader.run`):

1. **discover** (:mod:`.discover`): each submission is read once into memory (regular files only,
   no links, size-capped); students get safe internal ids for nbgrader;
2. **sanitise** (:mod:`attn_grader.isolation.sanitize`): the notebook is rebuilt from the release with the
   student's answer cells; tampering is flagged;
3. **execute** (:mod:`attn_grader.isolation.execute`): the real nbgrader autograde, on a Dask worker
   (:mod:`.cluster`), in a scratch course private to that batch (:mod:`.batch`); every kernel runs in the
   sandbox (:mod:`attn_grader.isolation.sandbox`) with a working folder of its own;
4. **re-check** (:mod:`attn_grader.checking.recheck`): every answer again, in the sandbox, on inputs drawn
   from the course's secret (:mod:`attn_grader.files.secret`), compared with the reference outside;
   :mod:`attn_grader.checking.scores` makes the final scores;
5. **record** (:mod:`attn_grader.reports.record`, the one writer: the process that runs ``make grade``):
   ``gradebook.db`` (in place, one transaction per submission, as nbgrader's autograde writes it: the graders'
   scores and comments are read, never written), ``grades.csv``, ``grading_report.md``, ``autograded/``,
   ``feedback/``, ``grading_results.json``, each file written atomically.  Only submissions new or changed
   since they were graded are graded (``--regrade``: all; ``--student``: one student's).  Each result is also
   appended, as it arrives, to ``.grader/journal.jsonl``: a run interrupted (Ctrl-C, a crash) and started
   again grades only what the journal does not hold.

The grader's own state (the secret, the lock, the scratch course with its gradebooks and the hidden
tests nbgrader restores) lives in ``<course>/.grader/`` (mode 0700), which no sandbox sees.  As root
the grader runs in a mount namespace of its own and its scratch folder is a tmpfs there: when the
grader ends, even by ``kill -9``, the scratch and every sandbox go with it.  One run per course at a
time: a second run waits for the first (``.grader/lock``).

This module is the command line and :func:`grade`; the run itself is :mod:`.grading`, and nbgrader's
side of the course (the options, configuration, template gradebook) is :mod:`.course`.
"""

from __future__ import annotations

import sys

from ..isolation import sandbox  # the standard library only

if __name__ == "__main__":  # as root: re-executed in a mount namespace of its own, before the slow imports
    sandbox.private_mounts("attn_grader.run.autograde", sys.argv[1:])

from . import patches  # noqa: F401 - first of the rest: it changes how nbformat imports

# isort: split
import argparse
import json
import os
import signal
import subprocess
import tempfile
from dataclasses import asdict

from ..reports import lms
from ..reports.result import Result
from . import cluster
from .course import REPO, Options, settings
from .grading import JOURNAL, run
from .late import ExtensionsError

__all__ = ["Options", "grade", "main", "run"]


def grade(root: str, jobs: int = 1, only: list[str] | None = None, opts: Options | None = None,
          results_out: str | None = None, verbose: bool = True, db_url: str | None = None,
          scheduler: str | None = None, export: list[str] | tuple = (), students: list[str] | None = None,
          regrade: bool = False) -> dict[str, Result]:
    """Grade the course at ``root`` the way ``make grade`` does (a grader process of its own); return
    {"student/assignment": Result} of this run."""
    opts = opts or Options()
    with tempfile.TemporaryDirectory() as tmp:
        out = results_out or os.path.join(tmp, "results.json")
        argv = [sys.executable, "-m", "attn_grader.run.autograde", "--course", root, "--jobs", str(jobs),
                "--results", out, "--options", json.dumps(asdict(opts))]
        argv += [x for a in (only or []) for x in ("--assignment", a)]
        argv += [x for st in (students or []) for x in ("--student", st)]
        argv += ["--regrade"] if regrade else []
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
    p.add_argument("--student", action="append",
                   help="grade this student's submissions again (the folder name under submitted/; repeatable); "
                        "nothing else of the course changes")
    p.add_argument("--regrade", action="store_true",
                   help="grade every submission again (default: only those new or changed since graded)")
    p.add_argument("--cell-timeout", type=int, default=Options.cell_timeout)
    p.add_argument("--budget", type=int, default=Options.budget)
    p.add_argument("--memory-gb", type=float, default=Options.memory / (1 << 30))
    p.add_argument("--similarity", type=float, default=Options.similarity, metavar="SCORE",
                   help="the class report lists pairs of submissions whose answer code is alike from this score "
                        "(0..1, default %(default)s; 2 lists none); students are never told")
    p.add_argument("--similarity-min", type=int, default=Options.similarity_min, metavar="N",
                   help="... and only when both share at least N characters of normalised code "
                        "(default %(default)s: one-liners that everyone writes are not enough)")
    p.add_argument("--max-notebook-mb", type=float, default=Options.max_notebook_bytes / (1 << 20),
                   help="a larger submitted notebook is ungradable (larger ones are read as a stream, outputs "
                        "dropped: memory does not grow with them)")
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
        opts = Options(cell_timeout=args.cell_timeout, budget=args.budget, memory=int(args.memory_gb * (1 << 30)),
                       similarity=args.similarity, similarity_min=args.similarity_min,
                       max_notebook_bytes=int(args.max_notebook_mb * (1 << 20)))
    if args.no_sandbox:
        opts.sandbox = False
    # The book the feedback links to: nbgrader_config.py's c.AttnGrader.book_url; ATTN_BOOK_URL overrides it.
    opts.book_url = os.environ.get("ATTN_BOOK_URL") or opts.book_url or str(settings(root).get("book_url") or "")
    if opts.sandbox:
        why = sandbox.unusable()
        if why:
            print(f"make grade: refusing to grade without a sandbox: {why}.\n"
                  "To grade anyway, unprotected (every row will say so): make grade ARGS=--no-sandbox "
                  "or python -m attn_grader.run.autograde --no-sandbox", file=sys.stderr)
            return 2
    signal.signal(signal.SIGINT, cluster.on_sigint)
    try:
        run(root, jobs=args.jobs, only=args.assignment, opts=opts, results_out=args.results,
            verbose=not args.quiet, db_url=args.db_url, scheduler=args.scheduler, export=export,
            students=args.student, regrade=args.regrade)
    except lms.ExportError as exc:
        print(f"make grade: the grades are written, the LMS export is not: {exc}", file=sys.stderr)
        return 2
    except ExtensionsError as exc:
        print(f"make grade: {exc}", file=sys.stderr)
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
