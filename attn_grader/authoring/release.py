"""``make release``: regenerate exercises/ from solutions/ for every assignment, in one nbgrader process.

    python -m attn_grader.authoring.release [--course DIR] [--db PATH]

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


def release(root: str, assignments: list[str] | None = None, out: str | None = None) -> list[str]:
    """Generate every assignment of ``root``/solutions into ``out`` (default ``root``/exercises)."""
    from nbgrader.converters import GenerateAssignment

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
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="regenerate exercises/ from solutions/")
    p.add_argument("--course", default=".")
    p.add_argument("--out", help="release folder (default: <course>/exercises)")
    args = p.parse_args(argv)
    names = release(args.course, out=args.out)
    print(f"released {len(names)} assignments: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
