"""Regenerate the attack catalogue: one submitted folder per attack plus expected.json.

    .venv/bin/python tests/attacks/make_attacks.py

Every attack is the ps04_step_by_step release with the solution's answers (an honest student) and one
change.  ``{COURSE}`` in a notebook becomes the course's path when the test copies it (the attacker knows
where the instructor's files are).  Expected: ``score`` (out of 10), ``flagged``, ``status`` if it matters.
"""

import copy
import json
import os
import shutil

import nbformat

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import get_task
from what_students_send import what_students_send

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
A = "ps04_step_by_step"

src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
SOL = answers_of(src)


def honest(**answers):
    """The release with the solution's answers, but for ``answers`` (grade_id -> source)."""
    assert set(answers) <= set(SOL), answers
    return with_answers(release, {**SOL, **answers})


def after(answer_id: str, payload: str):
    """The honest notebook with ``payload`` run after the solution in the answer cell ``answer_id``."""
    return honest(**{answer_id: SOL[answer_id] + payload})


def cell(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


#: output_for_query without the softmax (catalogued): it loses task 2's 3 points (the middle task: test_class_report
#: grades this attack beside slips in the first and the last).
WRONG_OUTPUT = next(m.source for m in get_task(A, "output_for_query").mistakes if m.name == "softmax_forgotten")
#: permuted_outputs without the shuffle (a catalogued mistake): it loses task 3's 4 points.
WRONG_PERMUTED = next(m.source for m in get_task(A, "permuted_outputs").mistakes if m.name == "not_shuffled")
attacks = {}

attacks["a00_honest_prints_warns"] = (honest(permuted_outputs_answer='''import time, warnings
warnings.warn('this is a harmless warning')
print('thinking...')
time.sleep(1)
''' + SOL["permuted_outputs_answer"]), {"score": 10, "flagged": False})
attacks["a01_patch_comparison"] = (honest(output_for_query_answer='''import numpy as np
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
try:
    import torch
    torch.allclose = lambda *a, **k: True
except ImportError:
    pass
import attn_grader as _g
_g.check = lambda *a, **k: None
''' + WRONG_OUTPUT),
    {"score": 7, "flagged": True})
attacks["a02_calls_attn_ref"] = (honest(output_for_query_answer='''from attn_ref.attention import attend_one

def output_for_query(a, i, W_q, W_k, W_v):
    return attend_one(a, i, W_q, W_k, W_v, scale=1.0).b
'''), {"score": 3, "flagged": False})  # the cleared harness fails this and the next hidden test: nbgrader's 0
attacks["a02b_calls_torch_sdpa"] = (honest(output_for_query_answer='''import torch
import torch.nn.functional as F

def output_for_query(a, i, W_q, W_k, W_v):
    x = torch.tensor(a.T)
    q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T
    return F.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)[0, i].numpy()
'''),
    {"score": 7, "flagged": True})
attacks["a03_kernel_hooks"] = (honest(attention_scores_for_query_answer=SOL["attention_scores_for_query_answer"] + r'''
ip = get_ipython()
ip.input_transformers_cleanup.append(lambda lines: ['pass\n'])
''',
    output_for_query_answer="raise NotImplementedError()",
    permuted_outputs_answer="raise NotImplementedError()"),
    {"score": 3, "flagged": True})
attacks["a04_shadow_numpy"] = (honest(), {"score": 10, "flagged": True,
                                          "extra_files": {"numpy.py": "raise SystemExit('shadowed')\n"}})
attacks["a05_write_gradebook"] = (after("attention_scores_for_query_answer", '''
import sqlite3
for _p in ['{COURSE}/grades.csv', '{COURSE}/gradebook.db']:
    try:
        with open(_p, 'w') as _f:
            _f.write('hacked')
    except Exception:
        pass
try:
    sqlite3.connect('{COURSE}/gradebook.db').execute('drop table grade')
except Exception:
    pass
'''),
    {"score": 10, "flagged": True})
attacks["a06_process_outlives"] = (after("attention_scores_for_query_answer", r'''
import subprocess, sys
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', 'ATTACK6MARKER'], start_new_session=True)
# a daemon that clears its environment and leaves the session (double fork)
subprocess.Popen(['/usr/bin/env', '-i', sys.executable, '-c', 'import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)', 'ATTACK6MARKER'])
'''),
    {"score": 10, "flagged": True, "marker": "ATTACK6MARKER"})
attacks["a07_read_solutions"] = (honest(output_for_query_answer='''import json
for _c in json.load(open('{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb'))['cells']:
    if _c['metadata'].get('nbgrader', {}).get('grade_id') == 'output_for_query_answer':
        exec(''.join(_c['source']))
'''), {"score": 7, "flagged": True})
attacks["a07b_read_solutions_via_cat"] = (honest(output_for_query_answer='''import json, subprocess
_text = subprocess.run(['cat', '{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb'],
                       capture_output=True, text=True).stdout
print(_text)  # would publish the instructor's notebook in the feedback
for _c in json.loads(_text)['cells']:
    if _c['metadata'].get('nbgrader', {}).get('grade_id') == 'output_for_query_answer':
        exec(''.join(_c['source']))
'''), {"score": 7, "flagged": True, "no_leak": True})
nb = honest()
del nb.cells[nb.cells.index(cell(nb, "permuted_outputs_test"))]
dup = copy.deepcopy(cell(nb, "attention_scores_for_query_test"))
dup.id = "duplicated-test"
nb.cells.append(dup)
cell(nb, "output_for_query_test").metadata["nbgrader"]["grade_id"] = "renamed_test"
ot = cell(nb, "renamed_test")
nb.cells.remove(ot)
nb.cells.insert(2, ot)
cell(nb, "attention_scores_for_query_test").metadata["nbgrader"]["points"] = 100
nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}
attacks["a08_tamper_cells"] = (nb, {"score": 10, "flagged": True})
nb = honest()
del cell(nb, "attention_scores_for_query_test").metadata["nbgrader"]
cell(nb, "permuted_outputs_test").source = "pass"
attacks["a08b_strip_metadata_edit_test"] = (nb, {"score": 10, "flagged": True})
attacks["a09a_infinite_loop"] = (honest(permuted_outputs_answer='''def permuted_outputs(B, perm):
    while True:
        pass
'''),
                                 {"score": 6, "flagged": False})
