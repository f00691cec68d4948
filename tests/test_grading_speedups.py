"""What make grade does to spare nbgrader's slow paths gives the same answers as those paths.

(tests/test_grading.py grades whole classes through them; these check each shortcut on its own.)
"""

import os
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup

from attn_grader.run import patches
from attn_grader.run.patches import NO_ALT, add_missing_alt


@pytest.mark.slow
def test_alembic_head_read_in_process_equals_the_alembic_command():
    import nbgrader.api as api

    patches.nbgrader_setup()
    bindir = os.path.dirname(sys.executable)
    with api._temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        out = subprocess.check_output([os.path.join(bindir, "alembic"), "-c", ini, "heads"], text=True)
    assert patches.alembic_head() == out.split("\n")[0].split(" ")[0]
    assert api.get_alembic_version() == patches.alembic_head()


def test_gradebooks_of_one_database_share_an_engine_and_still_work(tmp_path):
    from nbgrader.api import Gradebook

    patches.nbgrader_setup()
    url = "sqlite:///" + str(tmp_path / "gradebook.db")
    with Gradebook(url) as gb:
        gb.add_student("ada")
        first = gb.engine
    with Gradebook(url) as gb:  # after close(): the engine's pool was disposed; it reconnects
        assert gb.engine is first
        assert [s.id for s in gb.students] == ["ada"]
    with Gradebook("sqlite:///" + str(tmp_path / "other.db")) as gb:
        assert gb.engine is not first and gb.students == []


@pytest.mark.slow
def test_rfc3987_grammar_is_not_built_by_the_grader():
    code = "import sys, attn_grader.run.autograde; print('rfc3987_syntax' in sys.modules and " \
           "sys.modules['rfc3987_syntax'] is not None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_cell_metadata_is_validated_as_jsonschema_validate_does():
    import jsonschema
    import nbformat
    from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

    patches.nbgrader_setup()
    validator = MetadataValidatorV3()
    good = {"schema_version": 3, "grade": True, "solution": False, "locked": True, "points": 2,
            "grade_id": "t", "task": False}
    bad = [{**good, "points": "2"}, {**good, "grade_id": 7}, {k: v for k, v in good.items() if k != "locked"},
           {**good, "solution": "yes"}]
    refused = []
    for meta in [good, *bad] * 2:  # twice: the second time from the validator checked once
        cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": dict(meta)})
        try:
            jsonschema.validate(meta, validator.schema)
            expected = None
        except jsonschema.ValidationError as exc:
            expected = exc.message
        try:
            validator.validate_cell(cell)
            got = None
        except jsonschema.ValidationError as exc:
            got = exc.message
        assert got == expected
        refused.append(got is not None)
    assert refused == [False, True, True, True, True] * 2


def _nbconvert_way(html: str) -> list:
    """What nbconvert's HTMLExporter does to images after rendering (its BeautifulSoup pass)."""
    soup = BeautifulSoup(html, features="html.parser")
    for elem in soup.select("img:not([alt])"):
        elem.attrs["alt"] = NO_ALT
    return [img.get("alt") for img in soup.find_all("img")]


def test_missing_alt_added_like_nbconvert():
    html = ('<p>a</p><img src="data:image/png;base64,AAA="><img alt="a plot" src="x.png">'
            '<IMG SRC="y.png"/><img\nsrc="z.png" class="big"><imgx src="no"><code>&lt;img src=q&gt;</code>'
            '<img src="w.png" data-alt="not it">')
    ours = [img.get("alt") for img in BeautifulSoup(add_missing_alt(html), features="html.parser").find_all("img")]
    assert ours == _nbconvert_way(html) == [NO_ALT, "a plot", NO_ALT, NO_ALT, NO_ALT]


def test_batches_hold_one_assignment_each_and_every_submission_once():
    from attn_grader.run.cluster import BATCH_CAP, batches
    from attn_grader.run.discover import Submitted

    assignments = ["ps04_step_by_step", "ps12_efficient", "ps05_matrix_form"]
    for per in (1, 3, 7, 40):
        items = [(Submitted(f"s{i:02d}", a, ""), {}) for i in range(per) for a in assignments]  # student by student
        for workers in (1, 2, 3, 8):
            tasks = batches(items, assignments, workers)
            assert sorted((x[0].student, x[0].assignment) for t in tasks for x in t) == \
                sorted((x[0].student, x[0].assignment) for x in items)  # each submission exactly once
            assert all(len({x[0].assignment for x in t}) == 1 for t in tasks)  # nbgrader's set-up once per task
            assert max(map(len, tasks)) <= BATCH_CAP
            # every worker has work in each assignment, and no more batches than the cap calls for
            counts = [sum(t[0][0].assignment == a for t in tasks) for a in assignments]
            assert all(c == min(per, max(workers, -(-per // BATCH_CAP))) for c in counts), (per, workers, counts)
            sizes = [len(t) for t in tasks]
            assert max(sizes) - min(sizes) <= 1  # equal batches: none holds the others back
            assert [t[0][0].assignment for t in tasks] == sorted((t[0][0].assignment for t in tasks),
                                                                 key=assignments.index)


def test_recheck_wall_limit_kills_and_a_quick_child_is_collected(tmp_path):
    """The re-check waits on a pidfd: a child past its wall limit is killed, a finished one collected."""
    from attn_grader.checking import recheck

    slow = recheck.run([], {}, "import time\ntime.sleep(60)", {}, str(tmp_path), wall_seconds=1)
    assert slow["status"] == "re-check took longer than 1 s"
    assert slow["seconds"] < 30  # killed at the limit, not waited for (the setup sleeps 60 s)
    quick = recheck.run([], {}, "x = 1", {}, str(tmp_path), wall_seconds=60)
    assert quick["status"] == "finished", quick
    failing = recheck.run([], {}, "raise SystemExit(3)", {}, str(tmp_path), wall_seconds=60)
    assert failing["status"] == "re-check process ended with code 3", failing
    assert os.listdir(tmp_path) == [], "a re-check left its working folder behind"
