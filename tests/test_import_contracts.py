"""The arrows between the packages (pyproject.toml, [tool.importlinter]) hold, and a forbidden import
breaks them: the reference must not import the grader or the bench; the grader must not import the
book's figures, models and data, or the bench."""

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
    for pkg in ("attn_ref", "attn_grader", "bench"):
        shutil.copytree(os.path.join(ROOT, pkg), tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path)
    return tmp_path


def test_the_contracts_hold(copy):
    proc = _lint(copy)
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("module, line", [
    ("attn_ref/softmax.py", "import attn_grader.core"),
    ("attn_ref/attention.py", "from bench import __main__"),
    ("attn_grader/scores.py", "from attn_ref import diagrams"),
    ("attn_grader/recheck.py", "import bench"),
])
def test_a_forbidden_import_breaks_them(copy, module, line):
    with open(copy / module, "a") as f:
        f.write(f"\n{line}  # noqa\n")
    proc = _lint(copy)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout + proc.stderr
