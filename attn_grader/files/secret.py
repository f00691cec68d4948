"""The course's grading secret: the re-check's inputs are drawn from it, so no submission can know them.

It lives in ``<course>/.grader/secret`` (mode 0600, made on the first ``make grade``), where no sandbox
looks.  The same secret gives the same inputs, so grading a class twice gives the same grades; an
instructor who suspects it leaked deletes the file and regrades.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from .safeio import read_regular


def state_dir(root: str) -> str:
    path = os.path.join(root, ".grader")
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def course_secret(root: str) -> bytes:
    path = os.path.join(state_dir(root), "secret")
    data = read_regular(path, 1024)
    if data is None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32).hex().encode())
        data = read_regular(path, 1024)
    return data.strip()


def seed_for(secret: bytes, key: str) -> int:
    return int.from_bytes(hmac.new(secret, key.encode(), hashlib.sha256).digest()[:8], "little")
