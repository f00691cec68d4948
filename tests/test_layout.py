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
    if chapter not in ("efficient_kernels", "transformer"):  # the appendix and the outlook have no exercise
        assert found["reference"] and found["exercise"] and found["catalogue"], found


def test_the_map_follows_the_imports():
    """A chapter that starts importing a module shows it in its map (not a list written by hand)."""
    source = "```{code-cell} ipython3\nfrom attn_ref.softmax import softmax\nimport attn_book.timing as t\n```\n"
    assert chapter_code.imported_modules(source) == ["attn_book.timing", "attn_ref.softmax"]


def test_no_module_is_over_400_lines():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    long = {f: n for f in files if (n := len((ROOT / f).read_text(encoding="utf-8").splitlines())) > MAX_LINES}
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
