"""Where a sandboxed Python imports our packages and their dependencies from, so the sandbox can offer exactly
those folders, read-only (issue 31: a course under /tmp, the distribution installed from another folder, a
virtualenv elsewhere).  Used by the grader's side (:func:`attn_grader.run.course.kernel_mounts`); the sandbox
launcher itself (:mod:`.sandbox`, run as a script) imports nothing of ours."""

from __future__ import annotations

import json
import os
import sys

from .sandbox import python_roots

# Run by this Python in isolated mode (``-I``: no working folder, no PYTHONPATH, as a kernel starts): where
# it imports the named modules from, its path (site-packages and what .pth files add) and the folders of
# the packages setuptools' editable finders map.
_RESOLVE = """import importlib.util, json, sys
found = []
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    if spec is not None:
        found += list(spec.submodule_search_locations or []) or [spec.origin]
editable = [p for n, m in list(sys.modules.items()) if n.startswith("__editable__")
            for p in (getattr(m, "MAPPING", None) or {}).values() if isinstance(p, str)]
print(json.dumps({"modules": found, "path": sys.path, "editable": editable}))
"""


def _resolve(modules: tuple[str, ...]) -> dict:
    import subprocess

    try:
        out = subprocess.run([sys.executable, "-I", "-c", _RESOLVE, *modules], capture_output=True, text=True,
                             cwd="/", timeout=120, check=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        found = {}
    return {key: [p for p in found.get(key, []) if isinstance(p, str) and os.path.isabs(p) and os.path.exists(p)]
            for key in ("modules", "path", "editable")}


def import_mounts(modules: list[str] | tuple[str, ...], avoid: list[str] | tuple[str, ...] = (),
                  with_modules: bool = True) -> tuple[list[str], list[str]]:
    """What a sandboxed Python (this one, started isolated as a kernel is) imports ``modules`` and their
    dependencies from, beyond the Python installation and ``/usr`` (:func:`python_roots`, mounted anyway):
    the folders of ``modules`` wherever this environment resolves them (an editable finder, a path entry,
    site-packages), the packages of editable installs, and the path entries that ``.pth`` files add.
    Returns (folders to mount read-only at their own paths, folders of ``modules`` to hide: empty).

    A folder that holds one of ``modules`` and is no installation (a checkout on the path: its solutions
    lie beside the packages) or holds a folder of ``avoid`` (the course: its solutions, the grader's
    state) is not offered whole, nor a package of that checkout: only ``modules``.  With ``with_modules``
    False (a process that must not import them: the re-check), not those either: a folder that holds them
    is not mounted, and where they lie in what is mounted anyway (a plain install in the virtualenv) they
    are to be hidden.  Starts this Python once."""
    found = _resolve(tuple(modules))
    system = tuple(r + "/" for r in [*python_roots(), "/usr"])
    own = [os.path.abspath(p) for p in found["modules"]]
    checkouts = [os.path.realpath(os.path.dirname(p)) + "/" for p in own if not _installed_in(os.path.dirname(p))]
    held = [os.path.realpath(p) + "/" for p in [*avoid, *([] if with_modules else own)]] + checkouts
    mounts: list[str] = []
    kinds = [*(("own", p) for p in own), *(("editable", p) for p in found["editable"]),
             *(("path", p) for p in found["path"])]
    for kind, p in kinds:
        p, real = os.path.abspath(p), os.path.realpath(p) + "/"
        if real.startswith(system) or kind == "own" and not with_modules:
            continue
        if kind != "own" and (any(h.startswith(real) for h in held)  # holds the course or a checkout
                              or kind == "editable" and real.startswith(tuple(checkouts))):  # a checkout's
            continue
        if not any((p + "/").startswith(m + "/") for m in mounts):
            mounts = [m for m in mounts if not (m + "/").startswith(p + "/")] + [p]
    hidden = [] if with_modules else [p for p in own if (os.path.realpath(p) + "/").startswith(system)]
    return mounts, hidden


def _installed_in(folder: str) -> bool:
    """Whether ``folder`` is where packages are installed (it holds a distribution's ``.dist-info``)."""
    try:
        return any(name.endswith(".dist-info") for name in os.listdir(folder))
    except OSError:
        return False
