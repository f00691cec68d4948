"""The one sandbox every student kernel and every re-check runs in: bubblewrap, as an unprivileged user.

The boundary is the kernel of the OS, not a list of forbidden names.  A sandboxed process gets

* its own user, pid, ipc, uts, cgroup and network namespaces (``bwrap --unshare-all``): no network at
  all (not even this machine's loopback services), no view of any process outside, ``--die-with-parent``
  (nothing outlives the grader) and ``--disable-userns`` (no nested namespaces);
* a file system that holds only the system libraries (``/usr``), the Python installation and the
  virtualenv (read-only), the paths a :class:`Spec` names read-only (for a kernel, the ``attn_ref`` and
  ``attn_grader`` packages; for a re-check, the harness file alone), one writable working folder (that
  submission's, a size-limited tmpfs mounted by the grader) and a small private ``/tmp``;
* an unprivileged uid of its own (a fresh random one per sandbox, so no two sandboxes share files or
  signals), no capabilities, a clean environment and resource limits (address space, CPU time, file
  size, processes).

bubblewrap needs either unprivileged user namespaces or root.  As root (CI, an instructor's grading
box), the Python installation may live where an unprivileged user cannot look (``/root/.pyenv``, mode
0700): each source is bound onto a ``0755`` staging tmpfs on ``/mnt`` in a mount namespace nobody else
sees, the launcher drops to the sandbox uid and only then runs bwrap, which binds the staged copies
back onto their original paths.  The grader stages once per run in its own mount namespace
(:func:`stage`; the sandboxes' working folders then live in ``/mnt/boxes``); a launcher started
anywhere else stages for itself.

This file uses the standard library only (ctypes only where it mounts): the grader runs it as a script
(``python -I -S sandbox.py``) so that a sandbox starts in about 25 ms more than a bare process
(``make bench``, "grading sandbox").

    python -I -S sandbox.py run SPEC_JSON -- COMMAND...          # run COMMAND in the sandbox
    python -I -S sandbox.py kernel SPEC_JSON -f CONNECTION_FILE  # a kernelspec's argv: a kernel
"""

from __future__ import annotations

import json
import os
import sys

BWRAP = next((p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap") if os.path.exists(p)),
             "/usr/bin/bwrap")
HERE = os.path.abspath(__file__)
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 0x1000, 0x4000, 0x40000, 2
UID_RANGE = (1 << 20, 1 << 30)  # far above any account of this machine
MOUNTS_ENV = "ATTN_GRADER_MOUNTS"  # "1": this process is in the grader's private mount namespace
STAGE = "/mnt"  # mount point of the staging tmpfs, in the grader's (or a launcher's) own mount namespace only
STAGED_ENV = "ATTN_GRADER_STAGED"  # JSON {path: its staged copy, "boxes": folder}: staged once per grader run
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
       "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "PYDEVD_DISABLE_FILE_VALIDATION": "1", "HOME": "/tmp/home", "IPYTHONDIR": "/tmp/home/.ipython",
       "MPLCONFIGDIR": "/tmp/home/.mpl", "TMPDIR": "/tmp"}


def _libc():
    import ctypes  # only where something is mounted: the import costs a launcher ~10 ms

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(libc.mount(src and src.encode(), dst.encode(), fstype and fstype.encode(), flags,
                      data and data.encode()), f"mount {dst}")


def python_roots() -> list[str]:
    """The Python installation and the virtualenv this grader runs in (read-only in every sandbox)."""
    roots = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    if os.path.exists(os.path.join(venv, "pyvenv.cfg")):  # under ``-S`` sys.prefix is the base's
        roots.add(venv)
    return sorted(r for r in roots if not r.startswith("/usr/"))


def mount_tmpfs(path: str, size: int, uid: int | None = None) -> bool:
    """A size-limited tmpfs on ``path``, only in the grader's own mount namespace (as root; see
    attn_grader.run.autograde); False elsewhere: the folder stays a plain folder."""
    if os.geteuid() != 0 or os.environ.get(MOUNTS_ENV) != "1":
        return False
    opts = f"size={int(size)},mode=0700" + (f",uid={uid},gid={uid}" if uid is not None else "")
    _mount(_libc(), "attn-grader", path, "tmpfs", 0, opts)
    return True


