"""make grade with the course gradebook in PostgreSQL (nbgrader's db_url), against a real server.

A throw-away PostgreSQL cluster (initdb, a Unix socket in a temporary folder, trust authentication)
is started for the module. A small class is graded into it, then graded again (a resubmission
replaces the earlier grades), then graded on a Dask cluster of separate processes (a scheduler and
two workers): the server must hold exactly what grades.csv says, and no SQLite gradebook.db may
appear in the course.

Needs PostgreSQL's server binaries (`make test` installs Debian's postgresql when absent and it may).
"""

import csv
import glob
import os
import shutil
import subprocess
import tempfile
import time

import nbformat
import pytest
from dask_helpers import dask_cluster
from site_helpers import need

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.run.autograde import Options, grade

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("postgres")]


def _pg_bin(name: str) -> str | None:
    return shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None)


@pytest.fixture(scope="module")
def postgres_url():
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    need(bool(initdb and pg_ctl), "no PostgreSQL server binaries (initdb, pg_ctl): sudo apt-get install postgresql")
    base = tempfile.mkdtemp(prefix="attn-pg-")
    os.chmod(base, 0o777)
    data = os.path.join(base, "data")
    prefix = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(base, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*prefix, initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"], check=True,
                   capture_output=True)
    subprocess.run([*prefix, pg_ctl, "-D", data, "-w", "-l", os.path.join(base, "log"), "-o",
                    f"-k {base} -c listen_addresses=''", "start"], check=True, capture_output=True)
    try:
        import psycopg

        for _ in range(50):
            try:
                psycopg.connect(dbname="postgres", user="postgres", host=base).close()
                break
            except psycopg.OperationalError:
                time.sleep(0.1)
        with psycopg.connect(dbname="postgres", user="postgres", host=base, autocommit=True) as con:
            con.execute("CREATE DATABASE course")
        yield f"postgresql://postgres@/course?host={base}"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _submit(root, student, answers):
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    d = os.path.join(root, "submitted", student, A)
    os.makedirs(d, exist_ok=True)
    nbformat.write(with_answers(release, answers), os.path.join(d, A + ".ipynb"))


def _server_grades(url):
    from nbgrader.api import Gradebook

    with Gradebook(url) as gb:
        return {(s.student.id, s.assignment.name): round(s.score, 4) for s in gb.assignment_submissions(A)}


def _csv_grades(root):
    with open(os.path.join(root, "grades.csv")) as f:
        return {(r["student"], r["assignment"]): float(r["total"]) for r in csv.DictReader(f)}


def test_grades_go_to_a_postgresql_gradebook(tmp_path, postgres_url):
    root = str(tmp_path / "course")
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(root, "solutions", A))
    solution = answers_of(nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4))
    task = tasks_of(A)[0]
    wrong = {**solution, f"{task.func_name}_answer": task.mistakes[0].source}
    _submit(root, "ada", solution)
    _submit(root, "bob", wrong)

    grade(root, jobs=1, opts=OPTS, verbose=False, db_url=postgres_url)
    first = _csv_grades(root)
    assert first[("ada", A)] > first[("bob", A)]
    assert _server_grades(postgres_url) == first
    assert not os.path.exists(os.path.join(root, "gradebook.db")), "a SQLite gradebook was written too"

    # bob resubmits the solution: his grade is replaced, not added
    _submit(root, "bob", solution)
    grade(root, jobs=2, opts=OPTS, verbose=False, db_url=postgres_url)
    second = _csv_grades(root)
    assert second[("bob", A)] == second[("ada", A)] == first[("ada", A)]
    assert _server_grades(postgres_url) == second

    # several machines: a Dask cluster's workers grade, the one writer fills the same server
    _submit(root, "cy", wrong)
    with dask_cluster(tmp_path / "cluster", workers=2) as (address, _):
        grade(root, opts=OPTS, verbose=False, db_url=postgres_url, scheduler=address)
    third = _csv_grades(root)
    assert third[("cy", A)] == first[("bob", A)]
    assert _server_grades(postgres_url) == third
    assert not os.path.exists(os.path.join(root, "gradebook.db"))
