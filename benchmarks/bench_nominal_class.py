"""One chosen class of a three-class outcome, side by side with AIF360 0.6.1 (issue 25).

Run by hand from the repository root (not collected by pytest)::

    benchmarks/.venv-aif360/bin/python benchmarks/aif360_baseline.py --scan nominal \\
        --penalties 1 1e-17 --directions positive negative --json build/aif360_nominal.json
    .venv/bin/python benchmarks/bench_nominal_class.py --aif360-json build/aif360_nominal.json

For every (class, direction, penalty) AIF360 ran (``bias_scan(mode='nominal',
favorable_value=<class>)`` on ``sample_data/grades.csv``), fairscan runs a spec with
``outcome_type: nominal, positive: <class>, class_probabilities: {A: p_A, B: p_B, C: p_C}``,
the same direction and penalty, 100 restarts, no replicates, and the table shows both subgroups
and penalised scores J = F - penalty * c(S). AIF360 rounds its score to 4 decimals and brackets
q in [1e-3, 1e3]; where the exact q of its subgroup lies inside that bracket the two J agree
to the rounding; where it binds (q at a bracket end) AIF360's score is the bracket's value.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEC = """version: 1
name: nominal-{label}
data: {{path: {csv}}}
attributes: [school, sex, ses, language]
scans:
  - {{id: one-class, type: bias_scan, outcome: grade, outcome_type: nominal, positive: {label},
     class_probabilities: {{A: p_A, B: p_B, C: p_C}}, direction: {direction},
     penalty: {penalty}, restarts: 100}}
significance: {{replicates: 0, seed: 0}}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aif360-json", type=Path, required=True)
    ap.add_argument("--grades", type=Path, default=REPO_ROOT / "sample_data" / "grades.csv")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from fairscan.api import RunOptions, run_audit

    aif = json.loads(args.aif360_json.read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rec in aif["results"]:
            if rec.get("scan") != "nominal":
                continue
            spec = Path(tmp) / "s.audit.yaml"
            spec.write_text(
                SPEC.format(
                    label=rec["class"],
                    csv=args.grades.resolve(),
                    direction=rec["direction"],
                    penalty=f"{float(rec['penalty']):.6e}",  # YAML 1.1 needs the dot
                )
            )
            scan = run_audit(spec, RunOptions(write=False)).report.scans[0]
            f = scan.findings[0] if scan.findings else None
            q = rec.get("q")
            rows.append(
                {
                    "class": rec["class"],
                    "direction": rec["direction"],
                    "penalty": rec["penalty"],
                    "aif360_subgroup": rec["subgroup"],
                    "fairscan_subgroup": f.subgroup if f else {},
                    "same_subgroup": (f.subgroup if f else {}) == rec["subgroup"],
                    "aif360_J": rec["aif360_score"],
                    "exact_J_of_aif360_subgroup": rec["exact_J"],
                    "fairscan_J": f.statistic.value if f else 0.0,
                    "q": q,
                    "bracket_binds": q is not None and not (1e-3 < q < 1e3),
                }
            )
    print(
        "| class | direction | penalty | AIF360 subgroup | fairscan subgroup | AIF360 J | fairscan J | exact J (AIF360's subgroup) | q |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['class']} | {r['direction']} | {r['penalty']:g} | {r['aif360_subgroup']} | "
            f"{'same' if r['same_subgroup'] else r['fairscan_subgroup']} | {r['aif360_J']:.4f} | "
            f"{r['fairscan_J']:.4f} | {r['exact_J_of_aif360_subgroup']:.4f} | "
            f"{r['q']:.4g}{' (bracket binds)' if r['bracket_binds'] else ''} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"aif360_environment": aif["environment"], "rows": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
