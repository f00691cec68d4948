"""``class_report.html``: what the class got wrong, one page per course, for the instructor.

Written by the one writer at the end of ``make grade`` (:func:`write`), from every stored result
(``grading_results.json``), so a run that graded one assignment leaves the others' sections as
they were.  Per assignment:

* a histogram of the totals, and per task the share of full, partial and zero scores (figures drawn
  with matplotlib, embedded as PNG, each with alt text that says what it shows; the numbers are also
  in a table beside it);
* per task, the re-check's findings ranked by how many students they concern: each catalogued
  mistake with its message and one example of a wrong output against the expected one (numbers
  only: the example does not say whose it is), then wrong outputs no catalogued mistake reproduces,
  answers that raised, and tasks whose notebook test failed while the re-check passed;
* the flagged and the ungradable submissions with their reasons;
* the pairs of submissions whose answer code is alike (:mod:`.similarity`), ranked by score, each
  with its matching lines side by side (the students are never told), and the answer cells that copy
  known code (the reference, the catalogue's reference answers, the book, PyTorch), beside that code;
* when the last run graded, how long it took and on how many workers.

The page is self-contained and works offline: inline CSS, images as ``data:`` URIs, no script.
Every string that came from a student (a folder name, an exception message) is escaped.

    python -m attn_grader.reports.classreport [--course DIR]   # the report again from grading_results.json
    python -m attn_grader.reports.classreport --course _build/grade-demo --screenshot book/_static/class_report.png
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import os
import shutil
import time
from collections import Counter

from ..files.safeio import write_atomic
from .record import points
from .result import NOT_ATTEMPTED, Result

REPORT_FILE = "class_report.html"
# Debian's chromium, driven by playwright (the screenshot here; the page tests of tests/ use the same)
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
RUN_FILE = "last_run.json"  # in .grader/: when the last run graded, for how long, on how many workers

# Okabe & Ito's colour-blind-safe palette (https://jfly.uni-koeln.de/color/): full, partial, zero.
COLOURS = {"full": "#009E73", "partial": "#E69F00", "zero": "#D55E00"}
OTHER = {NOT_ATTEMPTED: "the answer still raises NotImplementedError (the released stub)",
         "unrecognised": "a wrong output no catalogued mistake reproduces",
         "error": "the answer raised an error", "unfinished": "the re-check did not finish every case",
         "notebook": "the notebook's test failed while the re-check passed"}


def _png(fig) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _histogram(totals: list[float], max_total: float, assignment: str) -> tuple[str, str]:
    """(PNG data URI, alt text) of the totals' histogram: one bar per whole point when it is small."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 2.6))
    ax = fig.add_subplot()
    whole = float(max_total).is_integer() and max_total <= 40
    edges = [x - 0.5 for x in range(int(max_total) + 2)] if whole else 10
    ax.hist(totals, bins=edges, range=(0, max_total) if not whole else None,
                           color="#0072B2", edgecolor="white")
    ax.set_xlabel(f"total points (of {points(max_total)})")
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    by_score = Counter(totals)
    parts = [f"{n} scored {points(s)}" for s, n in sorted(by_score.items(), reverse=True)]
    alt = (f"Histogram of the {len(totals)} graded totals of {assignment} (out of {points(max_total)}): "
           + "; ".join(parts) + ".")
    return _png(fig), alt


