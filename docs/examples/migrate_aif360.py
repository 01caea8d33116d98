# python docs/examples/migrate_aif360.py (from the repository root)
import polars as pl

import fairscan

df = pl.read_csv("sample_data/credit.csv")
attributes = ["sex", "ethnicity", "age_group", "region"]

# Calibration: where are probabilities over-estimated?
report = fairscan.audit(
    df,
    outcome="default",
    prediction="score",
    attributes=attributes,
    scans=[
        {
            "id": "calibration",
            "type": "bias_scan",
            "direction": "negative",  # overpredicted=True
            "penalty": 1,
        }
    ],
    # 999 replicates (the default) for the audit you keep
    significance={"replicates": 199, "seed": 0},
)
finding = report.scans[0].findings[0]
print(finding.subgroup)  # attribute -> selected values
print(finding.statistic.value)  # the penalised score
print(finding.detail["q"])  # the odds multiplier q
print(finding.p_value, finding.significant)

# FPR-Scan: no filtering or constant expectations
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=attributes,
    scans=[{"id": "fpr", "type": "fpr_scan", "penalty": 1}],
    significance={"replicates": 199, "seed": 0},
)
print(report.findings.select("label", "size", "p_value"))

# Given subgroups, no search (mdss_bias_score)
report = fairscan.audit(
    df,
    outcome="default",
    prediction="score",
    attributes=attributes,
    scans=[
        {
            "id": "given",
            "type": "bias_scan",
            "direction": "negative",
            "subgroups": [{"ethnicity": "C", "age_group": "18-24"}],
        }
    ],
    significance={"replicates": 199, "seed": 0},
)
print(report.findings.select("label", "statistic_value", "p_value"))