def unmount(path: str) -> None:
    if os.geteuid() == 0 and os.environ.get(MOUNTS_ENV) == "1":
        _libc().umount2(path.encode(), MNT_DETACH)


def stage(paths: list[str]) -> dict[str, str] | None:
    """Stage ``paths`` (with the Python installation) once for the whole grader run (root, in the
    grader's own mount namespace): a ``0755`` tmpfs on ``/mnt`` with a bind of each at ``/mnt/ro/N``
    and ``/mnt/boxes`` (``0711``) for the sandboxes' working folders.  Every launcher started by this
    process then drops to its uid and runs bwrap at once: no mount namespace and no mounts of its own.
    Sets and returns the map (None, and nothing done, where that cannot be: not root, not private,
    no ``/mnt``, or a needed path under it)."""
    if os.geteuid() != 0 or os.environ.get(MOUNTS_ENV) != "1" or not os.path.isdir(STAGE):
        return None
    wanted = list(dict.fromkeys([*python_roots(), *(os.path.realpath(p) for p in paths)]))
    if any((p + "/").startswith(STAGE + "/") for p in wanted):
        return None
    staged = {"boxes": f"{STAGE}/boxes", **_stage_onto_tmpfs(wanted, "ro", "1m")}
    os.mkdir(staged["boxes"], 0o711)
    os.environ[STAGED_ENV] = json.dumps(staged)
    return staged


def _stage_onto_tmpfs(paths: list[str], sub: str, size: str) -> dict[str, str]:
    """Mount a ``0755`` tmpfs on ``STAGE`` (in this process's own mount namespace) and bind each of
    ``paths`` onto ``STAGE/sub/N``; return {path: its staged copy}.  The paths are opened first, so a
    path under ``STAGE`` itself is still found."""
    libc = _libc()
    fds = [os.open(p, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC) for p in paths]
    _mount(libc, "attn-stage", STAGE, "tmpfs", 0, f"mode=0755,size={size}")
    os.mkdir(f"{STAGE}/{sub}", 0o755)
    staged: dict[str, str] = {}
    for i, (path, fd) in enumerate(zip(paths, fds, strict=True)):
        dst = f"{STAGE}/{sub}/{i}"
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.mkdir(dst)
        else:
            open(dst, "w").close()  # noqa: SIM115 - a file to bind a file onto
        _mount(libc, f"/proc/self/fd/{fd}", dst, None, MS_BIND | MS_REC)
        os.close(fd)
        staged[path] = dst
    return staged


def boxes_folder(default: str) -> str:
    """Where the sandboxes' working folders go: the staged ``/mnt/boxes`` of :func:`stage`, else ``default``."""
    staged = os.environ.get(STAGED_ENV)
    return json.loads(staged)["boxes"] if staged else default


def unstage() -> None:
    if os.environ.pop(STAGED_ENV, None):
        unmount(STAGE)


def fresh_uid() -> int:
    lo, hi = UID_RANGE
    return lo + int.from_bytes(os.urandom(4), "little") % (hi - lo)


def _bwrap_args(spec: dict, sources: dict[str, str]) -> list[str]:
    """bwrap's arguments; ``sources`` maps each path of the sandbox to where bwrap finds it."""
    uid = spec["uid"]
    args = [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--uid", str(uid), "--gid", str(uid), "--clearenv",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind-try", "/etc/localtime", "/etc/localtime",
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(int(spec.get("tmp_bytes", 64 << 20))), "--perms", "0700", "--tmpfs", "/tmp",
            "--size", str(int(spec.get("tmp_bytes", 64 << 20))), "--tmpfs", "/dev/shm"]
    for key, value in {**ENV, **spec.get("env", {})}.items():
        args += ["--setenv", key, str(value)]
    for dst in [*spec.get("ro", []), *spec.get("ro_files", {})]:
        args += ["--ro-bind", sources[dst], dst]
    for dst in spec.get("hide", []):  # an empty read-only folder over what must not be imported
        args += ["--perms", "0555", "--size", "4096", "--tmpfs", dst, "--remount-ro", dst]
    work = spec["work"]
    args += ["--bind", sources[work], work, "--chdir", work]
    # The root and /dev are tmpfs in host memory, uncapped, and an address-space limit does not count
    # their pages: a blind attack filled 10 GB there.  Read-only once every mount is made; the writable
    # places are the capped /tmp, /dev/shm and the working folder.
    return args + ["--remount-ro", "/dev", "--remount-ro", "/"]


