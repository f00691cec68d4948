"""make release LANG=zh_CN|en (issue 32): a release's text cells in one language, its code cells the
bilingual release's, and the grading the same; the Exercises page's zips (one per language) hold that
release and no solution."""

from __future__ import annotations

import os
import shutil
import sys
import zipfile

import nbformat
import pytest
from site_helpers import ROOT

from attn_grader.authoring.bilingual import MARKER, chinese, english, one_language
from attn_grader.files.languages import one_of_the_releases

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import exercise_downloads  # noqa: E402

A = "ps04_step_by_step"


def _nb():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## 1. Scores" + MARKER + "## 1. 分数"),
                nbformat.v4.new_markdown_cell("Only English here."),
                nbformat.v4.new_code_cell("def f(x):\n    raise NotImplementedError()")]
    nb.cells[0].metadata["nbgrader"] = {"locked": True}
    return nb


@pytest.mark.parametrize("lang, first, second", [
    ("en", "## 1. Scores", "Only English here."),
    ("zh_CN", "## 1. 分数", "Only English here."),
    ("both", "## 1. Scores" + MARKER + "## 1. 分数", "Only English here."),
])
def test_one_language_keeps_one_side_of_each_text_cell_and_every_code_cell(lang, first, second):
    nb = one_language(_nb(), lang)
    assert [c.source for c in nb.cells[:2]] == [first, second]
    assert nb.cells[2].source == _nb().cells[2].source and nb.cells[0].metadata == _nb().cells[0].metadata


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError, match="fr"):
        one_language(_nb(), "fr")


def test_the_split_is_the_one_bilingual_apply_writes():
    assert english("a" + MARKER + "b") == "a" and chinese("a" + MARKER + "b") == "b" and chinese("a") == ""


def test_the_grader_takes_a_text_cell_of_any_release_as_the_release():
    source = "## 1. Scores" + MARKER + "## 1. 分数"
    assert all(one_of_the_releases(t, source) for t in (source, "## 1. Scores", "## 1. 分数"))
    assert not one_of_the_releases("## 1. Scores, edited", source)
    assert not one_of_the_releases("## 1. 分数", "## 1. Scores")   # a text with no translation: itself only


def test_the_zips_hold_every_released_file_in_one_language_and_no_solution(tmp_path):
    zips = exercise_downloads.build_zips(ROOT / "exercises", tmp_path)
    assert [z.name for z in zips] == ["exercises-en.zip", "exercises-zh_CN.zip"]
    released = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "exercises").rglob("*") if p.is_file())
    for z, lang in zip(zips, ("en", "zh_CN"), strict=True):
        with zipfile.ZipFile(z) as f:
            assert sorted(f.namelist()) == released
            nb = nbformat.reads(f.read(f"exercises/{A}/{A}.ipynb").decode(), as_version=4)
            texts = [c.source for c in nb.cells if c.cell_type == "markdown"]
            code = [c.source for c in nb.cells if c.cell_type == "code"]
            for name in f.namelist():
                body = f.read(name).decode("utf-8", errors="ignore")
                assert "BEGIN SOLUTION" not in body and "BEGIN HIDDEN TESTS" not in body, name
        original = nbformat.read(ROOT / "exercises" / A / f"{A}.ipynb", as_version=4)
        assert code == [c.source for c in original.cells if c.cell_type == "code"]
        bilingual = [c.source for c in original.cells if c.cell_type == "markdown"]
        assert any(MARKER in t for t in bilingual)
        pick = english if lang == "en" else (lambda t: chinese(t) or english(t))
        assert texts == [pick(t) if MARKER in t else t for t in bilingual], lang


