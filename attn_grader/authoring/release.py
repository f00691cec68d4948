"""``make release``: regenerate exercises/ from solutions/ for every assignment, in one nbgrader process.

    python -m attn_grader.authoring.release [--course DIR] [--out DIR] [--lang both|en|zh_CN]

``--lang`` (``make release LANG=...``): text cells in both languages (the committed exercises/), in English
only, or in Chinese only (:class:`attn_grader.authoring.bilingual.OneLanguage`); the code cells, and so the
grading, are the same in all three.  The choice is recorded in the course's nbgrader_config.py
(``c.OneLanguage.language``), so ``nbgrader generate_assignment --force`` and a later ``make release``
without ``LANG`` release in the same language; without ``--lang``, the recorded one.

Uses nbgrader's GenerateAssignment with the course's settings (nbgrader_config.py) and a scratch
gradebook, so the course's gradebook.db is not touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from ..run.course import converter, quiet_logs
from ..run.discover import find_assignments
from ..run.patches import nbgrader_setup


def release(root: str, assignments: list[str] | None = None, out: str | None = None,
            lang: str | None = None) -> list[str]:
    """Generate every assignment of ``root``/solutions into ``out`` (default ``root``/exercises), its
    text cells in ``lang`` ("both", "en" or "zh_CN"; default: the one the course's config records)."""
    from nbgrader.converters import GenerateAssignment

    from .bilingual import LANGUAGES, recorded_language

    lang = lang or recorded_language(root)
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
            conv.config.OneLanguage.language = lang  # the preprocessors, made with conv as parent, read it
            for a in names:
                conv.coursedir.assignment_id = a
                conv.start()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="regenerate exercises/ from solutions/")
    p.add_argument("--course", default=".")
    p.add_argument("--out", help="release folder (default: <course>/exercises)")
    p.add_argument("--lang", choices=("both", "en", "zh_CN"),
                   help="text cells in both languages, English only or Chinese only (recorded in the course's "
                        "nbgrader_config.py when releasing into exercises/; default: the recorded one)")
    args = p.parse_args(argv)
    from .bilingual import record_language, recorded_language

    if args.lang and not args.out:
        record_language(args.course, args.lang)
    lang = args.lang or recorded_language(args.course)
    names = release(args.course, out=args.out, lang=lang)
    print(f"released {len(names)} assignments ({lang}): {', '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
