"""Reading what students submitted, and writing what the grader keeps, without trusting either side.

Every submitted byte is hostile: a "file" may be a symbolic link (to the solution notebook, to
``/etc/shadow``), a FIFO (a read that never returns), a device, or gigabytes.  :func:`read_regular`
opens with ``O_NOFOLLOW | O_NONBLOCK`` (no link is followed, opening a FIFO does not wait), accepts
only a regular file and reads at most ``cap`` bytes.  The error says *what* was refused, never what
the file holds.  :func:`write_atomic` writes the grader's own files so that a crash leaves the old
file or the new one, never half of one.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile


class Refused(Exception):
    """A path the grader will not read; ``str()`` says why in words (no content of the file)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str, *, dir_fd: int | None = None, one_name: bool = False) -> int:
    """A descriptor of the regular file ``path``, opened without following a link or waiting on a FIFO.

    Raises FileNotFoundError, or :class:`Refused` for a link, FIFO, socket, device or folder, and with
    ``one_name`` for a file with more than one name (a hard link: to ``solutions/…ipynb``, to another
    student's notebook; an extracted archive can make one): its content is not the submitter's own.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        try:
            mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            raise Refused(f"unreadable ({exc.strerror})") from None
        raise Refused(_kind(mode)) from None
    st = os.fstat(fd)
    why = _kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else \
        f"a hard link ({st.st_nlink} names for one file: submit a copy of your own)" \
        if one_name and st.st_nlink > 1 else None
    if why:
        os.close(fd)
        raise Refused(why)
    return fd


def read_regular(path: str, cap: int, *, dir_fd: int | None = None, missing_ok: bool = True,
                 one_name: bool = False) -> bytes | None:
    """The bytes of the regular file ``path`` (at most ``cap``); None if it does not exist (``missing_ok``).

    Raises :class:`Refused` for a link, FIFO, socket, device or folder, or a file larger than ``cap``
    (and with ``one_name``, a hard link: :func:`open_regular`).
    """
    try:
        fd = open_regular(path, dir_fd=dir_fd, one_name=one_name)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise Refused("missing") from None
    try:
        st = os.fstat(fd)
        if st.st_size > cap:
            raise Refused(f"larger than {cap} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise Refused(f"larger than {cap} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def list_folder(path: str | int) -> list[tuple[str, str]]:
    """``[(name, kind)]`` of a real folder (not a link to one; or an open folder's descriptor),
    kind in {"file", "folder", <what else it is>}."""
    fd = os.dup(path) if isinstance(path, int) else \
        os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        out = []
        with os.scandir(fd) as it:
            for entry in it:
                mode = entry.stat(follow_symlinks=False).st_mode
                kind = "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else _kind(mode)
                out.append((entry.name, kind))
        return sorted(out)
    finally:
        os.close(fd)


def write_atomic(path: str, data: str | bytes, mode: int = 0o644) -> None:
    """Write ``path`` through a temporary file in the same folder and one rename."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            # errors="replace": a lone surrogate that got past clean_text costs a '?', never the run (issue 40)
            f.write(data.encode("utf-8", errors="replace") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TEXT_CAP = 4000


def encodable(text: str) -> str:
    """``text`` with every code point UTF-8 cannot encode (a lone surrogate, which JSON's ``\\ud800`` gives
    back) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def clean_text(value, limit: int | None = TEXT_CAP) -> str:
    """A string that crossed from the sandbox, made safe once where it is read: encodable, no control
    character but newline and tab, at most ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub("", encodable(text[:limit] if limit is not None else text))


def clean_data(value, depth: int = 0):
    """JSON data from the sandbox with every string (keys too) passed through :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if depth > 32:
        return None
    if isinstance(value, dict):
        return {clean_text(k, 200): clean_data(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_data(v, depth + 1) for v in value]
    return value
