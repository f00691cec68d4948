"""The student edition (make publish, attn_grader/authoring/publish.py; issue 39): what students may have and
nothing else, pointed to from everything a student is given.

The edition is written from the built site when there is one (SITE_HTML, default _build/html), else from
a small site of the Exercises page's zips (what the site adds that could leak), so these tests need no book
build; writing and scanning an edition takes seconds, so they are marked slow.  Planted leaks show that
the scan finds a solution cell, a hidden test, an attack, the course's secret and a solutions/ file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib

import nbformat
import pytest
import yaml
from site_helpers import ROOT, SITE, need_site
from test_leaks import published_sources, scan_site, solution_lines

from attn_grader import selfcheck
from attn_grader.authoring import publish
from attn_grader.authoring.bilingual import MARKER

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import exercise_downloads  # noqa: E402

A = "ps05_matrix_form"


def _small_site(tmp_path):
    site = tmp_path / "site-src"
    exercise_downloads.build_zips(ROOT / "exercises", site)
    (site / "index.html").write_text("<p>the book</p>")
    return site


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("publish")
    site = SITE if (SITE / "index.html").is_file() else _small_site(tmp)
    dest = tmp / "edition"
    assert publish.publish(dest, "both", site) == []
    return dest


def _public_code() -> list:
    """Sources public by design besides the book and the releases: the reference, the book's support, the
    catalogue (a solution line they also hold is not a secret)."""
    return published_sources() + [p for d in ("attn_ref", "attn_book", "attn_grader/catalogue")
                                  for p in (ROOT / d).rglob("*.py")]


@pytest.mark.slow
def test_the_edition_holds_what_students_need(edition):
    for rel in ("README.md", "requirements.txt", "pyproject.toml", "_config.yml", "_toc.yml", "site/index.html",
                "book/for_students.md", "book/step_by_step.ipynb", "locales/zh_CN/LC_MESSAGES/book/intro.po",
                f"exercises/{A}/{A}.ipynb", "attn_ref/attention.py", "attn_book/__init__.py",
                "attn_grader/selfcheck.py", f"attn_grader/catalogue/{A}.py", "attn_grader/checking/core.py"):
        assert (edition / rel).is_file(), rel
    released = sorted(p.relative_to(ROOT) for p in (ROOT / "exercises").rglob("*.ipynb"))
    assert sorted(p.relative_to(edition) for p in (edition / "exercises").rglob("*.ipynb")) == released
    # of the grader, the self-check's distribution only
    for rel in ("attn_grader/run", "attn_grader/isolation", "attn_grader/reports", "attn_grader/authoring",
                "attn_grader/checking/recheck.py", "docs", "solutions", "tests", "nbgrader_config.py"):
        assert not (edition / rel).exists(), rel


@pytest.mark.slow
def test_the_self_check_and_every_catalogue_work_from_the_edition_alone(edition):
    """In a fresh interpreter whose path starts at the edition: attn_grader comes from it, every catalogue
    module imports, and the self-check names a catalogued mistake."""
    code = f"""
import importlib, pathlib, sys
sys.path.insert(0, {str(edition)!r})
import attn_grader, attn_ref
from attn_grader.selfcheck import check
from attn_grader.checking import core
assert pathlib.Path(attn_grader.__file__).is_relative_to({str(edition)!r}), attn_grader.__file__
assert pathlib.Path(attn_ref.__file__).is_relative_to({str(edition)!r}), attn_ref.__file__
for p in sorted(pathlib.Path({str(edition)!r}, 'attn_grader', 'catalogue').glob('ps*.py')):
    importlib.import_module('attn_grader.catalogue.' + p.stem)
