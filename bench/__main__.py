"""``python -m bench [--quick] [--only NAME ...] [--busy N] [--output PATH]``: see :mod:`bench`."""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from attn_book.timing import busy_processes

from . import Row, format_results, format_table, machine_description, parse_results
from .figures import FIGURES, QUICK_SKIPS, REPO, TITLES


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m bench", description="ratios measured side by side")
    p.add_argument("--quick", action="store_true", help="smaller sizes, no book build, a small class")
    p.add_argument("--only", action="append", choices=sorted(FIGURES), help="run only this figure (repeatable)")
    p.add_argument("--busy", type=int, default=0, metavar="N",
                   help="run N CPU-bound processes beside the figures, as on a busy machine (the book build "
                        "must still succeed; the times grow)")
    p.add_argument("--output", default=os.path.join(REPO, "bench", "results.md"),
                   help="where to write the table (default bench/results.md); '-' to print only")
    args = p.parse_args(argv)
    names = args.only or [n for n in FIGURES if not (args.quick and n in QUICK_SKIPS)]
    machine = machine_description()
    if args.busy:
        machine["busy processes beside the run (--busy)"] = str(args.busy)
    for k, v in machine.items():
        print(f"{k}: {v}", flush=True)
    rows: list[Row] = []
    t_start = time.perf_counter()
    with busy_processes(args.busy):
        for name in names:
            t0 = time.perf_counter()
            print(f"\n== {name} ...", flush=True)
            try:
                new = FIGURES[name](args.quick)
            except Exception as exc:  # noqa: BLE001 - one broken figure must not lose the others
                traceback.print_exc()
                new = [Row(name, "", "—", "", None, f"failed: {type(exc).__name__}: {exc}")]
            rows += new
            print(format_table(new), flush=True)
            print(f"({time.perf_counter() - t0:.0f} s)", flush=True)
    seconds = time.perf_counter() - t_start
    print("\n" + format_table(rows))
    if args.output != "-":
        runs: list[str] = []
        if args.only and os.path.exists(args.output):  # keep the other figures' rows of the earlier runs
            with open(args.output) as f:
                old_rows, runs = parse_results(f.read())
            fresh = {TITLES[n] for n in names}
            order = list(TITLES.values())
            kept = [r for r in old_rows if r.figure not in fresh]
            rows = sorted(kept + rows, key=lambda r: order.index(r.figure) if r.figure in order else len(order))
        with open(args.output, "w") as f:
            f.write(format_results(rows, machine, seconds, argv, runs))
        print(f"\nwritten to {os.path.relpath(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
