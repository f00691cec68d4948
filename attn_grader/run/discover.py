"""Step 1 of grading: find the assignments and the submissions, and read each submission once.

Everything under ``submitted/`` is hostile.  Folders are walked by file descriptor with
``O_NOFOLLOW`` (a student folder or an assignment folder that is a symbolic link is not followed),
only the expected notebook is read (a regular file, size-capped, never a FIFO or a device: see
:mod:`attn_grader.files.safeio`), and the bytes are kept in memory: no kernel ever sees ``submitted/``.
Student folder names may be anything a file system allows (``*``, ``.x``, ``a[1]``, a newline, ``=2+3``):
nbgrader gets a safe internal id instead (:attr:`Submitted.sid`), the instructor's files keep the real name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ..files.nbstream import kept_notebook
from ..files.safeio import Refused, list_folder, open_regular, read_regular

IGNORED_STUDENTS = {".ipynb_checkpoints", "__pycache__"}
NOTEBOOK_CAP = 1 << 30  # bytes of one submitted notebook (``--max-notebook-mb``)
CAP_HINT = "raise the limit with make grade ARGS='--max-notebook-mb N'"
# What ``nbgrader collect`` leaves beside the notebook (nbgrader.exchange.default.collect): expected, never
# flagged.  timestamp.txt is the submission's time (read, at most TIMESTAMP_CAP bytes, parsed strictly);
# submission_secret.txt is nbgrader's, never read.  Either one that is not a regular file is an extra entry.
TIMESTAMP, SECRET = "timestamp.txt", "submission_secret.txt"
NBGRADER_FILES = (TIMESTAMP, SECRET)
TIMESTAMP_CAP = 128
SECRET_CAP = 256
_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
                    r"(?: ?(Z|[+-]\d{2}:?\d{2}|[A-Z]{2,5}))?")


@dataclass
class Submitted:
    student: str
    assignment: str
    sid: str  # the id nbgrader sees: s00001, ...
    entries: list[tuple[str, str]] = field(default_factory=list)  # (name, kind) in the assignment folder
    notebook: bytes | None = None
    problem: str | None = None  # why nothing could be read
    timestamp: str | None = None  # timestamp.txt as UTC "YYYY-MM-DD HH:MM:SS.ffffff" (None: none, or not readable)
    timestamp_note: str | None = None  # why a timestamp.txt present gave no timestamp
    secret: str | None = None  # submission_secret.txt: nbgrader's key of the student's feedback in the exchange
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of the notebook read
    names: int = 1  # its hard links
    shares: list[str] = field(default_factory=list)  # other students whose notebook is the same file
    here: int = 1  # names of that file in its own assignment folder
    outside: int = 0  # names of that file outside every submission (a hard link elsewhere)


def parse_timestamp(raw: bytes) -> datetime | None:
    """nbgrader's timestamp (``2026-12-05 23:34:34.123456 UTC``, also ``…T…``, ``Z``, ``+01:00``) as a naive
    UTC datetime, as nbgrader's gradebook stores it; None for anything else (strict: one line, no text)."""
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    m = _STAMP.fullmatch(text)
    if not m:
        return None
    y, mo, d, h, mi, sec, frac, zone = m.groups()
    try:
        t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec), int((frac or "0").ljust(6, "0")))
    except ValueError:
        return None
    if zone and zone.isalpha() and zone not in ("UTC", "GMT", "Z"):  # a named zone (Exchange.timezone)
        from zoneinfo import ZoneInfo

        try:
            named = ZoneInfo(zone)
        except (ValueError, OSError, KeyError):  # an unknown name (ZoneInfoNotFoundError is a KeyError)
            return None
        return (t.replace(tzinfo=named).astimezone(UTC)).replace(tzinfo=None)
    if zone and zone not in ("UTC", "GMT", "Z"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        if int(digits[:2]) > 23 or int(digits[2:]) > 59:
            return None
        t = t - sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return t


def _read_secret(s: Submitted, afd: int) -> None:
    """nbgrader's secret (a hex digest it wrote): kept only when it is one, to go beside the feedback."""
    try:
        raw = read_regular(SECRET, SECRET_CAP + 1, dir_fd=afd) or b""
    except (Refused, OSError):
        return
    text = raw.decode("ascii", "replace").strip()
    if 0 < len(text) <= SECRET_CAP and all(ch in "0123456789abcdefABCDEF" for ch in text):
        s.secret = text


def _read_timestamp(s: Submitted, afd: int) -> None:
    try:
        raw = read_regular(TIMESTAMP, TIMESTAMP_CAP, dir_fd=afd)
    except (Refused, OSError):  # larger than a timestamp, or gone meanwhile
        raw = b""
    if raw is None:
        return
    t = parse_timestamp(raw)
    if t is None:
        s.timestamp_note = f"{TIMESTAMP} is not a timestamp nbgrader writes: no timestamp (not late)"
    else:
        s.timestamp = t.isoformat(sep=" ", timespec="microseconds")


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
    mark_shared(root, out)
    for i, s in enumerate(sorted(out, key=lambda s: (s.assignment, s.student))):
        s.sid = f"s{i + 1:05d}"
    return sorted(out, key=lambda s: (s.student, s.assignment))


def _read_one(student: str, a: str, sfd: int, name: str, cap: int) -> Submitted:
    """One submission, read under a guard: whatever the file holds (nesting, bulk, a parser's
    RecursionError or MemoryError, anything) costs this submission a reason, never the run."""
    s = Submitted(student, a, "")
    try:
        afd = _open_dir(a, dir_fd=sfd)
    except OSError as exc:
        s.problem = f"assignment folder unreadable ({exc.strerror})"
        return s
    try:
        s.entries = list_folder(afd)
        kinds = dict(s.entries)
        if kinds.get(TIMESTAMP) == "file":
            _read_timestamp(s, afd)
        if kinds.get(SECRET) == "file":
            _read_secret(s, afd)
        s.entries = [(e, k) for e, k in s.entries if not (e in NBGRADER_FILES and k == "file")]
        if name in kinds:
            s.notebook = _read_guarded(s, name, cap, afd)
    except Exception as exc:  # noqa: BLE001 - the folder changed while read, or anything else: this row only
        s.notebook, s.problem = None, f"{name} could not be read ({type(exc).__name__})"
    finally:
        os.close(afd)
    return s


def _read_guarded(s: Submitted, name: str, cap: int, afd: int) -> bytes | None:
    try:
        fd = open_regular(name, dir_fd=afd)
        st = os.fstat(fd)
        s.inode, s.names = (st.st_dev, st.st_ino), st.st_nlink
        if st.st_nlink > 1:  # its names in this folder (a backup.ipynb linked to it is the student's own)
            s.here = sum(1 for e, k in s.entries[:1000] if k == "file" and _same(e, afd, st))
        return _read_fd(fd, cap)
    except FileNotFoundError:
        s.problem = f"{name} vanished while read"
    except Refused as why:
        s.problem = f"{name} is {why}" if str(why).startswith(("larger", "unread", "too large", "nested", "nbformat")) \
            else f"{name} is {why} (not read)"
    except (RecursionError, MemoryError, Exception) as exc:  # noqa: BLE001
        s.problem = f"{name} could not be read ({type(exc).__name__})"
    return None


def _same(entry: str, afd: int, st: os.stat_result) -> bool:
    try:
        other = os.stat(entry, dir_fd=afd, follow_symlinks=False)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def read_notebook(name: str, cap: int, *, dir_fd: int | None = None) -> bytes:
    """A submitted notebook reduced to what grading reads (:func:`attn_grader.files.nbstream.kept_notebook`:
    sources, cell types, nbgrader's metadata; no outputs, no other metadata), read as a stream so that
    memory stays near the size of the notebook's sources whatever the file holds.  Raises
    :class:`Refused`: not a regular file, larger than ``cap`` (saying how to raise it), not JSON, nested
    deeper than a notebook, nbformat 3, a cell too large."""
    return _read_fd(open_regular(name, dir_fd=dir_fd), cap)


def _read_fd(fd: int, cap: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        if os.fstat(fd).st_size > cap:
            raise Refused(f"larger than {cap} bytes ({CAP_HINT})")
        return kept_notebook(_Capped(f, cap))


def mark_shared(root: str, subs: list[Submitted]) -> None:
    """Submissions that are one file (a hard link, the same inode): each is graded and flagged for a look by
    hand, naming the others; the original is never refused (an attacker who links to a classmate's
    notebook must not make it ungradable).  A link to the instructor's solution is refused."""
    solutions = set()
    for a in {s.assignment for s in subs}:
        try:
            st = os.stat(os.path.join(root, "solutions", a, a + ".ipynb"))
            solutions.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    groups: dict[tuple, list[Submitted]] = {}
    for s in subs:
        if s.inode is not None and s.notebook is not None:
            groups.setdefault(s.inode, []).append(s)
    for inode, group in groups.items():
        if inode in solutions:
            for s in group:
                s.notebook, s.problem = None, "a hard link to the instructor's solution notebook (not read)"
            continue
        found = sum(s.here for s in group)
        for s in group:
            s.shares = sorted({o.student for o in group if o.student != s.student})
            s.outside = max(0, s.names - found)


class _Capped:
    """A file read by the parser that refuses to give more than ``cap`` bytes (a file that grows while read)."""

    def __init__(self, f, cap: int):
        self.f, self.left = f, cap

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n if n >= 0 else 1 << 20)
        self.left -= len(data)
        if self.left < 0:
            raise Refused("larger than its size when opened")
        return data
