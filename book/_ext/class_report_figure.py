"""The class report's figure on the instructors' page, drawn when the book builds, in the page's language
(issue 42: it was an old English screenshot naming tasks the assignment no longer has).

    python book/_ext/class_report_figure.py data [COURSE]   # after make grade-demo: the demo class's numbers
                                                            # into book/_static/class_report_demo.json

The numbers are the demo class's (``make grade-demo`` grades eight made-up students with the real grading
path; :func:`demo_numbers` reads its ``grading_results.json`` as the class report does); the figure is the
report's two charts, the totals' histogram and per task the shares of full, partial and zero scores, in
the report's colours.  At each build (``builder-inited``) it is drawn to ``book/_static/class_report.png``,
and in the Chinese build to ``class_report.zh_CN.png``, which Sphinx puts on the Chinese page in its place
(``figure_language_filename``): the texts translated through ``figures.po`` (``i18n.py figures`` keeps
:func:`messages` there), with the CJK font and no missing glyph (attn_book/figures/language.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "book" / "_static"
DATA = STATIC / "class_report_demo.json"
IMAGE = STATIC / "class_report.png"
PAGE = "book/for_instructors"  # the page that shows it (figures.po's location of its messages)
COLOURS = {"full": "#009E73", "partial": "#E69F00", "zero": "#D55E00"}  # attn_grader/reports/classreport.py's
HATCH = {"full": "", "partial": "//", "zero": ".."}
PRINT = {"dpi": 110, "bbox_inches": "tight"}


def demo_numbers(course: Path) -> dict:
    """The first assignment's totals and per-task (task, full, partial, zero) of a graded course, counted
    as the class report counts them (the graded submissions; full within 1e-9 of the task's maximum)."""
    from attn_grader.reports.record import load_results

    results = list(load_results(str(course)).values())
    if not results:
        raise SystemExit(f"no grading_results.json under {course}: run make grade-demo first")
    assignment = sorted({r.assignment for r in results})[0]
    graded = [r for r in results if r.assignment == assignment and r.status != "ungradable"]
    tasks = next((r.tasks for r in graded if r.tasks), [])
    rows = []
    for gid in tasks:
        mx = max((r.max.get(gid, 0.0) for r in graded), default=0.0)
        scores = [r.scores.get(gid, 0.0) for r in graded if gid in r.tasks]
        full = sum(s >= mx - 1e-9 for s in scores)
        zero = sum(s <= 1e-9 for s in scores) if mx > 0 else 0
        rows.append([gid.split(".")[-1].removesuffix("_test"), full, len(scores) - full - zero, zero])
    return {"assignment": assignment, "students": sum(r.assignment == assignment for r in results),
            "max_total": max(r.max_total for r in graded), "totals": sorted(r.total for r in graded),
            "tasks": rows, "made_by": "make grade-demo, then python book/_ext/class_report_figure.py data"}


def draw(numbers: dict):
    """The figure (English): the totals' histogram beside the per-task shares."""
    from matplotlib.figure import Figure

    tasks = numbers["tasks"]
    fig = Figure(figsize=(10, 0.9 + 0.45 * max(len(tasks), 4)))
    hist, shares = fig.subplots(1, 2, width_ratios=[1, 1.3])
    max_total = numbers["max_total"]
    whole = float(max_total).is_integer() and max_total <= 40
    hist.hist(numbers["totals"], bins=[x - 0.5 for x in range(int(max_total) + 2)] if whole else 10,
              color="#0072B2", edgecolor="white")
    hist.set_xlabel(f"total points (of {max_total:g})")
    hist.set_ylabel("students")
    hist.set_title("totals of the graded submissions", fontsize=10)
    hist.yaxis.get_major_locator().set_params(integer=True)
    names = [t[0] for t in tasks][::-1]
    left = [0.0] * len(tasks)
    for k, key in enumerate(("full", "partial", "zero")):
        vals = [t[1 + k] / max(sum(t[1:]), 1) for t in tasks][::-1]
        shares.barh(names, vals, left=left, color=COLOURS[key], label=key, edgecolor="white", hatch=HATCH[key])
        left = [a + b for a, b in zip(left, vals, strict=True)]
    shares.set_xlim(0, 1)
    shares.set_xlabel("share of the graded submissions")
    shares.set_title("per task: full, partial and zero scores", fontsize=10, pad=22)
    shares.legend(ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=9)
    for ax in (hist, shares):
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    return fig


def messages(numbers: dict | None = None) -> list[str]:
    """The figure's catalogue messages (figures.po)."""
    from attn_book.figures import language

    return language.figure_messages(draw(numbers or json.loads(DATA.read_text(encoding="utf-8"))))


def write(language_code: str | None) -> Path:
    """The figure as ``class_report.png`` (English) or ``class_report.<language>.png``."""
    from IPython.core.pylabtools import print_figure

    from attn_book.figures import language

    fig = draw(json.loads(DATA.read_text(encoding="utf-8")))
    if language_code and language_code.startswith("zh"):
        png, _texts, missing = language.render_chinese(fig, language.load_catalogue(), PRINT)
        if missing:
            raise ValueError(f"class report figure: texts {missing} are not in {language.CATALOGUE.name}: "
                             "make translations, then translate them")
        path = IMAGE.with_suffix(f".{language_code}.png")
    else:
        png, path = print_figure(fig, fmt="png", **PRINT), IMAGE
    if not path.is_file() or path.read_bytes() != png:
        path.write_bytes(png)
    return path


def on_builder_inited(app) -> None:
    write(app.config.language if (app.config.language or "").startswith("zh") else None)


def setup(app):
    app.connect("builder-inited", on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if sys.argv[1:2] != ["data"]:
        raise SystemExit(__doc__)
    course = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "_build" / "grade-demo"
    sys.path.insert(0, str(ROOT))
    DATA.write_text(json.dumps(demo_numbers(course), indent=1) + "\n", encoding="utf-8")
    print(DATA.relative_to(ROOT))
