"""The instructor's grading path with the real nbgrader, for every assignment under solutions/.

* exercises/ is exactly what nbgrader generate_assignment makes from solutions/;
* the solution scores full marks, the unanswered release zero on every task (without crashing),
  and every catalogued Mistake, put into its answer cell, less than full with its name in the feedback;
* JOBS=2 gives the same grades.csv as JOBS=1.

All submissions of all assignments are graded in ONE run (mistake k of every task in one notebook).
"""

import contextlib
import csv
import io
import os
import shutil

import nbformat
import pytest
from others_answers import OTHERS

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.authoring.release import release
from attn_grader.checking.core import NOT_ATTEMPTED, tasks_of
from attn_grader.run.autograde import Options, grade
from attn_grader.run.discover import find_assignments

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSIGNMENTS = find_assignments(REPO)
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading_class")]


def _cells(nb):
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells]


@pytest.fixture(scope="module")
def fresh_release(tmp_path_factory):
    """Every assignment generated from solutions/ by nbgrader, now (one process)."""
    out = tmp_path_factory.mktemp("release")
    release(REPO, out=str(out))
    return out


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_exercises_are_generated_from_solutions(fresh_release, a):
    mine = os.path.join(REPO, "exercises", a, a + ".ipynb")
    assert os.path.exists(mine), f"exercises/{a} missing: run make release"
    fresh = nbformat.read(str(fresh_release / a / (a + ".ipynb")), as_version=4)
    assert _cells(nbformat.read(mine, as_version=4)) == _cells(fresh), f"exercises/{a} is stale: run make release"


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, fresh_release):
    """solution, blank and mistake_<k> (mistake k of every task) of every assignment, graded at once."""
    root = str(tmp_path_factory.mktemp("class"))
    plan = {}
    for a in ASSIGNMENTS:
        shutil.copytree(os.path.join(REPO, "solutions", a), os.path.join(root, "solutions", a))
        src = nbformat.read(os.path.join(REPO, "solutions", a, a + ".ipynb"), as_version=4)
        rel = nbformat.read(str(fresh_release / a / (a + ".ipynb")), as_version=4)
        sol = answers_of(src)
        try:
            tasks = tasks_of(a)
        except ImportError:  # no catalogue yet: test_every_mistake_is_caught_and_named fails for it
            tasks = []
        subs = {"solution": with_answers(rel, sol), "blank": rel}
        for k in range(max((len(t.mistakes) for t in tasks), default=0)):
            answers = dict(sol)
            planted = {}
            for t in tasks:
                if k < len(t.mistakes):
                    answers[f"{t.func_name}_answer"] = t.mistakes[k].source
                    planted[t.func_name] = t.mistakes[k]
            subs[f"mistake_{k}"] = with_answers(rel, answers)
            plan[(f"mistake_{k}", a)] = planted
        for student, assignment, answers, _ in OTHERS:
            if assignment == a:
                subs[student] = with_answers(rel, {**sol, **answers})
        for student, nb in subs.items():
            d = os.path.join(root, "submitted", student, a)
            os.makedirs(d)
            nbformat.write(nb, os.path.join(d, a + ".ipynb"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # the progress lines (the workers send theirs to this process)
        results = grade(root, jobs=2, opts=OPTS)
    PROGRESS[root] = out.getvalue()
    return root, results, plan


PROGRESS: dict[str, str] = {}  # what grade() printed for each class


def test_progress_lines_while_grading(graded_class):
    """Every submission gets a line when its notebook has run, and later one with its score."""
    root, results, _ = graded_class
    lines = PROGRESS[root].splitlines()
    n = len(results)
    ran = [i for i, line in enumerate(lines) if line.startswith("[ran ")]
    scored = {line.split("]", 1)[1].split(":")[0].strip(): i for i, line in enumerate(lines)
              if line.startswith("[") and not line.startswith("[ran ")}
    # every submission ran (a batch run again after a stalled or lost worker says so again: a name may repeat)
    assert len({lines[i].split("]", 1)[1].strip() for i in ran}) == n, lines[:5]
    assert any(lines[i].startswith(f"[ran {n}/{n}]") for i in ran), [lines[i] for i in ran[-3:]]
    assert set(scored) == {k.replace("/", " ") for k in results}
    for i in ran:  # "[ran 3/40] mistake_0 ps05_matrix_form" comes before that submission's score line
        assert i < scored[lines[i].split("]", 1)[1].strip()], lines[i]
    assert lines[-1].startswith(f"graded {n} submissions")


def _graded_by_hand(a: str) -> set[str]:
    """The grade ids of an assignment's markdown grade cells (its written answer, issue 41): a person grades
    them in the formgrader, no automatic run gives their points."""
    nb = nbformat.read(os.path.join(REPO, "exercises", a, a + ".ipynb"), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_solution_full_marks(graded_class, a):
    r = graded_class[1][f"solution/{a}"]
    by_hand = _graded_by_hand(a)
    assert r.status == "ok" and r.max_total > 0, r
    assert all(r.scores[g] == r.max[g] for g in r.tasks if g not in by_hand), r
    assert r.total == r.max_total - sum(r.max[g] for g in by_hand), r


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_blank_scores_zero_everywhere(graded_class, a):
    root, results, _ = graded_class
    r = results[f"blank/{a}"]
    assert r.status == "ok", r
    assert all(r.scores[gid] == 0 for gid in r.tasks), r
    # the released stub raises NotImplementedError: "not attempted yet" in the re-check (so the class report)
    # and in the feedback, not "error (not catalogued)"
    assert {r.mistakes[gid]["name"] for gid in r.tasks if gid not in _graded_by_hand(a)} == {NOT_ATTEMPTED}, r.mistakes
    with open(os.path.join(root, "feedback", "blank", a, a + ".html"), encoding="utf-8") as f:
        assert f"{NOT_ATTEMPTED} (it raises NotImplementedError)" in f.read()


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_every_mistake_is_caught_and_named(graded_class, a):
    root, results, plan = graded_class
    assert tasks_of(a), f"attn_grader.{a} has no tasks"
    assert all(len(t.mistakes) >= 3 for t in tasks_of(a)), "every task needs at least three catalogued mistakes"
    problems = []
    for (student, assignment), planted in plan.items():
        if assignment != a:
            continue
        r = results[f"{student}/{a}"]
        html = open(os.path.join(root, "feedback", student, a, a + ".html"), encoding="utf-8").read()
        for func, mistake in planted.items():
            gid = f"{func}_test"
            if r.scores.get(gid, 0) >= r.max[gid]:
                problems.append(f"{mistake.name} ({func}) got full marks")
            if mistake.name not in html:
                problems.append(f"{mistake.name} ({func}) not named in the feedback")
    assert not problems, problems


@pytest.mark.parametrize("other", OTHERS, ids=lambda o: o[0])
def test_answers_written_elsewhere_get_the_right_outcome(graded_class, other):
    """Issue 17: a float32 table scores, a helper defined in a later cell does not take a right answer's
    points, a mistake is named only when it reproduces every case, the new catalogue entries are named."""
    root, results, _ = graded_class
    student, a, _, expect = other
    r = results[f"{student}/{a}"]
    html = open(os.path.join(root, "feedback", student, a, a + ".html"), encoding="utf-8").read()
    assert r.status == "ok" and not r.flags, r
    for func, (full, name, not_named) in expect.items():
        gid = f"{func}_test"
        assert (r.scores[gid] == r.max[gid]) is full, (func, r.scores[gid], r)
        if name:
            assert f"[{name}]" in html, (func, name)
        for other_name in not_named:
            assert f"[{other_name}]" not in html, (func, other_name)


def test_jobs_2_equals_jobs_1(tmp_path, fresh_release):
    a = "ps04_step_by_step"
    if a not in ASSIGNMENTS:
        pytest.skip("no ps04")
    src = nbformat.read(os.path.join(REPO, "solutions", a, a + ".ipynb"), as_version=4)
    rel = nbformat.read(str(fresh_release / a / (a + ".ipynb")), as_version=4)
    t = tasks_of(a)
    csvs = []
    for jobs in (1, 2):
        root = tmp_path / f"j{jobs}"
        shutil.copytree(os.path.join(REPO, "solutions", a), root / "solutions" / a)
        wrong = {**answers_of(src), f"{t[2].func_name}_answer": t[2].mistakes[1].source}
        for student, nb in (("ann", with_answers(rel, answers_of(src))), ("ben", rel),
                            ("cy", with_answers(rel, wrong))):
            d = root / "submitted" / student / a
            d.mkdir(parents=True)
            nbformat.write(nb, str(d / (a + ".ipynb")))
        (root / "submitted" / "dee" / a).mkdir(parents=True)
        grade(str(root), jobs=jobs, opts=OPTS, verbose=False)  # a LocalCluster of `jobs` Dask workers
        csvs.append((root / "grades.csv").read_text())
    assert csvs[0] == csvs[1]
    rows = list(csv.DictReader(csvs[0].splitlines()))
    assert [r["student"] for r in rows] == ["ann", "ben", "cy", "dee"]
    by_hand = sum(rel_cell.metadata["nbgrader"]["points"] for rel_cell in rel.cells
                  if rel_cell.metadata.get("nbgrader", {}).get("grade_id") in _graded_by_hand(a))
    assert float(rows[0]["total"]) == float(rows[0]["max"]) - by_hand and rows[3]["status"] == "ungradable"
