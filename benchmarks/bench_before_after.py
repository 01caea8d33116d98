"""Whole ``audit run`` processes, before / after, alternating (issue 29: no slowdown elsewhere).

Cases: the shipped COMPAS FPR audit (``audits/compas-fpr.audit.yaml``, 999 replicates) and the
1,000,000-row, 8-attribute synthetic FPR table of ``bench_mdss.py`` section 3 (a Parquet file,
FPR-Scan, 50 restarts, 19 replicates), read into memory and streamed (``data.streaming:
true``). Each pair runs the ``--before`` sources, then the ``--after`` sources (``PYTHONPATH``);
prints each run's wall time and the load, and the median of the after / before ratios.

    python benchmarks/bench_before_after.py --before /tmp/main/src --after src --pairs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEC_1M = """\
version: 1
name: synthetic-1m
data: {{path: synthetic.parquet, streaming: {streaming}}}
columns: {{outcome: y, recommendation: flagged}}
attributes: [a0, a1, a2, a3, a4, a5, a6, a7]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 50}}
significance: {{replicates: 19, alpha: 0.05, seed: 0}}
output: {{dir: out, formats: [json]}}
"""


def _synthetic(work: Path) -> None:
    import polars as pl

    sys.path.insert(0, str(HERE))
    from bench_mdss import SYN_ATTRS, SYN_CARD, make_synthetic

    codes, outcome, flagged, _ = make_synthetic(1_000_000)
    frame = pl.DataFrame(
        {
            **{
                attr: pl.Series(attr, [f"v{c}" for c in range(k)]).gather(codes[:, j])
                for j, (attr, k) in enumerate(zip(SYN_ATTRS, SYN_CARD, strict=True))
            },
            "y": outcome,
            "flagged": flagged,
        }
    )
    frame.write_parquet(work / "synthetic.parquet")
    for streaming in ("false", "true"):
        (work / f"synthetic-{streaming}.audit.yaml").write_text(SPEC_1M.format(streaming=streaming))


def _run(src: Path, spec: Path, extra: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fairscan.cli", "run", str(spec), "--no-progress", *extra],
        cwd=spec.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{spec} failed:\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT / "src")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/fairscan-bench/before-after"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if not (args.work / "synthetic.parquet").exists():
        _synthetic(args.work)
    compas = ROOT / "audits" / "compas-fpr.audit.yaml"
    cases = {
        "compas-fpr (999 replicates)": (compas, ["--out", str(args.work / "compas-out")]),
        "1M FPR table, in memory": (args.work / "synthetic-false.audit.yaml", []),
        "1M FPR table, streamed": (args.work / "synthetic-true.audit.yaml", []),
    }
    for name, (spec, extra) in cases.items():
        ratios, before, after = [], [], []
        for _ in range(args.pairs):
            load = os.getloadavg()[0]
            b = _run(args.before.resolve(), spec, extra)
            a = _run(args.after.resolve(), spec, extra)
            before.append(b)
            after.append(a)
            ratios.append(a / b)
            print(f"{name}: before {b:.2f} s, after {a:.2f} s (load {load:.1f})", flush=True)
        print(
            f"== {name}: median before {statistics.median(before):.2f} s, after "
            f"{statistics.median(after):.2f} s, median ratio after/before "
            f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