def _shares(rows: list[tuple[str, int, int, int]], assignment: str) -> tuple[str, str]:
    """(PNG, alt) of one horizontal bar per task split into full, partial and zero shares."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 0.5 + 0.42 * len(rows)))
    ax = fig.add_subplot()
    names = [r[0] for r in rows][::-1]
    left = [0.0] * len(rows)
    for k, key in enumerate(("full", "partial", "zero")):
        vals = [(r[1 + k] / max(sum(r[1:]), 1)) for r in rows][::-1]
        ax.barh(names, vals, left=left, color=COLOURS[key], label=key, edgecolor="white",
                hatch=("", "//", "..")[k])
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the graded submissions")
    ax.legend(ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    alt = (f"Per task of {assignment}, the share of full, partial and zero scores: "
           + "; ".join(f"{r[0]}: {r[1]} full, {r[2]} partial, {r[3]} zero" for r in rows) + ".")
    return _png(fig), alt


def findings(results: list[Result], gid: str) -> list[dict]:
    """What went wrong in task ``gid``, ranked: [{"name", "message", "count", "students", "example"}],
    most students first, then by name; each submission counted once per task."""
    found: dict[str, dict] = {}
    for r in results:
        if r.status == "ungradable" or gid not in r.tasks or gid in r.manual_tasks:
            continue  # a cell graded by hand: its score is a grader's judgement (or still to come), no mistake
        m = r.mistakes.get(gid)
        if m:
            name, message = m.get("name", "unrecognised"), m.get("message", "")
        elif r.scores.get(gid, 0.0) < r.max.get(gid, 0.0) - 1e-9:
            name, message = "notebook", OTHER["notebook"]
        else:
            continue
        entry = found.setdefault(name, {"name": name, "message": message, "count": 0, "students": [],
                                        "example": None})
        entry["count"] += 1
        entry["students"].append(r.student)
        if entry["example"] is None and m and m.get("got") is not None:
            entry["example"] = {"got": m.get("got", ""), "expected": m.get("expected", "")}
    catalogued = sorted((e for e in found.values() if e["name"] not in OTHER), key=lambda e: (-e["count"], e["name"]))
    others = [found[k] for k in OTHER if k in found]
    return catalogued + others


def shown_name(name: str) -> str:
    """A finding's name as the report shows it: a catalogued mistake's, "not attempted yet", or e.g.
    "unrecognised (not catalogued)"."""
    return name + " (not catalogued)" if name in OTHER and name != NOT_ATTEMPTED else name


def _e(text) -> str:
    return html.escape(str(text), quote=True)


SIMILAR_TABLE = 100  # pairs listed per assignment
SIMILAR_SHOWN = 20  # pairs shown side by side
CODE_LINES = 120  # lines of one answer cell shown (a cell longer than this is cut, and says so)


def _code_column(code: str, matched: list[int]) -> str:
    """One student's answer cell, numbered, the lines that match the other's in <mark> (and marked "=")."""
    lines = code.splitlines()
    marks = set(matched)
    out = []
    for n, line in enumerate(lines[:CODE_LINES], start=1):
        text = f"{n:>3} {'=' if n in marks else ' '} {line[:300]}"
        out.append(f"<mark>{_e(text)}</mark>" if n in marks else _e(text))
    if len(lines) > CODE_LINES:
        out.append(_e(f"... {len(lines) - CODE_LINES} more lines"))
    return '<pre class="code"><code>' + "\n".join(out) + "</code></pre>"


def _similar(assignment: str, entry: dict | None) -> str:
    """The assignment's alike pairs (:mod:`.similarity`): a ranked table, then the top pairs side by side."""
    if not entry:
        return ""
    pairs = entry.get("pairs", [])
    hid = "sim-" + _e(assignment)
    out = [f'<section aria-labelledby="{hid}"><h3 id="{hid}">Alike answer code</h3>',
           f"<p>{_e(entry.get('compared', 0))} submissions compared, their answer cells only with the released "
           f"starter code left out (copydetect's winnowing, as MOSS; names, comments and layout do not count). "
           f"A pair is listed from a score of {_e(entry.get('threshold'))} when both share at least "
           f"{_e(entry.get('min_shared'))} characters of normalised code. A score is a reason to look, not "
           "proof; students are not told.</p>"]
    if not pairs:
        out.append("<p>No pair of submissions is alike enough to list.</p>" + _known(hid, entry) + "</section>")
        return "\n".join(out)
    out.append(f'<table class="similar"><caption>Alike pairs of {_e(assignment)}, highest score first</caption>'
               '<thead><tr><th scope="col">rank</th><th scope="col">student</th><th scope="col">student</th>'
               '<th scope="col">score</th><th scope="col">shares (first, second)</th>'
               '<th scope="col">matched normalised characters</th><th scope="col">cells</th></tr></thead><tbody>')
    for k, p in enumerate(pairs[:SIMILAR_TABLE], start=1):
        out.append(f'<tr><td class="n">{k}</td><td>{_e(p.a)}</td><td>{_e(p.b)}</td><td class="n">{p.score:.2f}</td>'
                   f'<td>{p.share_a:.0%}, {p.share_b:.0%}</td><td class="n">{int(p.shared)}</td>'
                   f'<td>{_e(", ".join(c.cell for c in p.cells))}</td></tr>')
    out.append("</tbody></table>")
    if len(pairs) > SIMILAR_TABLE:
        out.append(f"<p>{len(pairs) - SIMILAR_TABLE} more pairs are not listed.</p>")
    for k, p in enumerate(pairs[:SIMILAR_SHOWN], start=1):
        out.append(f'<h4 id="{hid}-{k}">{k}. {_e(p.a)} and {_e(p.b)}: score {p.score:.2f}</h4>')
        for c in p.cells:
            out.append(f'<table class="side"><caption>{_e(c.cell)}: matching lines marked = and highlighted'
                       f'</caption><thead><tr><th scope="col">{_e(p.a)}</th><th scope="col">{_e(p.b)}</th>'
                       f"</tr></thead><tbody><tr><td>{_code_column(c.code_a, c.lines_a)}</td>"
                       f"<td>{_code_column(c.code_b, c.lines_b)}</td></tr></tbody></table>")
    out.append(_known(hid, entry) + "</section>")
    return "\n".join(out)