def _limits(spec: dict) -> None:
    import resource

    for name, key in (("RLIMIT_AS", "memory"), ("RLIMIT_CPU", "cpu"), ("RLIMIT_FSIZE", "fsize"),
                      ("RLIMIT_NPROC", "nproc"), ("RLIMIT_CORE", "core")):
        value = spec.get(key, 0 if key == "core" else None)
        if value is not None:
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))


def enter(spec: dict, argv: list[str]) -> None:
    """Replace this process by ``argv`` in the sandbox ``spec`` (never returns).

    ``spec``: ``work`` (the writable folder, also the working directory), ``ro`` (folders bound
    read-only at their own paths), ``ro_files`` ({path in the sandbox: file outside}), ``hide`` (folders
    of those that the sandbox sees empty), ``uid``
    (default: a fresh one), ``env``, limits ``memory``/``cpu``/``fsize``/``nproc`` and ``tmp_bytes``.
    """
    spec = dict(spec)
    spec.setdefault("uid", fresh_uid())
    work = spec["work"]
    if spec.get("disabled"):  # --no-sandbox: the same command, limits and clean environment, no isolation
        os.chdir(work)
        _limits(spec)
        os.execve(argv[0], argv, {**ENV, **spec.get("env", {}), "HOME": work, "TMPDIR": work,
                                  "IPYTHONDIR": work + "/.ipython", "MPLCONFIGDIR": work + "/.mpl"})
    ro = list(dict.fromkeys([*python_roots(), *spec.get("ro", [])]))
    spec["ro"] = ro
    if os.geteuid() != 0:  # unprivileged bubblewrap: it binds the paths as this user sees them
        sources = {p: p for p in ro} | {work: work} | {d: s for d, s in spec.get("ro_files", {}).items()}
        _limits(spec)
        enter_memory_cgroup(spec)
        os.execve(BWRAP, [*_bwrap_args(spec, sources), "--", *argv], bwrap_environment())
    staged = json.loads(os.environ.get(STAGED_ENV) or "{}")
    files = spec.get("ro_files", {})
    if staged and all(p in staged for p in [*ro, *files.values()]) and \
            os.path.dirname(os.path.realpath(work)) == staged["boxes"]:
        # Staged once by the grader (:func:`stage`): nothing to mount here.
        sources = {p: staged[p] for p in ro} | {work: work} | {d: staged[s] for d, s in files.items()}
        _drop_and_exec(spec, sources, argv)
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing below reaches the grader's view
    copies = _stage_onto_tmpfs(list(dict.fromkeys([*ro, work, *files.values()])), "s", "64k")
    sources = {p: copies[p] for p in [*ro, work]} | {d: copies[s] for d, s in files.items()}
    _drop_and_exec(spec, sources, argv)


def _drop_and_exec(spec: dict, sources: dict[str, str], argv: list[str]) -> None:
    """Give the working folder to the sandbox's uid, drop to it and run bwrap (as root)."""
    uid, work = spec["uid"], spec["work"]
    os.chown(work, uid, uid)
    for name in os.listdir(work):  # the connection file the grader wrote, a re-check's job
        os.chown(os.path.join(work, name), uid, uid, follow_symlinks=False)
    args = _bwrap_args(spec, sources)
    _limits(spec)
    enter_memory_cgroup(spec)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execve(BWRAP, [*args, "--", *argv], bwrap_environment())


def bwrap_environment() -> dict[str, str]:
    """bwrap's own environment: nothing of the grader's.  bwrap is pid 1 of the sandbox under the
    sandbox's uid, so its environment is ``/proc/1/environ`` there (``--clearenv`` cleans only its child);
    the grader's (``MAKEFLAGS`` with make's command-line variables, a database URL, tokens) stays out."""
    return {"PATH": ENV["PATH"], "LANG": ENV["LANG"]}


CGROUP_PREFIX = "attn-box-"


