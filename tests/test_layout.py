"""The house a newcomer reads: the README's map is the chapters' own, every chapter names its modules
under its title, the modules named exist, and no module is longer than a reader can hold (400 lines)."""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import chapter_code  # noqa: E402

MAX_LINES = 400


def test_the_readme_holds_the_map_of_the_chapters():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = chapter_code.readme_table()
    assert table in readme, "README.md's map is out of date: paste the output of python book/_ext/chapter_code.py"
    assert len(table.splitlines()) >= 2 + 12  # a row for each of the lecture's chapters at least


def test_every_lecture_chapter_names_its_modules_under_its_title():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    lecture = [c["file"] for part in toc["parts"][:2] for c in part["chapters"]]
    for f in lecture:
        text = (ROOT / f"{f}.md").read_text(encoding="utf-8")
        after_title = text.split("\n# ", 1)[1].split("\n", 1)[1].lstrip("\n")
        assert after_title.startswith("```{chapter-code}\n```"), f"{f}.md: the first lines under the title"
    assert chapter_code.chapters() == [Path(f).name for f in lecture]


@pytest.mark.parametrize("chapter", chapter_code.chapters())
def test_the_modules_of_the_map_exist(chapter):
    found = chapter_code.chapter_map(chapter)
    for module in found["reference"] + found["support"]:
        importlib.import_module(module)
    for ps in found["exercise"]:
        assert (ROOT / "solutions" / ps / f"{ps}.ipynb").is_file()
        assert (ROOT / "exercises" / ps / f"{ps}.ipynb").is_file()
    for path in found["catalogue"]:
        assert (ROOT / path).is_file()
    if chapter != "transformer":  # the outlook has no exercise
        assert found["reference"] and found["exercise"] and found["catalogue"], found


def test_the_map_follows_the_imports():
    """A chapter that starts importing a module shows it in its map (not a list written by hand)."""
    source = "```{code-cell} ipython3\nfrom attn_ref.softmax import softmax\nimport attn_book.timing as t\n```\n"
    assert chapter_code.imported_modules(source) == ["attn_book.timing", "attn_ref.softmax"]


# The re-check harness is the one file bound alone into the sandbox (stdlib, NumPy, no package of ours): its guard,
# its streams and its output writer must be in it.  It may be longer, not without bound (a debt: split it into files
# the sandbox binds together).
ONE_FILE_BY_DESIGN = {"attn_grader/checking/harness.py"}
HARNESS_MAX_LINES = 600


def test_the_harness_bound_alone_into_the_sandbox_stays_within_its_own_bound():
    n = len((ROOT / "attn_grader/checking/harness.py").read_text(encoding="utf-8").splitlines())
    assert n <= HARNESS_MAX_LINES, f"harness.py has {n} lines: split it into files the sandbox binds together"


def test_no_module_is_over_400_lines():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    long = {f: n for f in files if (n := len((ROOT / f).read_text(encoding="utf-8").splitlines())) > MAX_LINES
            and f not in ONE_FILE_BY_DESIGN}
    assert not long, f"split these modules (more than {MAX_LINES} lines): {long}"
    assert len(files) > 100


def test_every_reference_module_is_named_for_one_idea():
    """The lecture's truncated attention has one name: module attn_ref.truncated, function truncated_attention
    (as the exercise calls it), its mask band_mask; no module of attn_ref is named local, data or diagrams."""
    names = {p.stem for p in (ROOT / "attn_ref").glob("*.py")}
    assert not names & {"local", "data", "diagrams", "plotting", "tiny_models", "order_task"}
    truncated = importlib.import_module("attn_ref.truncated")
    assert hasattr(truncated, "truncated_attention") and not hasattr(truncated, "banded_attention")
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md"))
    assert not re.search(r"banded_attention|attn_ref\.local\b", text)


def _imports_of(paths) -> set[str]:
    """Top-level module names the Python files (and the chapters' code cells) import."""
    from notebooks import _imports

    names = set()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        found = chapter_code.cell_imports(text) if path.suffix == ".md" else _imports(text)
        names |= {n.split(".")[0] for n in found}
    local = {p.stem for d in ("tests", "book/_ext", "tests/attacks") for p in (ROOT / d).glob("*.py")}
    ours = {"attn_ref", "attn_book", "attn_grader", "bench"}
    return {n for n in names if n not in sys.stdlib_module_names and n not in local | ours and not n.startswith("_")}


def _distributions(modules: set[str]) -> set[str]:
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    missing = {m for m in modules if m not in dists}
    assert not missing, f"imported but installed by no distribution: {missing}"
    return {_norm(d) for m in modules for d in dists[m][:1]}


def _norm(name: str) -> str:
    return re.split(r"[\[<>=~! ;]", name.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _files(*dirs, pattern="*.py"):
    return [p for d in dirs for p in (ROOT / d).rglob(pattern) if "__pycache__" not in p.parts]


def test_the_dependency_files_say_what_each_part_imports():
    """requirements.txt pins every package imported directly anywhere; pyproject.toml declares what each
    package needs: attn_ref NumPy alone, attn_book the `book` extra, attn_grader the `grading` extra."""
    import tomllib

    pins = {_norm(ln.split("#")[0]) for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if ln.split("#")[0].strip() and not ln.startswith("-")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_norm(d) for d in project["dependencies"]}
    extras = {k: {_norm(d) for d in v} for k, v in project["optional-dependencies"].items()}

    everything = _imports_of(_files("attn_ref", "attn_book", "attn_grader", "bench", "tests", "book/_ext")
                             + _files("book", pattern="*.md"))
    unpinned = _distributions(everything) - pins
    assert not unpinned, f"imported directly but not pinned in requirements.txt: {unpinned}"

    assert _distributions(_imports_of(_files("attn_ref"))) <= base == {"numpy"}
    assert not (need := _distributions(_imports_of(_files("attn_book"))) - base - extras["book"]), need
    assert not (need := _distributions(_imports_of(_files("attn_grader"))) - base - extras["grading"]), need
    for extra in extras.values():  # and every extra is pinned for .venv
        assert extra <= pins | {"nbgrader"}, extra - pins


@pytest.mark.slow
def test_each_chapter_page_shows_its_modules_in_its_language():
    from bs4 import BeautifulSoup
    from site_helpers import SITE, need_site

    need_site()
    for ch in chapter_code.chapters():
        found = chapter_code.chapter_map(ch)
        for page, title in ((SITE / "book" / f"{ch}.html", "Code of this chapter"),
                            (SITE / "zh" / "book" / f"{ch}.html", "本章代码")):
            line = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one("p.chapter-code")
            assert line is not None, f"{page}: no {{chapter-code}} line"
            text = line.get_text()
            assert text.startswith(title), (page, text)
            assert all(m in text for m in found["reference"] + found["support"] + found["exercise"]), (page, text)
            # the reader's page names the exercise, not the grader's internals (issue 42)
            assert "attn_grader" not in text and "catalogue" not in text and "错误目录" not in text, (page, text)
