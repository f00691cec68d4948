"""The grader wherever the course and the packages live (issue 31): the demo class (``make grade-demo``'s eight
students, one nbgrader run per layout) graded

* on the usual layout (this checkout and its .venv): the reference grades;
* (a) as a fresh clone under /tmp: no ``__pycache__`` anywhere, PYTHONDONTWRITEBYTECODE unset as a
  student's machine has it, a space in the path; the environment's editable install points at the clone;
* (b) with the course in one folder (a checkout: the grader imports its packages from there) and the
  distribution installed from another, editable (pointing at the clone of (a)) and not (a copy in a venv of
  its own, made elsewhere): the kernels import those, which the sandbox must mount;

and each layout's grades.csv is the reference's, byte for byte: every honest student ``ok``, not flagged.
The venvs are made by the test (``python -m venv --without-pip``; the dependencies come from this
checkout's .venv through a ``.pth`` path entry, so that is a layout graded too; ``pip --python ...
install --no-deps``).
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time

import pytest

from attn_grader.isolation import mounts as mounts_module
from attn_grader.isolation import sandbox

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
COPIED = ("attn_ref", "attn_grader", "solutions", "exercises", "pyproject.toml", "nbgrader_config.py")
TIMES: dict[str, float] = {}



def _copy_project(dst: str) -> str:
    """The checkout's packages, course and build files, without a single .pyc (as ``git clone`` gives them)."""
    os.makedirs(dst)
    for name in COPIED:
        src = os.path.join(REPO, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, name), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(src, dst)
    return dst


def _venv(path: str, project: str, editable: bool) -> str:
    """A venv of its own with the distribution installed from ``project``; returns its python."""
    start = time.perf_counter()
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", path], check=True, capture_output=True)
    python = os.path.join(path, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                          capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "deps.pth"), "w") as f:  # the dependencies: this checkout's venv, a path entry
        f.write(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", *(["-e"] if editable else []), project],
                   check=True, capture_output=True, env={**os.environ, "PIP_NO_WARN_SCRIPT_LOCATION": "1"})
    TIMES[f"venv {'editable' if editable else 'plain'}"] = time.perf_counter() - start
    return python


def _grade_demo(layout: str, python: str, cwd: str, env: dict, *course) -> str:
    """``make grade-demo`` as ``cwd``'s Makefile runs it, with ``python``; returns the demo's grades.csv."""
    start = time.perf_counter()
    r = subprocess.run([python, "-m", "attn_grader.authoring.demo", "--jobs", "1", *course], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    root = course[1] if course else os.path.join(cwd, "_build", "grade-demo")
    TIMES[f"grade, {layout}"] = time.perf_counter() - start
    with open(os.path.join(root, "grades.csv")) as f:
        return f.read()


FRESH, EDITABLE, PLAIN = ("a: fresh clone under /tmp", "b: installed editable from another folder",
                          "b: installed (not editable) in a venv elsewhere")


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("where"))
    assert tmp.startswith("/tmp/"), "the fresh clone of (a) must live under /tmp"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    reference = os.path.join(tmp, "reference course")
    os.makedirs(os.path.join(reference, "solutions"))
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(reference, "solutions", A))
    grades = {"reference": _grade_demo("reference", sys.executable, REPO, os.environ, "--course", reference)}

    clone = _copy_project(os.path.join(tmp, "fresh clone"))
    edit = _venv(os.path.join(tmp, "venv editable"), clone, editable=True)
    assert not [d for d, _, _ in os.walk(clone) if d.endswith("__pycache__")]
    grades[FRESH] = _grade_demo(FRESH, edit, clone, env)

    course = _copy_project(os.path.join(tmp, "course"))
    grades[EDITABLE] = _grade_demo(EDITABLE, edit, course, os.environ)
    plain = _venv(os.path.join(tmp, "venv plain"), _copy_project(os.path.join(tmp, "project")), editable=False)
    grades[PLAIN] = _grade_demo(PLAIN, plain, course, os.environ)
    print("\n" + "\n".join(f"{k}: {v:.1f} s" for k, v in TIMES.items()))
    return grades, clone, edit, plain


@pytest.mark.slow
@pytest.mark.xdist_group("grading_where")
def test_the_layouts_import_the_packages_from_where_they_say(layouts):
    """The layouts are what they claim: the kernel's Python (isolated) imports the packages from the clone
    (editable) or from the venv's site-packages (plain), not from the checkout the grader runs in."""
    _, clone, edit, plain = layouts
    where = "import attn_grader, attn_ref; print(attn_grader.__file__); print(attn_ref.__file__)"
    for python, expected in ((edit, clone + "/"), (plain, os.path.dirname(os.path.dirname(plain)) + "/lib/")):
        out = subprocess.run([python, "-I", "-c", where], cwd="/", check=True, capture_output=True, text=True)
        assert all(line.startswith(expected) for line in out.stdout.splitlines()), (expected, out.stdout)


HIDDEN = r"""
import subprocess, sys, tempfile
from attn_grader.isolation import sandbox
from attn_grader.isolation.mounts import import_mounts
mounts, hidden = import_mounts(("attn_ref", "attn_grader"), with_modules=False)
for hide in (hidden, []):
    with tempfile.TemporaryDirectory() as box:
        spec = {"work": box, "ro": mounts, "hide": hide}
        r = subprocess.run(sandbox.command(spec, [sys.executable, "-I", "-c", "import attn_ref.attention"]))
        print(r.returncode)
"""


