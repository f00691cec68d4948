"""The Makefile's system packages (issue 39.7): make grade needs bubblewrap only, apt runs only when a package is
missing, and two runs started together take turns on apt instead of the second one failing on its lock.

The recipes run with a PATH of stand-ins: a fake ``apt-get`` that logs its arguments (and, for the
concurrent runs, when it starts and ends), ``id -u`` saying root, and ``bwrap`` present or not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from site_helpers import ROOT

MAKE = shutil.which("make")


@pytest.fixture
def fakebin(tmp_path):
    if MAKE is None or shutil.which("flock") is None:
        pytest.skip("needs make and flock (util-linux)")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("sh", "ls", "flock", "sleep", "cat"):
        os.symlink(shutil.which(tool), bin_ / tool)
    log = tmp_path / "apt.log"
    (bin_ / "apt-get").write_text(f'#!/bin/sh\necho "start $*" >> {log}\nsleep 0.3\necho "end" >> {log}\n')
    (bin_ / "id").write_text("#!/bin/sh\necho ${FAKE_UID:-0}\n")
    for script in ("apt-get", "id"):
        (bin_ / script).chmod(0o755)
    return bin_, log


def _make(bin_, tmp_path, target="sandbox-packages", uid="0"):
    env = {"PATH": str(bin_), "FAKE_UID": uid, "HOME": str(tmp_path)}
    return subprocess.Popen([MAKE, "-s", "-C", str(ROOT), target, f"APT_LOCK={tmp_path / 'apt.lock'}"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run(*args, **kwargs) -> str:
    p = _make(*args, **kwargs)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    return out


def test_nothing_is_installed_when_bubblewrap_is_present(fakebin, tmp_path):
    bin_, log = fakebin
    os.symlink(shutil.which("true"), bin_ / "bwrap")
    assert _run(bin_, tmp_path) == ""
    assert not log.exists(), "apt-get ran although nothing was missing"


def test_a_missing_bubblewrap_is_installed_waiting_for_apts_lock(fakebin, tmp_path):
    bin_, log = fakebin
    out = _run(bin_, tmp_path)
    assert out.startswith("installing bubblewrap with apt"), out  # one space: "installing bubblewrap"
    calls = [ln for ln in log.read_text().splitlines() if ln.startswith("start")]
    assert len(calls) == 2 and all("-o DPkg::Lock::Timeout=300" in c for c in calls)
    assert calls[0].endswith("update -qq") and calls[1].endswith("install -y -qq bubblewrap")
    assert "fonts-noto-cjk" not in out + log.read_text() and "chromium" not in log.read_text()


def test_two_runs_started_together_take_turns_on_apt(fakebin, tmp_path):
    bin_, log = fakebin
    runs = [_make(bin_, tmp_path) for _ in range(2)]
    for p in runs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, out
    events = log.read_text().split()
    marks = [e for e in events if e in ("start", "end")]
    assert marks == ["start", "end"] * 4, marks  # never two apt-get at once


def test_without_root_it_says_what_to_install(fakebin, tmp_path):
    bin_, log = fakebin
    out = _run(bin_, tmp_path, uid="1000")
    assert "missing: bubblewrap and not root" in out and "sudo apt-get install bubblewrap" in out
    assert not log.exists()


def test_grade_needs_the_sandbox_only_and_the_tests_need_the_browser():
    text = (ROOT / "Makefile").read_text()
    prereqs = {t: deps.split() for t, deps in re.findall(r"^([\w-]+):(?!=)(.*)$", text, re.M)}
    assert "sandbox-packages" in prereqs["grade"] and "sandbox-packages" in prereqs["grade-demo"]
    assert not {"browser-packages", "system-packages"} & set(prereqs["grade"] + prereqs["grade-demo"])
    assert "browser-packages" in prereqs["pytest"]
    recipe = text.split("\nbrowser-packages:", 1)[1].split("\n\n", 1)[0]
    assert "chromium" in recipe and "postgresql" in recipe and "fonts" not in recipe
