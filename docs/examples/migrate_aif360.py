# Runs from the repository root: python docs/examples/migrate_aif360.py (the test suite does)
import polars as pl

import fairscan

df = pl.read_csv("sample_data/credit.csv")
attributes = ["sex", "ethnicity", "age_group", "region"]

# Calibration: where are the predicted probabilities over-estimated? (AIF360: overpredicted=True)
report = fairscan.audit(
    df,
    outcome="default",
    prediction="score",
    attributes=attributes,
    scans=[{"id": "calibration", "type": "bias_scan", "direction": "negative", "penalty": 1}],
    significance={"replicates": 199, "seed": 0},  # 999 (the default) for the audit you keep
)
finding = report.scans[0].findings[0]
print(finding.subgroup)  # {'ethnicity': ['C'], 'age_group': ['18-24']}: attribute -> values
print(finding.statistic.value, finding.detail["q"])  # penalised score, odds multiplier q
print(finding.p_value, finding.significant)  # the search-corrected p-value

# FPR-Scan: no filtering or constant expectations by hand (AIF360: overpredicted=False)
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=attributes,
    scans=[{"id": "fpr", "type": "fpr_scan", "penalty": 1}],
    significance={"replicates": 199, "seed": 0},
)
print(report.findings.select("label", "size", "effect_inside", "effect_reference", "p_value"))

# Given subgroups, no search (AIF360: mdss_bias_score)
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
