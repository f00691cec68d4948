"""Where each chapter's code lives: the map of the README's table and of every chapter's first lines.

The map is computed, not written: a chapter's reference modules are the ``attn_ref`` modules its code cells
import, its support modules the ``attn_book`` ones, its exercise the ``solutions/psNN_<chapter>`` folder and
its grading catalogue ``attn_grader/catalogue/psNN_<chapter>.py``.  So it cannot drift from the code.

- As a Sphinx extension it gives the directive ``{chapter-code}``, which each chapter puts under its title:
  one line naming its reference and support modules and its exercise, in the page's language (not the
  grading catalogue: that is the grader's, not the reader's).
- ``python book/_ext/chapter_code.py`` prints the README's table (``tests/test_layout.py`` checks that the
  README holds it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # notebooks.py beside it
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
LABELS = {
    "en": {"title": "Code of this chapter", "reference": "reference", "support": "figures, data, models",
           "exercise": "exercise"},
    "zh": {"title": "本章代码", "reference": "参考实现", "support": "图、数据、模型",
           "exercise": "练习"},
}


def cell_imports(source: str) -> set[str]:
    """Every module a chapter's code cells import (``notebooks._imports`` per cell, its option lines dropped)."""
    from notebooks import _imports

    return {name for code in CODE_CELL.findall(source)
            for name in _imports("\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(":")))}


def imported_modules(source: str) -> list[str]:
    """The first-party modules (``attn_ref.x``, ``attn_book.y.z``) a chapter's code cells import, sorted."""
    return sorted(n for n in cell_imports(source) if n.split(".")[0] in ("attn_ref", "attn_book"))


def chapter_map(chapter: str, root: Path = ROOT) -> dict[str, list[str]]:
    """``chapter`` is the file's stem (``matrix_form``)."""
    modules = imported_modules((root / "book" / f"{chapter}.md").read_text(encoding="utf-8"))
    exercises = sorted(p.name for p in (root / "solutions").glob(f"ps[0-9][0-9]_{chapter}") if p.is_dir())
    return {
        "reference": [m for m in modules if m.startswith("attn_ref")],
        "support": [m for m in modules if m.startswith("attn_book")],
        "exercise": exercises,
        "catalogue": [f"attn_grader/catalogue/{ps}.py" for ps in exercises
                      if (root / "attn_grader" / "catalogue" / f"{ps}.py").is_file()],
    }


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters that carry the directive, in the order of the table of contents."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [Path(f).name for f in files
            if "{chapter-code}" in (root / f"{f}.md").read_text(encoding="utf-8")]


def readme_table(root: Path = ROOT) -> str:
    """The README's map: one row a chapter."""
    def cell(names):
        return ", ".join(f"`{n}`" for n in names) or "—"

    rows = ["| chapter | formulas (reference) | figures, data, models | exercise | its mistakes (catalogue) |",
            "|---|---|---|---|---|"]
    for ch in chapters(root):
        m = chapter_map(ch, root)
        rows.append(f"| `book/{ch}.md` | {cell(m['reference'])} | {cell(m['support'])} | "
                    f"{cell(m['exercise'])} | {cell(m['catalogue'])} |")
    return "\n".join(rows)


def setup(app):
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class ChapterCode(SphinxDirective):
        """``{chapter-code}``: the line under a chapter's title that names its modules."""

        def run(self):
            lang = "zh" if (self.config.language or "en").startswith("zh") else "en"
            words = LABELS[lang]
            chapter = Path(self.env.docname).name
            found = chapter_map(chapter)
            # written in the page's language here, so not a message of the catalogues
            para = nodes.paragraph(classes=["chapter-code"], translatable=False)
            para += nodes.strong(text=words["title"])
            para += nodes.Text(" — " if lang == "en" else "：")
            parts = [(key, found[key]) for key in ("reference", "support", "exercise") if found[key]]
            for i, (key, names) in enumerate(parts):
                if i:
                    para += nodes.Text(" · ")
                para += nodes.Text(f"{words[key]}: " if lang == "en" else f"{words[key]}：")
                for j, name in enumerate(names):
                    if j:
                        para += nodes.Text(", " if lang == "en" else "、")
                    para += nodes.literal(text=name)
            return [para]

    app.add_directive("chapter-code", ChapterCode)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for ch in sys.argv[1:]:
            print(ch, chapter_map(ch))
    else:
        print(readme_table())
