"""The exercises as one download per language: ``exercises-en.zip`` and ``exercises-zh_CN.zip`` at the
top of each built site (language_switch.py sets this extension up; the Exercises page links to them).

Each zip holds the released exercises/ (no solution: tests/test_leaks.py scans the zips' contents) with
every text cell in one language (:func:`attn_grader.authoring.bilingual.one_language`), as
``make release LANG=en`` / ``LANG=zh_CN`` would write them; the code cells, and so the grading, are the
released ones.  Built from the committed exercises/, so the book build runs no nbgrader.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "zh_CN")


def zip_name(lang: str) -> str:
    return f"exercises-{lang}.zip"


def build_zips(exercises: Path, outdir: Path) -> list[Path]:
    """One zip per language in ``outdir`` from the release folder ``exercises``; the zips' paths."""
    import nbformat

    from attn_grader.authoring.bilingual import one_language

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for lang in LANGS:
        target = outdir / zip_name(lang)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(p for p in exercises.rglob("*") if p.is_file()):
                if ".ipynb_checkpoints" in path.parts or "__pycache__" in path.parts:
                    continue
                arcname = (Path("exercises") / path.relative_to(exercises)).as_posix()
                if path.suffix == ".ipynb":
                    buf = io.StringIO()
                    nbformat.write(one_language(nbformat.read(path, as_version=4), lang), buf)
                    z.writestr(arcname, buf.getvalue())
                else:
                    z.write(path, arcname)
        written.append(target)
    return written


def _finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        build_zips(ROOT / "exercises", Path(app.outdir))


def setup(app):
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