def _own_memory_cgroup() -> str | None:
    """This process's memory cgroup folder: cgroup v1's ``memory`` hierarchy, else the v2 one."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return os.path.join("/sys/fs/cgroup/memory", path.lstrip("/"))
    for line in lines:
        if line.startswith("0::"):
            return os.path.join("/sys/fs/cgroup", line[3:].lstrip("/"))
    return None


def remove_idle_cgroups(parent: str | None = None) -> None:
    """Remove the memory cgroups of sandboxes whose processes are gone (the grader calls it at the end)."""
    parent = parent or _own_memory_cgroup()
    try:
        names = os.listdir(parent) if parent else []
    except OSError:
        return
    for name in names:
        owner = name[len(CGROUP_PREFIX):].split("-")[0]
        if name.startswith(CGROUP_PREFIX) and not os.path.exists(f"/proc/{owner}"):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass  # still in use


def enter_memory_cgroup(spec: dict) -> str | None:
    """Move this process (about to become the sandbox) into a memory cgroup of its own, capped at
    ``spec["memory"]`` bytes for every process of the sandbox together (a kernel and its forks, the
    pages they write to tmpfs); return its folder, or None where no cgroup can be made (not root, no
    delegated cgroup v2): the per-process address-space limit (:func:`_limits`) is then the only one.
    Empty cgroups left by earlier sandboxes (their processes are gone) are removed on the way."""
    limit = spec.get("memory")
    parent = _own_memory_cgroup()
    if not limit or parent is None or spec.get("cgroup") is False or not os.access(parent, os.W_OK):
        return None
    try:
        remove_idle_cgroups(parent)
        path = os.path.join(parent, f"{CGROUP_PREFIX}{os.getpid()}-{spec.get('uid', 0)}")
        os.mkdir(path)
        v1 = os.path.exists(os.path.join(path, "memory.limit_in_bytes"))
        for name, value in ((("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)) if v1
                            else (("memory.max", limit), ("memory.swap.max", 0))):
            try:
                with open(os.path.join(path, name), "w") as f:
                    f.write(str(int(value)))
            except OSError:
                if name in ("memory.limit_in_bytes", "memory.max"):
                    raise
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        return path
    except OSError:
        return None


def command(spec: dict, argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` in the sandbox ``spec``."""
    return [sys.executable, "-I", "-S", HERE, "run", json.dumps(spec), "--", *argv]


def kernel_argv(spec: dict) -> list[str]:
    """A kernelspec's argv: a grading kernel in the sandbox; its work folder is the connection file's."""
    return [sys.executable, "-I", "-S", HERE, "kernel", json.dumps(spec), "-f", "{connection_file}"]


PRIVATE_ENV = "ATTN_GRADER_PRIVATE_MOUNTS"  # "exec", then the pid of the grader in its own mount namespace


def private_mounts(module: str, argv: list[str]) -> None:
    """As root, run ``python -m module argv`` in a mount namespace of its own (re-executed under
    ``unshare``); call it before anything slow is imported, as the re-executed process imports it all."""
    import shutil

    if os.geteuid() != 0 or os.environ.get(PRIVATE_ENV) == str(os.getpid()) or not shutil.which("unshare"):
        return
    if os.environ.get(PRIVATE_ENV) == "exec":  # we are the re-executed process: record our pid
        os.environ[PRIVATE_ENV] = str(os.getpid())
        return
    os.environ[PRIVATE_ENV] = "exec"
    os.execv(shutil.which("unshare"), ["unshare", "--mount", "--propagation", "private",
                                      sys.executable, "-m", module, *argv])


def unusable() -> str | None:
    """Why no sandbox can run here (None: it can), with what to do about it."""
    if not sys.platform.startswith("linux"):
        return "the grading sandbox (bubblewrap) needs Linux"
    if not os.path.exists(BWRAP):
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap; make system-packages)"
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        try:
            r = subprocess.run(command({"work": work}, ["/bin/true"]), capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bubblewrap could not start ({type(exc).__name__})"
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        return (f"bubblewrap cannot make a sandbox here ({err[0][:200]}): run the grader as root or enable "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)")
    return None


def main(argv: list[str]) -> None:
    mode, spec = argv[0], json.loads(argv[1])
    if mode == "run":
        enter(spec, argv[argv.index("--") + 1:])
    elif mode == "kernel":
        connection_file = argv[argv.index("-f") + 1]
        spec["work"] = os.path.dirname(os.path.abspath(connection_file))
        enter(spec, [sys.executable, "-I", "-B", "-m", "attn_grader.isolation.kernel", "-f", connection_file])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
