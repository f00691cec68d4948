"""The grading kernel's launcher: limits, an unprivileged user and an audit hook, then ipykernel.

The grader's kernelspec (written into the scratch course by :mod:`attn_grader.autograde`) runs::

    python -m attn_grader.kernel_launcher --policy <policy.json> -f <connection_file> [ipykernel args]

``policy.json`` (written by the grader) gives:

* ``rlimit_as``: bytes of address space (``RLIMIT_AS``); a huge allocation raises MemoryError;
* ``rlimit_cpu``: CPU seconds; ``rlimit_fsize``: largest file the kernel may write;
* ``uid``/``gid``: when the grader runs as root, the kernel drops to this unprivileged user, so it
  cannot write the gradebook, grades.csv or the repository (and every process it starts can be
  found by its uid and killed);
* ``home``: HOME, IPYTHONDIR and MPLCONFIGDIR of the kernel (a scratch folder);
* ``token``: put into the environment (``ATTN_GRADING_TOKEN``): leftover processes are found by it;
* ``deny``: paths (instructor files: solutions/, gradebook.db, grades.csv, ...) that the kernel may
  neither read nor write; ``deny_write``: folders it may not write into; ``log``: where denied
  attempts are written (the grader reports them as flags).

The audit hook stops Python's ``open``; it cannot stop a program the kernel starts (``cat``).  So,
where the launcher may (root, as in CI), the kernel also gets a mount namespace of its own
(:func:`isolate_mounts`): every denied path is covered by an empty, unreadable tmpfs (folders) or
``/dev/null`` (files), and the ``deny_write`` folders are remounted read-only.  Every process the
kernel starts inherits that view; the grader's own view is unchanged.

jupyter_client starts the kernel in its own session, so the grader can kill its process group.
"""

from __future__ import annotations

import json
import os
import resource
import sys


def _within(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def install_audit_hook(deny: list[str], deny_write: list[str], log=None) -> None:
    """Refuse opening a denied path (read or write) and writing under deny_write; log each refusal to ``log``."""
    deny = [os.path.realpath(p) for p in deny]
    deny_write = [os.path.realpath(p) for p in deny_write]
    realpath, fspath = os.path.realpath, os.fspath

    def hook(event, args):
        if event != "open" or not args or args[0] is None or isinstance(args[0], int):
            return
        try:
            path = realpath(fspath(args[0]))
        except Exception:  # noqa: BLE001
            return
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        writing = any(c in (mode or "") for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if _within(path, deny) or (writing and _within(path, deny_write)):
            what = "write" if writing else "read"
            if log is not None:
                log.write(json.dumps({"event": what, "path": path}) + "\n")
            raise PermissionError(f"grading: {what} access to {path} is not allowed")

    sys.addaudithook(hook)


CLONE_NEWNS = 0x00020000


def isolate_mounts(deny: list[str], deny_write: list[str], keep: list[str]) -> bool:
    """Enter a private mount namespace hiding ``deny`` and making ``deny_write`` read-only.

    ``keep``: paths the kernel needs (its cwd, home, connection file): a deny or read-only path that
    contains one of them is left alone.  Returns False (and changes nothing) where unshare is not allowed.
    """
    import ctypes
    import subprocess

    if os.geteuid() != 0 or not os.path.exists("/bin/mount"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return False

    def mount(*args: str) -> None:
        subprocess.run(["/bin/mount", *args], check=True, capture_output=True)

    def needed(path: str) -> bool:
        return any(k == path or k.startswith(path.rstrip("/") + "/") for k in keep)

    mount("--make-rprivate", "/")  # nothing below propagates back to the grader
    for path in dict.fromkeys(os.path.realpath(p) for p in deny_write):
        if os.path.isdir(path) and not needed(path):
            mount("--bind", path, path)
            mount("-o", "remount,bind,ro", path)
    for path in dict.fromkeys(os.path.realpath(p) for p in deny):
        if needed(path):
            continue
        if os.path.isdir(path):
            mount("-t", "tmpfs", "-o", "size=4k,mode=000", "none", path)
        elif os.path.isfile(path):
            mount("--bind", "/dev/null", path)
    return True


def apply_limits(policy: dict) -> None:
    for name, key in (("RLIMIT_AS", "rlimit_as"), ("RLIMIT_CPU", "rlimit_cpu"), ("RLIMIT_FSIZE", "rlimit_fsize")):
        value = policy.get(key)
        if value:
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))


def drop_privileges(policy: dict, connection_file: str | None) -> None:
    uid, gid = policy.get("uid"), policy.get("gid")
    if uid is None or os.geteuid() != 0:
        return
    home = policy.get("home")
    for path in (home, connection_file):
        if path and os.path.exists(path):
            os.chown(path, uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def main(argv: list[str]) -> None:
    policy_path = argv[argv.index("--policy") + 1]
    rest = [a for i, a in enumerate(argv) if a != "--policy" and (i == 0 or argv[i - 1] != "--policy")]
    with open(policy_path) as f:
        policy = json.load(f)
    connection_file = rest[rest.index("-f") + 1] if "-f" in rest else None
    home = policy.get("home")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
           "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "ATTN_GRADING_TOKEN": policy.get("token", ""), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if home:
        env.update(HOME=home, IPYTHONDIR=os.path.join(home, ".ipython"), MPLCONFIGDIR=os.path.join(home, ".mpl"))
    os.environ.clear()
    os.environ.update(env)
    log = open(policy["log"], "a", buffering=1) if policy.get("log") else None  # noqa: SIM115 - opened before the drop
    keep = [os.path.realpath(p) for p in (os.getcwd(), home, connection_file, policy.get("log"), policy_path) if p]
    isolate_mounts(policy.get("deny", []), policy.get("deny_write", []), keep)
    drop_privileges(policy, connection_file)
    apply_limits(policy)
    install_audit_hook(policy.get("deny", []), policy.get("deny_write", []), log)
    devnull = os.open(os.devnull, os.O_WRONLY)  # the kernel's own banner and a flood must not reach the grader
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.argv = ["ipykernel_launcher", *rest]
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance()


if __name__ == "__main__":
    main(sys.argv[1:])
