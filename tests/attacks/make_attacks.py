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
attacks["a10a_corrupt_json"] = (None, {"score": None, "status": "ungradable", "text": '{"cells": [ {"cell_'})
attacks["a10b_empty_folder"] = (None, {"score": None, "status": "ungradable"})

if __name__ == "__main__":
    for name in os.listdir(HERE):
        if name.startswith("a") and os.path.isdir(os.path.join(HERE, name)):
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
