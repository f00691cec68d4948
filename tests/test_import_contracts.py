"""The arrows between the packages (pyproject.toml, [tool.importlinter]) hold, and a forbidden import
breaks them: the reference imports NumPy and nothing of ours; the grader does not import the book's support
(figures, models, data, timing); the book's support does not import the grader; nothing imports the bench.
Inside the grader, the stages: a stage imports only the stages under it, a report runs nothing, the catalogue
needs only the contract of a task, the sandbox launcher and the harness import nothing of ours, and a module
outside every stage is refused.  And the reference really imports with NumPy alone (torch and matplotlib
blocked)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINT = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def _lint(root):
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def copy(tmp_path):
    for pkg in ("attn_ref", "attn_book", "attn_grader", "bench"):
        shutil.copytree(os.path.join(ROOT, pkg), tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path)
    return tmp_path


def test_the_contracts_hold(copy):
    proc = _lint(copy)
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("module, line", [
    ("attn_ref/softmax.py", "import attn_grader.checking.core"),
    ("attn_ref/attention.py", "from bench import __main__"),
    ("attn_ref/attention.py", "import torch"),
    ("attn_ref/scores.py", "from matplotlib import pyplot"),
    ("attn_ref/softmax.py", "from attn_book import timing"),
    ("attn_grader/checking/scores.py", "import attn_book"),
    ("attn_grader/checking/recheck.py", "import bench"),
    ("attn_book/__init__.py", "import attn_grader"),
    ("attn_grader/selfcheck.py", "import nbgrader"),
    ("attn_grader/checking/core.py", "from matplotlib import pyplot"),  # the self-check imports core
])
def test_a_forbidden_import_breaks_them(copy, module, line):
    with open(copy / module, "a") as f:
        f.write(f"\n{line}  # noqa\n")
    proc = _lint(copy)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout + proc.stderr


def _broken(stdout: str) -> set[str]:
    return {line[:-len(" BROKEN")] for line in stdout.splitlines() if line.endswith(" BROKEN")}


STAGES = "the grader's stages import only the stages under them"
REPORTS = "a report runs nothing: no sandbox, kernel or execution, no checking"
CATALOGUE = "the catalogue imports only checking's core and harness"
ALONE = "the sandbox launcher and the harness import nothing of ours"


@pytest.mark.parametrize("module, line, broken", [
    ("attn_grader/reports/record.py", "from attn_grader.isolation import sandbox", {REPORTS}),
    ("attn_grader/reports/lms.py", "from attn_grader.checking import scores", {STAGES, REPORTS}),
    ("attn_grader/checking/scores.py", "from attn_grader.run import course", {STAGES}),
    ("attn_grader/isolation/sanitize.py", "from attn_grader.checking import core", {STAGES, REPORTS}),  # similarity
    ("attn_grader/files/safeio.py", "from attn_grader.reports import result", {STAGES}),
    ("attn_grader/run/course.py", "from attn_grader.authoring import release", {STAGES}),
    ("attn_grader/catalogue/_shared.py", "from attn_grader.run import discover", {CATALOGUE}),
    ("attn_grader/checking/harness.py", "from attn_grader.checking import core", {ALONE}),
    ("attn_grader/isolation/sandbox.py", "import nbformat", {ALONE}),
])
def test_a_forbidden_import_between_the_grader_stages_breaks_its_contract(copy, module, line, broken):
    with open(copy / module, "a") as f:
        f.write(f"\n{line}  # noqa\n")
    proc = _lint(copy)
    assert proc.returncode != 0 and _broken(proc.stdout) == broken, proc.stdout + proc.stderr


def test_a_grader_module_outside_every_stage_breaks_the_stages(copy):
    (copy / "attn_grader" / "stray.py").write_text('"""A new module at the top level of the grader."""\n')
    proc = _lint(copy)
    assert proc.returncode != 0 and _broken(proc.stdout) == {STAGES}, proc.stdout + proc.stderr
    assert "attn_grader.stray" in proc.stdout

def test_the_reference_imports_with_numpy_alone():
    """Every module of attn_ref imports in a process where torch, matplotlib, scipy and sklearn cannot be
    imported: what a student's kernel or a NumPy-only machine has."""
    code = (
        "import sys, pkgutil, importlib\n"
        "for name in ('torch', 'matplotlib', 'scipy', 'sklearn', 'torch_geometric', 'attn_book', 'attn_grader'):\n"
        "    sys.modules[name] = None\n"
        "import attn_ref\n"
        "names = [m.name for m in pkgutil.iter_modules(attn_ref.__path__)]\n"
        "for n in names:\n"
        "    importlib.import_module('attn_ref.' + n)\n"
        "print(len(names))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) >= 15  # the modules were found and imported, not skipped
