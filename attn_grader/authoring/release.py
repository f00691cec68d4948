"""``make release``: regenerate exercises/ from solutions/ for every assignment, in one nbgrader process.

    python -m attn_grader.authoring.release [--course DIR] [--out DIR] [--lang both|en|zh_CN]

``--lang`` (``make release LANG=...``): text cells in both languages (the default, the committed
exercises/), in English only, or in Chinese only (:func:`attn_grader.authoring.bilingual.one_language`);
the code cells, and so the grading, are the same in all three.

Uses nbgrader's GenerateAssignment with the course's settings (nbgrader_config.py) and a scratch
gradebook, so the course's gradebook.db is not touched.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import tempfile

from ..run.course import converter, quiet_logs
from ..run.discover import find_assignments
from ..run.patches import nbgrader_setup


def release(root: str, assignments: list[str] | None = None, out: str | None = None,
            lang: str = "both") -> list[str]:
    """Generate every assignment of ``root``/solutions into ``out`` (default ``root``/exercises), its
    text cells in ``lang`` ("both", "en" or "zh_CN")."""
    import nbformat
    from nbgrader.converters import GenerateAssignment

    from .bilingual import LANGUAGES, one_language

    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r}: one of {', '.join(LANGUAGES)}")
    nbgrader_setup()
    root = os.path.realpath(root)
    names = find_assignments(root, assignments)
    scratch = tempfile.mkdtemp(prefix="attn-release-")
    try:
        with quiet_logs():
            conv = converter(GenerateAssignment, scratch, f"sqlite:///{scratch}/gradebook.db", "")
            conv.coursedir.root = root
            conv.coursedir.source_directory = "solutions"
            conv.coursedir.release_directory = os.path.relpath(out, root) if out else "exercises"
            for a in names:
                conv.coursedir.assignment_id = a
                conv.start()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if lang != "both":
        released = os.path.join(root, out if out else "exercises")
        for a in names:
            for path in glob.glob(os.path.join(released, a, "*.ipynb")):
                nbformat.write(one_language(nbformat.read(path, as_version=4), lang), path)
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="regenerate exercises/ from solutions/")
    p.add_argument("--course", default=".")
    p.add_argument("--out", help="release folder (default: <course>/exercises)")
    p.add_argument("--lang", default="both", choices=("both", "en", "zh_CN"),
                   help="text cells in both languages (default), English only or Chinese only")
    args = p.parse_args(argv)
    names = release(args.course, out=args.out, lang=args.lang)
    print(f"released {len(names)} assignments ({args.lang}): {', '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