@pytest.mark.slow
def test_a_release_in_one_language_grades_as_the_bilingual_one(tmp_path):
    """The solution and one catalogued mistake of ps04, handed in on the en, the zh_CN and the bilingual
    release, graded in one run: the same scores."""
    from attn_grader.authoring.demo import answers_of, with_answers
    from attn_grader.authoring.release import release
    from attn_grader.checking.core import tasks_of
    from attn_grader.run.autograde import Options, grade

    root = tmp_path / "course"
    shutil.copytree(ROOT / "solutions" / A, root / "solutions" / A)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    src = nbformat.read(root / "solutions" / A / f"{A}.ipynb", as_version=4)
    solution = answers_of(src)
    task = tasks_of(A)[0]
    mutant = {**solution, f"{task.func_name}_answer": task.mistakes[0].source}
    for lang in ("both", "en", "zh_CN"):
        out = tmp_path / f"release-{lang}"
        release(str(ROOT), assignments=[A], out=str(out), lang=lang)
        rel = nbformat.read(out / A / f"{A}.ipynb", as_version=4)
        text = "\n".join(c.source for c in rel.cells if c.cell_type == "markdown")
        assert (MARKER.strip() in text) == (lang == "both")
        for who, answers in (("solution", solution), ("mutant", mutant)):
            d = root / "submitted" / f"{who}-{lang}" / A
            os.makedirs(d)
            nbformat.write(with_answers(rel, answers), d / f"{A}.ipynb")
    results = grade(str(root), jobs=1, opts=Options(cell_timeout=60, budget=300, recheck_seconds=120,
                                                    call_seconds=30))
    scores = {k: (r.status, r.total, r.max_total, dict(r.scores)) for k, r in results.items()}
    for who in ("solution", "mutant"):
        assert scores[f"{who}-en/{A}"] == scores[f"{who}-both/{A}"] == scores[f"{who}-zh_CN/{A}"], scores
    solution = results[f"solution-both/{A}"]  # full marks on every automatic cell; the written answer, graded by
    by_hand = sum(solution.max[g] for g in solution.manual_tasks)  # hand, was left as released: nbgrader's 0
    assert solution.manual_tasks == ["written_answer"] and solution.auto["written_answer"] == 0 and by_hand > 0
    assert solution.total == solution.max_total - by_hand > 0
    assert scores[f"mutant-both/{A}"][1] < scores[f"mutant-both/{A}"][2]


def _course(tmp_path):
    """A course of one assignment (ps04) with this repository's nbgrader_config.py."""
    root = tmp_path / "course"
    shutil.copytree(ROOT / "solutions" / A, root / "solutions" / A)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    return root


def test_make_release_records_the_language_in_the_course_config(tmp_path):
    from attn_grader.authoring.bilingual import record_language, recorded_language

    root = _course(tmp_path)
    assert recorded_language(root) == "both"
    record_language(root, "zh_CN")
    assert recorded_language(root) == "zh_CN"
    assert 'c.OneLanguage.language = "zh_CN"' in (root / "nbgrader_config.py").read_text()
    with pytest.raises(ValueError, match="fr"):
        record_language(root, "fr")


@pytest.mark.slow
def test_nbgrader_generate_assignment_after_make_release_lang_en_stays_english(tmp_path):
    """Issue 39.10: make release LANG=en, then the documented `nbgrader generate_assignment --force`: the
    release is still English only (it was bilingual again), the same notebook make release wrote."""
    import subprocess

    from attn_grader.authoring.release import main

    root = _course(tmp_path)
    assert main(["--course", str(root), "--lang", "en"]) == 0
    path = root / "exercises" / A / f"{A}.ipynb"
    ours = nbformat.read(path, as_version=4)
    assert not any(MARKER in c.source for c in ours.cells)
    path.unlink()
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "--force", A], cwd=root, check=True,
                   capture_output=True)
    stock = nbformat.read(path, as_version=4)
    texts = [c.source for c in stock.cells if c.cell_type == "markdown"]
    assert texts and not any(MARKER.strip() in t for t in texts), "nbgrader's own command released both languages"
    assert [(c.cell_type, c.source) for c in stock.cells] == [(c.cell_type, c.source) for c in ours.cells]
    # ... and a later make release without LANG keeps the recorded language
    assert main(["--course", str(root)]) == 0
    assert not any(MARKER in c.source for c in nbformat.read(path, as_version=4).cells)
