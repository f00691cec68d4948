"""Step 1 of grading: find the assignments and the submissions, and read each submission once.

Everything under ``submitted/`` is hostile.  Folders are walked by file descriptor with
``O_NOFOLLOW`` (a student folder or an assignment folder that is a symbolic link is not followed),
only the expected notebook is read (a regular file, size-capped, never a FIFO or a device: see
:mod:`.safeio`), and the bytes are kept in memory: no kernel ever sees ``submitted/``.  Student folder
names may be anything a file system allows (``*``, ``.x``, ``a[1]``, a newline, ``=2+3``): nbgrader
gets a safe internal id instead (:attr:`Submitted.sid`), the instructor's files keep the real name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .safeio import Refused, list_folder, read_regular

IGNORED_STUDENTS = {".ipynb_checkpoints", "__pycache__"}
NOTEBOOK_CAP = 20 << 20  # bytes of one submitted notebook


@dataclass
class Submitted:
    student: str
    assignment: str
    sid: str  # the id nbgrader sees: s00001, ...
    entries: list[tuple[str, str]] = field(default_factory=list)  # (name, kind) in the assignment folder
    notebook: bytes | None = None
    problem: str | None = None  # why nothing could be read


def find_assignments(root: str, only: list[str] | None = None) -> list[str]:
    src = os.path.join(root, "solutions")
    names = sorted(d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, d + ".ipynb"))) \
        if os.path.isdir(src) else []
    if only:
        missing = [a for a in only if a not in names]
        if missing:
            raise SystemExit(f"no assignment {', '.join(missing)} under {src}")
        names = [a for a in names if a in only]
    return names


def _open_dir(name: str, dir_fd: int | None = None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def find_submissions(root: str, assignments: list[str], notebooks: dict[str, str],
                     cap: int = NOTEBOOK_CAP) -> list[Submitted]:
    """Every ``submitted/<student>/<assignment>/`` of ``assignments``, read into memory.

    ``notebooks``: assignment -> the notebook file name it expects.
    """
    sub = os.path.join(root, "submitted")
    try:
        students = list_folder(sub)
    except (FileNotFoundError, NotADirectoryError):
        return []
    out: list[Submitted] = []
    for student, kind in students:
        if student in IGNORED_STUDENTS:
            continue
        if kind != "folder":
            for a in assignments:  # a student "folder" that is a link or a file: a row saying so
                out.append(Submitted(student, a, "", problem=f"the student folder is {kind} (not read)"))
            continue
        try:
            sfd = _open_dir(os.path.join(sub, student))
        except OSError as exc:
            out.extend(Submitted(student, a, "", problem=f"student folder unreadable ({exc.strerror})")
                       for a in assignments)
            continue
        try:
            entries = dict(list_folder(sfd))
            for a in assignments:
                if a not in entries:
                    continue
                if entries[a] != "folder":
                    out.append(Submitted(student, a, "", problem=f"the assignment folder is {entries[a]} (not read)"))
                    continue
                out.append(_read_one(student, a, sfd, notebooks[a], cap))
        finally:
            os.close(sfd)
    for i, s in enumerate(sorted(out, key=lambda s: (s.assignment, s.student))):
        s.sid = f"s{i + 1:05d}"
    return sorted(out, key=lambda s: (s.student, s.assignment))


def _read_one(student: str, a: str, sfd: int, name: str, cap: int) -> Submitted:
    s = Submitted(student, a, "")
    try:
        afd = _open_dir(a, dir_fd=sfd)
    except OSError as exc:
        s.problem = f"assignment folder unreadable ({exc.strerror})"
        return s
    try:
        s.entries = list_folder(afd)
        kinds = dict(s.entries)
        if name in kinds:
            try:
                s.notebook = read_regular(name, cap, dir_fd=afd)
            except Refused as why:
                s.problem = f"{name} is {why} (not read)" if not str(why).startswith(("larger", "unread")) \
                    else f"{name} is {why}"
    finally:
        os.close(afd)
    return s