@pytest.mark.slow
@pytest.mark.xdist_group("grading_where")
def test_a_recheck_cannot_import_the_reference_installed_in_the_venv(layouts):
    """A plain install puts the reference in the virtualenv, which every sandbox mounts: the re-check's
    sandbox sees its folder empty (and would import it without that)."""
    plain = layouts[3]
    out = subprocess.run([plain, "-c", HIDDEN], cwd="/", check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["1", "0"], out


@pytest.mark.slow
@pytest.mark.xdist_group("grading_where")
@pytest.mark.parametrize("layout", [FRESH, EDITABLE, PLAIN])
def test_demo_class_graded_the_same_wherever_the_course_lives(layouts, layout):
    grades = layouts[0]
    rows = list(csv.DictReader(grades[layout].splitlines()))
    honest = [r for r in rows if r["student"] != "broken"]
    assert len(honest) == 7 and all((r["status"], r["sandbox"], r["reason"]) == ("ok", "on", "") for r in honest), rows
    assert grades[layout] == grades["reference"], (grades[layout], grades["reference"])


# Fast: the two mechanisms on their own.

WATCH = r"""
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("watch_under_test", sys.argv[1])
kernel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kernel)
sys.path.insert(0, sys.argv[2])  # our packages, as a clone under /tmp holds them (no __pycache__)
os.chdir(sys.argv[3])
kernel.install_watch(os.path.join(sys.argv[3], kernel.AUDIT_FILE))
for path, mode in json.loads(sys.argv[4]):
    try:
        open(path, mode).close()
    except OSError:
        pass
"""


def test_the_watch_offers_the_packages_of_a_clone_under_tmp_and_flags_its_course(tmp_path):
    """A kernel whose packages live in a fresh clone under /tmp: their missing .pyc files are no escape; the
    clone's solutions beside them, a course elsewhere in /tmp and a write into the packages are."""
    assert str(tmp_path).startswith("/tmp/")
    clone, box = tmp_path / "fresh clone", tmp_path / "box"
    for package in ("attn_ref", "attn_grader"):
        (clone / package).mkdir(parents=True)
        (clone / package / "__init__.py").write_text("")
    (clone / "solutions").mkdir()
    (clone / "solutions" / "ps.ipynb").write_text("{}")
    box.mkdir()
    honest = [(f"{clone}/attn_ref/__pycache__/attention.cpython-311.pyc", "rb"),
              (f"{clone}/attn_grader/catalogue/__pycache__/ps04.cpython-311.pyc", "rb"),
              (f"{clone}/attn_ref/__init__.py", "r"), (f"{box}/answer.txt", "w"), ("/tmp/ipykernel_1/1.py", "r")]
    escapes = [(f"{clone}/solutions/ps.ipynb", "r"), (f"{tmp_path}/other course/solutions/ps.ipynb", "r"),
               (f"{clone}/attn_ref/planted.py", "w"), (f"{REPO}/solutions/{A}/{A}.ipynb", "r")]
    watch = os.path.join(REPO, "attn_grader", "isolation", "kernel.py")
    subprocess.run([sys.executable, "-I", "-c", WATCH, watch, str(clone), str(box), json.dumps(honest + escapes)],
                   check=True, timeout=60)
    flagged = (box / ".attn-audit").read_text().splitlines()
    assert flagged == [f"{'write' if mode == 'w' else 'open'} {path}" for path, mode in escapes], flagged


def test_import_mounts_resolve_the_packages_as_an_isolated_python_does(tmp_path):
    """From a folder holding other copies of the packages (a course's checkout: ``python -m`` would import
    those), the mounts are where ``python -I`` imports them from, never the course, and without the
    packages when asked for their dependencies alone."""
    course = tmp_path / "course"
    for package in ("attn_ref", "attn_grader"):
        (course / package).mkdir(parents=True)
        (course / package / "__init__.py").write_text("")
    where = subprocess.run([sys.executable, "-I", "-c", "import attn_ref; print(attn_ref.__path__[0])"], cwd=course,
                           check=True, capture_output=True, text=True).stdout.strip()
    cwd = os.getcwd()
    try:
        os.chdir(course)
        mounts, none = mounts_module.import_mounts(("attn_ref", "attn_grader"), avoid=[str(course)])
        deps, _ = mounts_module.import_mounts(("attn_ref", "attn_grader"), avoid=[str(course)], with_modules=False)
    finally:
        os.chdir(cwd)
    offered = [*mounts, *sandbox.python_roots(), "/usr"]
    assert any((where + "/").startswith(m + "/") for m in offered), (where, mounts)
    assert not any((str(course) + "/").startswith(m + "/") or m.startswith(str(course)) for m in mounts), mounts
    assert not any(os.path.exists(os.path.join(m, "attn_ref", "__init__.py")) for m in mounts), mounts  # no checkout
    assert where not in deps and set(deps) <= set(mounts) and none == [], (deps, mounts)


def test_a_hidden_folder_is_empty_in_the_sandbox(tmp_path):
    """``hide``: what a sandbox mounts (the reference here) is seen as an empty folder."""
    ref = os.path.join(REPO, "attn_ref")
    probe = [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import attn_ref.attention",
             REPO]
    codes = []
    for hide in ([ref], []):
        box = tmp_path / f"box{len(hide)}"
        box.mkdir()
        r = subprocess.run(sandbox.command({"work": str(box), "ro": [ref], "hide": hide}, probe), capture_output=True,
                           text=True, timeout=60)
        codes.append((r.returncode, "ModuleNotFoundError" in r.stderr))
    assert codes == [(1, True), (0, False)], codes
