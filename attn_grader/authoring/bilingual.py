"""The exercise notebooks in two languages: each text cell in English, then in Chinese, from one source.

    python -m attn_grader.authoring.bilingual extract   # locales/zh_CN/LC_MESSAGES/exercises/<ps>.po from the English
    python -m attn_grader.authoring.bilingual apply     # solutions/*.ipynb text cells: English + the translation

A release in one language (``make release LANG=zh_CN`` or ``LANG=en``) keeps one side of every text cell
(:func:`one_language`); code cells, and so the grader, are the same in all three releases.  The choice is
the course's: ``c.OneLanguage.language`` in ``nbgrader_config.py`` (``make release LANG=...`` writes that
line, :func:`record_language`), and :class:`OneLanguage`, last of ``GenerateAssignment``'s preprocessors
there, applies it, so ``nbgrader generate_assignment --force`` releases in the same language as
``make release``.

The English part of every markdown cell of ``solutions/<ps>/<ps>.ipynb`` (but a written answer's cell,
whose model answer and rubric the release replaces) is a message of
``exercises/<ps>.po`` (gettext, as the book's catalogues); ``apply`` writes its translation under it,
after :data:`MARKER`, so the two can only disagree when the catalogue says so (a changed English
text is an untranslated message, and ``tests/test_zh.py`` fails).  ``make release`` then generates
the bilingual releases as before; the grader reads only code cells and is unchanged.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum

from ..files.languages import MARKER, chinese, english  # noqa: F401 (MARKER, english: this module's API)

ROOT = Path(__file__).resolve().parents[2]
PO_DIR = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "exercises"
#: The languages a release can have: both (the default), English only, Chinese only.
LANGUAGES = ("both", "en", "zh_CN")


def one_language(nb, lang: str):
    """``nb`` (an nbformat notebook, changed in place and returned) with its bilingual text cells in
    ``lang`` only: "en" keeps the English, "zh_CN" the translation (the English where a cell has none),
    "both" changes nothing.  Code cells and every cell's metadata stay as they are."""
    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r}: one of {', '.join(LANGUAGES)}")
    if lang != "both":
        for cell in nb.cells:
            if cell.cell_type == "markdown" and MARKER in cell.source:
                cell.source = english(cell.source) if lang == "en" else chinese(cell.source) or english(cell.source)
    return nb


class OneLanguage(NbGraderPreprocessor):
    """nbgrader's GenerateAssignment, last step: the released text cells in the course's language
    (:func:`one_language`).  Last, so the checksums and the gradebook's copies of the cells are the
    bilingual source's, as the grader expects of any of the three releases."""

    language = Enum(LANGUAGES, default_value="both",
                    help="the release's text cells: both (English, then Chinese), en or zh_CN").tag(config=True)

    def preprocess(self, nb, resources):
        return one_language(nb, self.language), resources


#: The one line of nbgrader_config.py that says the course's release language.
LANGUAGE_LINE = re.compile(r'^c\.OneLanguage\.language = "(\w+)"', re.M)


def recorded_language(root: Path = ROOT) -> str:
    """The release language ``root``/nbgrader_config.py records ("both" where it records none)."""
    config = Path(root) / "nbgrader_config.py"
    found = LANGUAGE_LINE.findall(config.read_text()) if config.is_file() else []
    return found[-1] if found and found[-1] in LANGUAGES else "both"


def record_language(root: Path, lang: str) -> None:
    """Write ``lang`` into the course's nbgrader_config.py (its one ``c.OneLanguage.language`` line), so
    that nbgrader's own ``generate_assignment`` releases in it too."""
    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r}: one of {', '.join(LANGUAGES)}")
    config = Path(root) / "nbgrader_config.py"
    text = config.read_text()
    if len(LANGUAGE_LINE.findall(text)) != 1:
        raise SystemExit(f"{config}: no single line 'c.OneLanguage.language = \"...\"' to record the language in")
    config.write_text(LANGUAGE_LINE.sub(f'c.OneLanguage.language = "{lang}"', text))


def po_of(path: Path, root: Path = ROOT) -> Path:
    """The catalogue of a source notebook solutions/<ps>/<ps>.ipynb."""
    return root / PO_DIR.relative_to(ROOT) / f"{path.stem}.po"


def is_answer_cell(cell) -> bool:
    """A markdown cell the student writes in (an nbgrader solution cell, e.g. a written answer): its source
    text is the instructor's model answer and rubric, which the release replaces with the stub, so it is not
    a text to translate."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def text_cells(root: Path = ROOT, only: Path | None = None):
    """(notebook path, notebook, cell) for every markdown cell of every source notebook but the answer cells."""
    import nbformat

    for path in sorted((root / "solutions").glob("*/*.ipynb")):
        if only is not None and path != only:
            continue
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown" and english(cell.source) and not is_answer_cell(cell):
                yield path, nb, cell


def read_catalogue(po: Path):
    from babel.messages.pofile import read_po

    with open(po, "rb") as f:
        return read_po(f, locale="zh_CN")


def extract(root: Path = ROOT) -> int:
    """Write the catalogues: every English text, keeping the translations they already have."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    n = 0
    for path in sorted((root / "solutions").glob("*/*.ipynb")):
        template = Catalog(locale="zh_CN", project=f"Self-Attention, Step by Step: {path.stem}")
        for _, _, cell in text_cells(root, path):
            template.add(english(cell.source))
        po = po_of(path, root)
        if po.exists():
            catalogue = read_catalogue(po)
            catalogue.update(template, no_fuzzy_matching=False)
        else:
            catalogue = template
        catalogue.fuzzy = False
        po.parent.mkdir(parents=True, exist_ok=True)
        with open(po, "wb") as f:
            write_po(f, catalogue, width=0, sort_output=False, include_lineno=False)
        n += len(template)
    return n


def apply(root: Path = ROOT) -> list[str]:
    """Write English + translation into every text cell; return the English texts with no translation."""
    import nbformat

    missing, changed = [], {}
    catalogues: dict = {}
    for path, nb, cell in text_cells(root):
        po = po_of(path, root)
        if path not in catalogues:
            catalogues[path] = read_catalogue(po) if po.exists() else None
        catalogue = catalogues[path]
        en = english(cell.source)
        msg = catalogue.get(en) if catalogue is not None else None
        zh = msg.string if msg is not None and msg.string and not msg.fuzzy else ""
        if not zh:
            missing.append(f"{path.stem}: {en[:60]}")
        new = en + (MARKER + zh.strip() if zh else "")
        if cell.source != new:
            cell.source = new
            changed[path] = nb
    for path, nb in changed.items():
        nbformat.write(nb, path)
    return missing


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "apply"
    if what == "extract":
        print(f"{extract()} texts in {PO_DIR.relative_to(ROOT)}/")
        return 0
    if what == "apply":
        missing = apply()
        print(f"{len(missing)} text(s) without a translation" if missing else "every text cell is bilingual")
        return 1 if missing else 0
    raise SystemExit("usage: python -m attn_grader.authoring.bilingual extract|apply")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