def _known(hid: str, entry: dict) -> str:
    """The answer cells that copy known code (:func:`.similarity.compare_known`): the reference, the catalogue's
    reference answers, the book's code cells, PyTorch's attention; each beside the code it matches."""
    known = entry.get("known", [])
    out = [f'<h4 id="{hid}-known">Copies of known code</h4>',
           "<p>Each answer cell compared in the same way with code public by design: the reference (attn_ref, the "
           "book's code), the catalogue's reference answers, the book's code cells and PyTorch's attention in "
           "Python. A cell is listed with the source it matches best.</p>"]
    if not known:
        return "\n".join(out + ["<p>No answer is alike enough to known code to list.</p>"])
    out.append('<table class="similar"><caption>Answer cells alike to known code, highest score first</caption>'
               '<thead><tr><th scope="col">student</th><th scope="col">cell</th><th scope="col">known code</th>'
               '<th scope="col">score</th><th scope="col">matched normalised characters</th></tr></thead><tbody>')
    for m in known[:SIMILAR_TABLE]:
        out.append(f"<tr><td>{_e(m.student)}</td><td>{_e(m.cell)}</td><td>{_e(m.source)}</td>"
                   f'<td class="n">{m.score:.2f}</td><td class="n">{int(m.shared)}</td></tr>')
    out.append("</tbody></table>")
    for m in known[:SIMILAR_SHOWN]:
        out.append(f'<table class="side"><caption>{_e(m.student)}, {_e(m.cell)}, and {_e(m.source)}: matching '
                   f'lines marked = and highlighted</caption><thead><tr><th scope="col">{_e(m.student)}</th>'
                   f'<th scope="col">{_e(m.source)}</th></tr></thead><tbody><tr><td>{_code_column(m.code, m.lines)}'
                   f"</td><td>{_code_column(m.known, m.known_lines)}</td></tr></tbody></table>")
    return "\n".join(out)