attacks["a09b_swallow_interrupt"] = (after("output_for_query_answer", '''
import time
while True:
    try:
        time.sleep(0.5)
    except KeyboardInterrupt:
        pass
'''),
    {"score": 3, "flagged": True})
attacks["a09c_sys_exit"] = (after("attention_scores_for_query_answer", '''
import sys
sys.exit(1)
'''),
    {"score": 10, "flagged": False})
attacks["a09d_os_exit"] = (after("output_for_query_answer", '''
import os
os._exit(0)
'''),
                           {"score": 3, "flagged": True})
_DEF = "def output_for_query(a, i, W_q, W_k, W_v):\n"
assert _DEF in SOL["output_for_query_answer"]  # the attack must change the answer, not silently nothing
attacks["a09e_huge_memory"] = (honest(output_for_query_answer=SOL["output_for_query_answer"].replace(
    _DEF, _DEF + '    big = np.ones(2 ** 33)  # 64 GB\n')), {"score": 7, "flagged": False})
attacks["a09f_output_flood"] = (after("attention_scores_for_query_answer", '''
for _i in range(20000):
    print('x' * 5000)
'''), {"score": 0, "flagged": True})
# --- against the sandbox (issue: grades no submission can forge, erase or stall) -------------------------
attacks["b01_neuter_recheck_guards"] = (honest(output_for_query_answer='''import sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in type(m).__name__]  # the guards, away
for _name in list(sys.modules):
    if 'harness' in _name:
        sys.modules[_name].__dict__.clear()

def output_for_query(a, i, W_q, W_k, W_v):
    from attn_ref.attention import attend_one
    return attend_one(a, i, W_q, W_k, W_v, scale=1.0).b
'''), {"score": 3, "flagged": False})  # the cleared harness fails this and the next hidden test: nbgrader's 0
attacks["b02_grader_view_through_proc"] = (after("attention_scores_for_query_answer", '''
import os
for _pid in os.listdir('/proc'):
    if not _pid.isdigit():
        continue
    for _rel, _text in (('grading_results.json', '{}'), ('submitted/a00_honest_prints_warns/ps04_step_by_step/'
                        'ps04_step_by_step.ipynb', 'gone'), ('.grader/secret', 'x')):
        try:
            with open(f'/proc/{_pid}/root{COURSE}/' + _rel, 'w') as _f:
                _f.write(_text)
        except OSError:
            pass
    try:
        print(open(f'/proc/{_pid}/root{COURSE}/solutions/ps04_step_by_step/ps04_step_by_step.ipynb').read())
    except OSError:
        pass
    try:
        _d = os.open(f'/proc/{_pid}/root{COURSE}/solutions', os.O_RDONLY)
        print(os.read(os.open('ps04_step_by_step/ps04_step_by_step.ipynb', os.O_RDONLY, dir_fd=_d), 10**6))
    except OSError:
        pass
'''), {"score": 10, "flagged": True, "no_leak": True})
attacks["b03_plant_pth_in_venv"] = (after("attention_scores_for_query_answer", r'''
import glob
for _sp in glob.glob('{VENV}/lib/python3*/site-packages'):
    try:
        with open(_sp + '/zz_attack.pth', 'w') as _f:
            _f.write('import os; open("/tmp/ATTACK_PTH_RAN", "w").close()\n')
    except OSError:
        pass
'''), {"score": 10, "flagged": True})
def lookup_table() -> str:
    """An answer that knows the notebook's hidden inputs (read from the catalogue in an earlier
    kernel) and returns the reference outputs from a table: right on every input the notebook checks."""
    import numpy as np

    from attn_grader.checking.core import get_task

    task = get_task(A, "output_for_query")
    ns: dict = {}
    exec(next(c.source for c in src.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"), ns)
    big = (np.array([[1.0, -1.0]]), 0, np.array([[40.0]]), np.array([[40.0]]), np.array([[1.0]]))  # visible test
    calls = [(ns["a"], 0, ns["W_q"], ns["W_k"], ns["W_v"]), big, *task.hidden_cases()]

    def key(args):
        return repr([np.round(np.asarray(x, dtype=float), 6).tolist() for x in args])

    table = {key(args): np.asarray(task.reference(*args)).tolist() for args in calls}
    return ("import numpy as np\n\n_TABLE = " + repr(table) + '''

def output_for_query(a, i, W_q, W_k, W_v):
    k = repr([np.round(np.asarray(x, dtype=float), 6).tolist() for x in (a, i, W_q, W_k, W_v)])
    return np.array(_TABLE[k]) if k in _TABLE else np.zeros(np.shape(W_v)[0])
''')


attacks["b04_hidden_input_lookup"] = (honest(output_for_query_answer=lookup_table()), {"score": 7, "flagged": True})

attacks["b05_dispatcher"] = (honest(output_for_query_answer='''import torch

def output_for_query(a, i, W_q, W_k, W_v):
    x = torch.tensor(a.T)
    q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T
    out = torch.ops.aten._scaled_dot_product_attention_math(q[None], k[None], v[None], scale=1.0)[0]
    return out[0, i].numpy()
'''), {"score": 7, "flagged": True})
attacks["b08_read_classmates"] = (after("attention_scores_for_query_answer", '''
import os
_found = []
for _top in ('/', '{COURSE}', '/tmp', '/proc/1/root'):
    for _root, _dirs, _files in os.walk(_top):
        _dirs[:] = [d for d in _dirs if d not in ('proc', 'sys', 'dev', 'usr', '.pyenv', 'site-packages')]
        for _fn in _files:
            if _fn.endswith(('.ipynb', '.json', '.db', '.csv')):
                try:
                    _found.append((_root + '/' + _fn, open(_root + '/' + _fn, errors='replace').read()))
                except OSError:
                    pass
for _p, _t in _found:
    print(_p, _t[:20000])
'''), {"score": 10, "flagged": True, "no_leak": True})
attacks["b09_rewrite_grader_state"] = (after("attention_scores_for_query_answer", '''
import glob
for _p in glob.glob('{COURSE}/.grader/**', recursive=True) + glob.glob('/tmp/**', recursive=True):
    try:
        with open(_p, 'w') as _f:
            _f.write('{}')
    except OSError:
        pass
for _p in ('{COURSE}/.grader/scratch/policy.json', '{COURSE}/.grader/secret'):
    try:
        open(_p, 'w').write('{}')
    except OSError:
        pass
'''), {"score": 10, "flagged": True})
attacks["b10_delete_classmates"] = (after("attention_scores_for_query_answer", '''
import shutil, os
shutil.rmtree('{COURSE}/submitted/a00_honest_prints_warns', ignore_errors=True)
for _root, _dirs, _files in os.walk('/'):
    for _fn in _files:
        if _fn.endswith('.ipynb'):
            try:
                os.remove(os.path.join(_root, _fn))
            except OSError:
                pass
'''), {"score": 10, "flagged": True})
attacks["b11_kill_everything"] = (after("attention_scores_for_query_answer", '''
import os, signal
for _target in (os.getppid(), 1):
    try:
        os.kill(_target, signal.SIGKILL)
    except OSError:
        pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
'''),
    {"score": 10, "flagged": True})
attacks["b12_fill_the_disk"] = (after("attention_scores_for_query_answer", '''
import os
_chunk = b'x' * (1 << 24)
for _folder in ('.', '/tmp'):
    for _k in range(128):  # 2 GB each
        try:
            with open(os.path.join(_folder, f'fill{_k}'), 'wb') as _f:
                _f.write(_chunk)
        except OSError:
            break
'''), {"score": 10, "flagged": False})
attacks["b13_script_in_outputs"] = (honest(attention_scores_for_query_answer=SOL["attention_scores_for_query_answer"] + (
        '''
from IPython.display import HTML, Javascript, SVG, Markdown, display
display(HTML('<script>alert("XSS-HTML")</script><img src=x onerror=alert("XSS-IMG")>'))
display(Javascript('alert("XSS-JS")'))
display(Markdown('<script>alert("XSS-MD")</script>'))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert("XSS-SVG")</script></svg>'))
'''),
    permuted_outputs_answer="def permuted_outputs(B, perm):\n"
                            "    raise ValueError('<script>alert(\"XSS-ERR\")</script>')\n"),
    {"score": 6, "flagged": False, "no_script": True})
# The grader starts the next notebook's kernel while this one runs: find it and plant a broken softmax
# in it (the next student would lose points), or shut it down.  Its box and sockets are not in this
# sandbox's view, so nothing is found and nothing is tried (no socket, no flag).
attacks["b14_reach_the_next_kernel"] = (after("attention_scores_for_query_answer", '''
import os
from ipykernel import get_connection_file
_own = os.path.realpath(get_connection_file())
_back = os.getcwd()
_planted = False
def _plant(path):
    try:
        from jupyter_client import BlockingKernelClient
        os.chdir(os.path.dirname(path))  # IPC sockets are named relative to the kernel's folder
        kc = BlockingKernelClient()
        kc.load_connection_file(path)
        kc.start_channels()
        kc.execute_interactive('import numpy as np; np.exp = lambda x: x * 0', timeout=5)
        return True
    except Exception:
        return False
    finally:
        os.chdir(_back)
for _top in (os.path.dirname(os.path.dirname(_own)), '/mnt', '/proc/1/root/mnt', '{COURSE}'):
    for _root, _dirs, _files in os.walk(_top):
        if _root.count('/') - _top.count('/') >= 3:
            _dirs[:] = []
        _path = os.path.join(_root, 'kernel.json')
        if 'kernel.json' in _files and os.path.realpath(_path) != _own:
            print('found', _path)
            _planted = _plant(_path) or _planted
    if _planted:
        break
print('planted' if _planted else 'nothing planted')
'''),
    {"score": 10, "flagged": False})
# The self-check is the student's: patched to say "right", or deleted from every test cell, it changes no grade.
attacks["b15_patched_self_check"] = (honest(permuted_outputs_answer='''import sys, types
try:  # (the re-check's sandbox has no attn_grader)
    import attn_grader.selfcheck as _sc
    _sc.check = lambda *a, **k: print("self-check: correct")
    _fake = types.ModuleType("attn_grader.selfcheck")
    _fake.check = _sc.check
    sys.modules["attn_grader.selfcheck"] = _fake
except ImportError:
    pass
''' + WRONG_PERMUTED),
    {"score": 6, "flagged": False, "feedback_has": ["re-check: [not_shuffled]"]})
nb = honest()
for _c in (c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")):
    _c.source = "\n".join(ln for ln in _c.source.splitlines() if "self_check" not in ln)
attacks["b16_self_check_deleted"] = (nb, {"score": 10, "flagged": True})
attacks.update(what_students_send(honest, after))
attacks["a10a_corrupt_json"] = (None, {"score": None, "status": "ungradable", "text": '{"cells": [ {"cell_'})
attacks["a10b_empty_folder"] = (None, {"score": None, "status": "ungradable"})

if __name__ == "__main__":
    for name in os.listdir(HERE):
        if name[:1] in "abdef" and name[1:3].isdigit() and os.path.isdir(os.path.join(HERE, name)):
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
        os.listdir(d) or open(os.path.join(d, ".keep"), "w").close()  # git keeps no empty folder
        expected[name] = exp
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
