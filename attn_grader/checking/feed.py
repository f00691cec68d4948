"""The streams of a re-check's job, fed through pipes from the grader (ps12's streaming tasks).

A streaming task's case holds a :class:`attn_grader.checking.harness.Blocks`: the whole arrays.  Pickled into
the job they would be in the sandboxed process, where an answer reaches them (the job is a local of the
harness's frame; a copy of the source is a second pass).  So :func:`piped` replaces each by a
:class:`~attn_grader.checking.harness.Piped` (its shapes and a file descriptor) and writes its blocks into a
pipe of its own, from a thread of the grader, outside the sandbox: the answer's process holds a block only
once it has read it, and what it has read is gone from the pipe.  An answer that reads a pipe itself (ahead
of its loop, or another case's) only empties it: that stream then ends early, and a call whose stream was
not read to its end is an error (:func:`attn_grader.checking.harness.call`).
"""

from __future__ import annotations

import contextlib
import os
import threading

from .harness import Blocks, Piped


def _write(fd: int, source: Blocks) -> None:
    try:
        for block in source.chunks():
            for a in block:
                view = memoryview(a).cast("B")
                while view:
                    view = view[os.write(fd, view):]
    except OSError:  # the sandbox ended (or the answer closed the pipe): nothing more to feed
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def piped(job: dict):
    """Replace every :class:`Blocks` in ``job["tasks"][*]["cases"]`` by a :class:`Piped` (new case lists:
    the caller's cases keep their sources for the references) and feed each through a pipe; yields the read
    ends, for the sandbox's process to inherit (``pass_fds``).  On exit (the process is gone), the read ends
    are closed, which ends the feeding threads."""
    reads, feeds, threads = [], [], []
    try:
        for task in job["tasks"]:
            cases = []
            for args in task["cases"]:
                new = []
                for a in args:
                    if isinstance(a, Blocks):
                        r, w = os.pipe()
                        reads.append(r)
                        feeds.append((w, a))
                        a = Piped(r, len(a.arrays[0]), a.size, [x.shape[1:] for x in a.arrays],
                                  [x.dtype.str for x in a.arrays], None)  # capped hard
                    new.append(a)
                cases.append(tuple(new))
            task["cases"] = cases
        while feeds:
            threads.append(threading.Thread(target=_write, args=feeds.pop(0), daemon=True, name="attn-stream"))
            threads[-1].start()
        yield reads
    finally:
        for w, _ in feeds:  # not started
            os.close(w)
        for r in reads:
            with contextlib.suppress(OSError):  # closed already where a stream was read in this process (tests)
                os.close(r)
        for t in threads:
            t.join(timeout=5)
