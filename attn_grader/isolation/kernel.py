"""A grading kernel, started inside the sandbox (:mod:`attn_grader.isolation.sandbox`) by the kernelspec's launcher.

    python -I -m attn_grader.isolation.kernel -f CONNECTION_FILE

The sandbox is the boundary.  This adds a second layer that only *watches*: an audit hook appends to
``.attn-audit`` in the working folder every attempt to open a path outside what the sandbox offers,
to write, delete or rename outside its own folder, to start a process, to open a socket or to send a
signal, and the grader turns the lines into flags.
The student's code can switch the hook off (then there is no flag, and still nothing to reach).
The kernel's own output (banner, a flood) goes to /dev/null, never to the grader.
"""

from __future__ import annotations

import os
import sys

AUDIT_FILE = ".attn-audit"
WATCHED = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
           "os.killpg", "socket.connect", "socket.bind")
CHANGES = ("os.remove", "os.rmdir", "os.rename", "os.chmod", "os.chown", "os.symlink", "os.link", "shutil.rmtree")
PACKAGES = ("attn_ref", "attn_grader")  # ours, which the grader mounts wherever the kernel imports them from


def package_dirs() -> list[str]:
    """Where this kernel imports our packages from (the sandbox mounts exactly these; an editable
    finder, a path entry or site-packages, as this environment resolves them)."""
    import importlib.util

    dirs = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None:
            dirs += list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
    return sorted({os.path.abspath(d) for d in dirs})


def allowed_roots(packages: list[str] | None = None) -> list[str]:
    """Where the kernel may read: the system, the Python installation, its own folder, our packages
    (not the folder that holds them: a course's checkout holds its solutions too) and the entries of
    ``sys.path`` other than such a folder."""
    packages = package_dirs() if packages is None else packages
    holders = {os.path.dirname(p) for p in packages}
    roots = {os.getcwd(), "/tmp", "/usr", "/etc", "/dev", "/proc/self", "/proc/thread-self", "/sys",
             sys.prefix, sys.base_prefix, *packages}
    roots |= {p for p in sys.path if p and os.path.isdir(p) and os.path.abspath(p) not in holders}
    # /proc/self resolves to /proc/<pid>: keep the names too (torch reads /proc/self/maps on import).
    return sorted({os.path.realpath(r) for r in roots} | {"/proc/self", "/proc/thread-self"})


def install_watch(log_path: str) -> None:
    """Append to ``log_path`` what the kernel tries beyond the sandbox (once the kernel has started)."""
    packages = package_dirs()
    allowed = allowed_roots(packages)
    roots = tuple(r.rstrip("/") + "/" for r in allowed)
    own = tuple(os.path.realpath(r).rstrip("/") + "/" for r in (os.getcwd(), "/tmp"))  # where it may write
    exists, dirname, me = os.path.exists, os.path.dirname, os.getpid()
    here = os.path.realpath(os.getcwd()).rstrip("/") + "/"
    # Under /tmp (the sandbox's own, nearly empty) the sandbox mounts what it offers (the kernel's folder,
    # our packages or the environment when they live in a /tmp/...) onto empty stand-ins for the folders
    # that hold them outside: a path inside one of those mounts is offered (a missing __pycache__ of a
    # fresh clone included), a path among the stand-ins that is in none names a file of the machine outside.
    offered = tuple(r + "/" for r in (here.rstrip("/"), *(os.path.realpath(p) for p in allowed))
                    if r.startswith("/tmp/"))
    stand_ins = tuple(sorted({"/".join(r.split("/")[:k]) + "/" for r in offered
                              for k in range(3, len(r.split("/")) - 1)}))
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the kernel's life
    seen: set[str] = set()
    abspath, fspath = os.path.abspath, os.fspath

    def note(line: str) -> None:
        if line not in seen and len(seen) < 50:
            seen.add(line)
            log.write(line.replace("\n", " ")[:300] + "\n")

    def outside(target, roots) -> str | None:
        if target is None or isinstance(target, int):
            return None
        try:
            path = abspath(fspath(target))
        except Exception:  # noqa: BLE001
            return None
        if not (path + "/").startswith(roots):
            return path
        if not path.startswith("/tmp/"):
            return None
        if (path + "/").startswith(offered):
            # Offered, to read; a write there is one into our packages (read-only), not its own folder.
            return path if roots is own and not (path + "/").startswith(here) else None
        if (path + "/").startswith(stand_ins):
            return path
        # A path whose folder is missing names a file of the machine outside, say a course in /tmp/...
        # (IPython's own cell files, /tmp/ipykernel_<pid>/..., are looked up before they exist.)
        missing = not path.startswith("/tmp/ipykernel_") and not exists(dirname(path))
        return path if missing else None

    def hook(event, args):
        if event == "open" and args:
            writing = (isinstance(args[1], str) and any(c in args[1] for c in "wax+")) or \
                (len(args) > 2 and isinstance(args[2], int) and args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            path = outside(args[0], own if writing else roots)
            if path:
                note(f"{'write' if writing else 'open'} {path}")
        elif event.startswith(CHANGES) and args:
            path = outside(args[0], own)
            if path:
                note(f"{event} {path}")
        elif event == "os.kill" and args and args[0] != me:  # ipykernel interrupts itself with os.kill
            note(f"os.kill {args[0]}")
        elif event.startswith(WATCHED):
            note(event)

    sys.addaudithook(hook)


def main(argv: list[str]) -> None:
    os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(argv)  # the kernel's own start-up (it runs a subprocess or two) is not watched
    install_watch(os.path.join(os.getcwd(), AUDIT_FILE))
    app.start()


if __name__ == "__main__":
    main(sys.argv[1:])