def _section(assignment: str, results: list[Result], similar: dict | None = None) -> str:
    graded = [r for r in results if r.status != "ungradable"]
    out = [f'<section aria-labelledby="h-{_e(assignment)}"><h2 id="h-{_e(assignment)}">{_e(assignment)}</h2>']
    n_flag = sum(r.status == "flagged" for r in results)
    n_bad = len(results) - len(graded)
    tasks = next((r.tasks for r in results if r.tasks), [])
    max_total = max((r.max_total for r in results), default=0.0)
    totals = [r.total for r in graded]
    summary = f"{len(results)} submissions: {len(graded)} graded ({n_flag} of them flagged), {n_bad} ungradable."
    if totals:
        mean = sum(totals) / len(totals)
        full = sum(t >= max_total - 1e-9 for t in totals)
        summary += f" Mean total {mean:.2f} of {points(max_total)}; {full} full marks."
    by_hand = sum(bool(r.manual) for r in graded)
    waiting = sum(bool(r.needs_manual) for r in graded)
    late = [r for r in graded if r.seconds_late > 0]
    if by_hand or waiting:  # the formgrader's scores are in the totals (nbgrader's rule: they replace ours)
        summary += f" Graded by hand in the formgrader: {by_hand}; waiting for a grader: {waiting}."
    if late:
        summary += (f" Late: {len(late)} (late penalties {points(sum(r.late_penalty for r in late))} points in all,"
                    " taken from the totals).")
    out.append(f"<p>{_e(summary)}</p>")
    if totals and max_total > 0:
        src, alt = _histogram(totals, max_total, assignment)
        out.append(f'<figure><img src="{src}" alt="{_e(alt)}"><figcaption>Totals of the graded submissions.'
                   "</figcaption></figure>")
    rows = []
    for gid in tasks:
        mx = max((r.max.get(gid, 0.0) for r in graded), default=0.0)
        scores = [r.scores.get(gid, 0.0) for r in graded if gid in r.tasks and gid not in r.needs_manual]
        full = sum(s >= mx - 1e-9 for s in scores)
        zero = sum(s <= 1e-9 for s in scores) if mx > 0 else 0
        rows.append((gid, full, len(scores) - full - zero, zero))
    if rows and graded:
        src, alt = _shares(rows, assignment)
        out.append(f'<figure><img src="{src}" alt="{_e(alt)}"><figcaption>Per task: full, partial and zero '
                   "scores.</figcaption></figure>")
        out.append('<table><caption>Scores per task</caption><thead><tr><th scope="col">task</th>'
                   '<th scope="col">full</th><th scope="col">partial</th><th scope="col">zero</th></tr></thead><tbody>')
        out += [f"<tr><th scope=\"row\">{_e(g)}</th><td>{f}</td><td>{p}</td><td>{z}</td></tr>" for g, f, p, z in rows]
        out.append("</tbody></table>")
    out.append("<h3>What went wrong, per task</h3>")
    any_finding = False
    for gid in tasks:
        ranked = findings(results, gid)
        if not ranked:
            continue
        any_finding = True
        out.append(f'<table class="findings"><caption>{_e(gid)}</caption><thead><tr><th scope="col">students</th>'
                   '<th scope="col">mistake</th><th scope="col">what it does</th>'
                   '<th scope="col">one example (numbers only)</th></tr></thead><tbody>')
        for f in ranked:
            name = shown_name(f["name"])
            ex = f["example"]
            example = (f'output: <code>{_e(ex["got"])}</code><br>expected: <code>{_e(ex["expected"])}</code>'
                       if ex else "")
            out.append(f'<tr><td class="n">{f["count"]}</td><td><code>{_e(name)}</code></td>'
                       f'<td>{_e(f["message"])}</td><td class="ex">{example}</td></tr>')
        out.append("</tbody></table>")
    if not any_finding:
        out.append("<p>No task lost points.</p>")
    odd = [r for r in results if r.status in ("flagged", "ungradable")]
    if odd:
        out.append('<h3>Flagged and ungradable submissions</h3><table><thead><tr><th scope="col">student</th>'
                   '<th scope="col">status</th><th scope="col">reasons</th></tr></thead><tbody>')
        for r in sorted(odd, key=lambda r: (r.status, r.student)):
            why = "; ".join([*r.reason, *r.flags]) or "-"
            out.append(f"<tr><td>{_e(r.student)}</td><td>{_e(r.status)}</td><td>{_e(why[:600])}</td></tr>")
        out.append("</tbody></table>")
    out.append(_similar(assignment, similar))
    out.append("</section>")
    return "\n".join(out)