task = core.get_task({A!r}, 'project')
check({A!r}, 'project', core.load_mistake(task, task.mistakes[1]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    from attn_grader.checking import core

    assert core.get_task(A, "project").mistakes[1].name in out.stdout, out.stdout


@pytest.mark.slow
def test_the_edition_holds_nothing_secret(edition):
    """publish's own scan, then tests/test_leaks.py's on every folder. The self-check's distribution
    (attn_grader/) is what `pip install self-attention-step-by-step[student]` installs anyway; its docs name
    the hidden tests' one-line call (core.py), so there only markers, solution lines and copies count."""
    assert publish.leaks(edition) == []
    problems = _scan(edition)
    assert not problems, "\n".join(problems[:20])


def _scan(edition) -> list[str]:
    problems = []
    for top in sorted(edition.iterdir()):
        if top.is_dir() and top.name != ".git":
            found = scan_site(top, ROOT / "solutions", _public_code())
            if top.name == "attn_grader":
                found = [p for p in found if "hidden-test code" not in p]
            problems += [f"{top.name}/{p}" for p in found]
    return problems


@pytest.mark.slow
def test_planted_solutions_hidden_tests_attacks_and_secrets_are_found(tmp_path):
    """The scan on an edition with each kind of leak planted (each also alone: one leak is enough)."""
    dest = tmp_path / "edition"
    assert publish.publish(dest, "both", _small_site(tmp_path)) == []
    assert _scan(dest) == []
    src = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
    secret = solution_lines(ROOT / "solutions", _public_code())  # solution lines nothing public holds
    # an answer cell holding the solution, nbgrader's markers removed (what a careless copy would leave)
    rel = nbformat.read(dest / "exercises" / A / f"{A}.ipynb", as_version=4)
    answer = next(c for c in src.cells if c.metadata.get("nbgrader", {}).get("solution")
                  and any(line in " ".join(c.source.split()) for line in secret))
    stripped = "\n".join(ln for ln in answer.source.splitlines() if "### " not in ln)
    cell = next(c for c in rel.cells if c.metadata.get("nbgrader", {}).get("grade_id") ==
                answer.metadata["nbgrader"]["grade_id"])
    cell.source = stripped
    plants = {
        "solution cell": (f"exercises/{A}/{A}.ipynb", nbformat.writes(rel)),
        "source notebook": ("book/extra.ipynb", nbformat.writes(src)),
        "hidden tests": ("book/notes.md", "### BEGIN HIDDEN TESTS\ncheck('ps05_matrix_form', 'project', project)\n"),
        "attack": ("tests/attacks/a02_calls_attn_ref/x.ipynb", "{}"),
        "secret": (".grader/secret", "0123"),
        "solutions": ("solutions/README.md", "sources"),
        "gradebook": ("gradebook.db", ""),
    }
    expected = {"solution cell": "holds a solution, not the stub", "source notebook": "BEGIN SOLUTION",
                "hidden tests": "BEGIN HIDDEN TESTS", "attack": "tests is not for students",
                "secret": ".grader is not for students", "solutions": "solutions is not for students",
                "gradebook": "gradebook.db is not for students"}
    for name, (where, text) in plants.items():  # one at a time, each taken out again
        path, top = dest / where, dest / where.split("/")[0]
        before, new_top = (path.read_bytes() if path.exists() else None), not top.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        found = "\n".join(publish.leaks(dest))
        assert expected[name] in found, (name, found)
        if name == "solution cell":  # its code is also found by the line scan of tests/test_leaks.py
            assert any("solution line" in p for p in _scan(dest))
        if new_top:
            shutil.rmtree(top) if top.is_dir() else top.unlink()
        else:
            path.write_bytes(before) if before is not None else path.unlink()
    assert publish.leaks(dest) == []


@pytest.mark.slow
def test_an_english_edition_has_english_exercises_and_the_same_code(tmp_path):
    dest = tmp_path / "edition"
    assert publish.publish(dest, "en", _small_site(tmp_path)) == []
    ours = nbformat.read(dest / "exercises" / A / f"{A}.ipynb", as_version=4)
    released = nbformat.read(ROOT / "exercises" / A / f"{A}.ipynb", as_version=4)
    assert not any(MARKER.strip() in c.source for c in ours.cells if c.cell_type == "markdown")
    assert [c.source for c in ours.cells if c.cell_type == "code"] == \
        [c.source for c in released.cells if c.cell_type == "code"]


@pytest.mark.slow
def test_publish_writes_only_into_a_new_folder_or_an_edition(tmp_path):
    site = _small_site(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "thesis.tex").write_text("mine")
    with pytest.raises(SystemExit, match="neither empty nor a student edition"):
        publish.publish(other, "both", site)
    assert (other / "thesis.tex").read_text() == "mine"
    with pytest.raises(SystemExit, match="inside the course"):
        publish.publish(ROOT / "_build" / "edition", "both", site)
    dest = tmp_path / "edition"
    (dest / ".git").mkdir(parents=True)
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    publish.publish(dest, "both", site)
    (dest / "stale.txt").write_text("from an older edition")
    publish.publish(dest, "both", site)
    assert not (dest / "stale.txt").exists() and (dest / ".git" / "HEAD").is_file()


@pytest.mark.slow
def test_binder_requirements_and_the_distribution(edition):
    lines = [ln for ln in (edition / "requirements.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[-1] == "."  # the edition itself: attn_ref, attn_book, the self-check
    pins = set(lines)
    for needed in ("numpy==", "ipykernel==", "matplotlib==", "torch==", "torch_geometric=="):
        assert any(p.startswith(needed) for p in pins), needed
    assert not any(p.startswith(("nbgrader", "playwright", "pytest", "dask")) for p in pins)
    meta = tomllib.loads((edition / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "self-attention-step-by-step"
    assert meta["project"]["optional-dependencies"]["student"] == ["ipykernel"]


@pytest.mark.slow
def test_everything_a_student_is_pointed_to_names_the_edition(edition):
    """The address is repository.url of _config.yml: the self-check's install line, the launch notebooks'
    set-up cell and the edition's README use it."""
    url, branch = publish.edition_url()
    assert selfcheck.HOW_TO_GET_IT == publish.install_line() == \
        f'pip install "self-attention-step-by-step[student] @ git+{url}@{branch}"'
    setup = nbformat.read(ROOT / "book" / "step_by_step.ipynb", as_version=4).cells[0].source
    assert f"git+{url}@{branch}" in setup
    assert url in (edition / "README.md").read_text()
    released = (edition / "exercises" / A / f"{A}.ipynb").read_text()
    assert url in released and "self-attention-step-by-step/book@" not in released


def test_readdress_writes_a_new_address_everywhere_it_is_copied(tmp_path):
    root = tmp_path / "course"
    (root / "attn_grader").mkdir(parents=True)
    shutil.copy(ROOT / "attn_grader" / "selfcheck.py", root / "attn_grader" / "selfcheck.py")
    shutil.copytree(ROOT / "solutions" / A, root / "solutions" / A)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"]["url"] = "https://example.edu/course/attention-students"
    (root / "_config.yml").write_text(yaml.safe_dump(config))
    changed = publish.readdress(root)
    assert sorted(p.name for p in changed) == ["ps05_matrix_form.ipynb", "selfcheck.py"]
    new = publish.install_line(root)
    assert "example.edu/course/attention-students@main" in new
    namespace: dict = {}
    text = (root / "attn_grader" / "selfcheck.py").read_text()
    exec(text[text.index("HOW_TO_GET_IT"):text.index("def cell_lines")], namespace)  # noqa: S102 - our file
    assert namespace["HOW_TO_GET_IT"] == new
    nb = (root / "solutions" / A / f"{A}.ipynb").read_text()
    assert nb.count("attention-students@main") == 4 and selfcheck.HOW_TO_GET_IT.split("@ ")[1][:-1] not in nb


@pytest.mark.slow
def test_the_published_site_points_at_the_edition():
    """The built for_students page gives the edition's address (the launch buttons: tests/test_site.py)."""
    site = need_site()
    url, _ = publish.edition_url()
    for page in (site / "book" / "for_students.html", site / "zh" / "book" / "for_students.html"):
        assert f'href="{url}"' in page.read_text(), page
