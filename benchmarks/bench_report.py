"""Benchmark: the HTML report of a full run — size, build time, time to interactive, search.

A synthetic but realistic full run (every overload of native_functions.yaml padded to
--overloads, default 3,700, × 7 checks; messages and repros as the engine writes them) from
tests/data/reports/synth.py is rendered and loaded in headless Chromium.

Targets (issue 5): report ≤ 5 MB; interactive in ≤ 2 s. Anchors measured in the same run:
  * build: ``pandas.read_json(lines=True)`` of the same results file (just parsing it);
  * load:  the same browser loading a blank page.

    python benchmarks/bench_report.py [--overloads 3700] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "reports"))
sys.path.insert(0, str(ROOT / "tests" / "reports"))  # the headless-Chromium driver the browser tests use

import synth  # noqa: E402
from chromium import CHROMIUM, Chromium, available  # noqa: E402

import reports  # noqa: E402

SIZE_TARGET = 5 * 1024 * 1024
TTI_TARGET_S = 2.0


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overloads", type=int, default=3700)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="keep the generated files in DIR")
    args = ap.parse_args(argv)

    import pandas as pd

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-report-"))
    results, coverage = synth.generate(str(work), n_overloads=args.overloads, seed=0)
    n_records = sum(1 for _ in open(results, encoding="utf-8")) - 1
    out = work / "report.html"
    print(f"synthetic full run: {args.overloads:,} overloads, {len(synth.CHECKS)} checks, "
          f"{n_records:,} verdict records, results {Path(results).stat().st_size / 1e6:.1f} MB")

    anchor_build = _median_time(lambda: pd.read_json(results, lines=True), args.repeat)
    build = _median_time(lambda: reports.write_html([results], out, coverage), args.repeat)
    size = out.stat().st_size
    print(f"build:  {build:.2f} s  (anchor pandas.read_json of the results: {anchor_build:.2f} s;"
          f" ratio {build / anchor_build:.1f}x)")
    print(f"size:   {size / 1024 / 1024:.2f} MB  (target <= {SIZE_TARGET / 1024 / 1024:.0f} MB: "
          f"{'OK' if size <= SIZE_TARGET else 'OVER'})")

    if not available():
        print(f"browser: skipped — {CHROMIUM} not found (apt-get install chromium)")
        return 0 if size <= SIZE_TARGET else 1

    blank = work / "blank.html"
    blank.write_text("<!DOCTYPE html><title>blank</title><p>blank</p>")
    tti, walls, blanks, searches, scrolls = [], [], [], [], []
    with Chromium(width=1440, height=900) as browser:
        for _ in range(args.repeat):
            t = time.perf_counter()
            browser.open(blank)
            blanks.append(time.perf_counter() - t)

            t = time.perf_counter()
            page = browser.open(out)
            page.wait_for("window.__report && window.__report.ready", timeout=30)
            walls.append(time.perf_counter() - t)
            tti.append(page.eval("window.__report.readyAt") / 1000.0)
            assert page.eval("window.__report.rows") == args.overloads
            # search: type-to-render time for a few queries, measured in the page
            searches.append(page.eval("""(function(){
              var box = document.getElementById('search'), worst = 0;
              ['a', 'ad', 'add', '/^(add|mul)_?\\\\./', 'conv', ''].forEach(function(q){
                var t = performance.now();
                box.value = q; box.dispatchEvent(new Event('input'));
                worst = Math.max(worst, performance.now() - t);
              });
              return worst; })()"""))
            scrolls.append(page.eval("""(function(){
              var s = document.getElementById('view-matrix'), worst = 0;
              for (var k = 1; k <= 20; k++) {
                var t = performance.now();
                s.scrollTop = k * 4000; s.dispatchEvent(new Event('scroll'));
                window.dispatchEvent(new Event('resize'));  /* forces a synchronous re-render */
                worst = Math.max(worst, performance.now() - t);
              }
              return worst; })()"""))
            errors = page.errors()
            if errors:
                print("page errors:", errors)
                return 1
    t_tti, t_wall, t_blank = (statistics.median(x) for x in (tti, walls, blanks))
    print(f"load:   interactive at {t_tti:.2f} s after navigation start (page's performance.now());"
          f" {t_wall:.2f} s wall from navigate to ready (anchor blank page: {t_blank:.2f} s;"
          f" ratio {t_wall / t_blank:.1f}x)  target <= {TTI_TARGET_S:.0f} s: "
          f"{'OK' if max(t_tti, t_wall) <= TTI_TARGET_S else 'OVER'}")
    print(f"search: worst keystroke-to-rendered {max(searches):.1f} ms over 6 queries "
          f"× {args.repeat} runs ({args.overloads:,} rows)")
    print(f"scroll: worst re-render {max(scrolls):.1f} ms (virtualized rows)")
    if args.keep:
        print(f"files kept in {work}")
    ok = size <= SIZE_TARGET and max(t_tti, t_wall) <= TTI_TARGET_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