CSS = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 62rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
h1 { font-size: 1.6rem; } h2 { border-top: 2px solid #ccc; padding-top: 1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid #bbb; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
td.n { text-align: right; width: 5rem; } td.ex code { font-size: 0.85rem; }
table.findings td:nth-child(2) { min-width: 11rem; } table.findings td:nth-child(4) { width: 40%; }
code { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
img { max-width: 100%; height: auto; } figure { margin: 0.5rem 0; } figcaption { color: #444; }
table.side { table-layout: fixed; } table.side td { width: 50%; padding: 0; }
pre.code { margin: 0; padding: 0.3rem; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85rem; }
pre.code mark { background: #fde68a; color: #1a1a1a; font-weight: 600; }
"""


def render(results: dict[str, Result], run: dict | None = None, similar: dict | None = None) -> str:
    """The page's HTML from ``{"student/assignment": Result}``, the last run's facts and the alike pairs
    (:func:`attn_grader.reports.similarity.load`)."""
    by_a: dict[str, list[Result]] = {}
    for key in sorted(results):
        by_a.setdefault(results[key].assignment, []).append(results[key])
    head = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Class report</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{CSS}</style></head>"
            "<body><main><h1>Class report</h1>")
    parts = [head]
    if run:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.get("finished", 0)))
        parts.append(f"<p>The last run ({_e(when)}) graded {int(run.get('graded', 0))} submissions in "
                     f"{float(run.get('seconds', 0)):.1f} s on {int(run.get('workers', 0))} worker(s)"
                     f"{'' if run.get('sandbox', True) else ', without the sandbox'}.</p>")
    parts.append(f"<p>{len(results)} submissions of {len(by_a)} assignment(s). Per-student details: "
                 "<code>grading_report.md</code> and <code>feedback/</code>.</p>")
    if not by_a:
        parts.append("<p>Nothing graded yet.</p>")
    parts += [_section(a, rs, (similar or {}).get(a)) for a, rs in sorted(by_a.items())]
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def write(root: str, results: dict[str, Result], run: dict | None = None) -> str:
    """Write ``class_report.html`` (and, given ``run``, remember it for the next report)."""
    from ..files.secret import state_dir

    run_path = os.path.join(state_dir(root), RUN_FILE)
    if run is not None:
        write_atomic(run_path, json.dumps(run), 0o600)
    else:
        try:
            with open(run_path, encoding="utf-8") as f:
                run = json.load(f)
        except (OSError, ValueError):
            run = None
    from . import similarity

    path = os.path.join(root, REPORT_FILE)
    write_atomic(path, render(results, run if isinstance(run, dict) else None, similarity.load(root)))
    return path


def main(argv: list[str] | None = None) -> int:
    from .record import load_results

    p = argparse.ArgumentParser(description="write class_report.html from the stored results")
    p.add_argument("--course", default=".")
    p.add_argument("--screenshot", help="also save the top of the page as this PNG (Chromium, as the book's "
                                        "page for instructors shows it)")
    args = p.parse_args(argv)
    root = os.path.realpath(args.course)
    path = write(root, load_results(root))
    print(path)
    if args.screenshot:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 960, "height": 1480})
            page.goto("file://" + path)
            page.screenshot(path=args.screenshot)
            browser.close()
        print(args.screenshot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
