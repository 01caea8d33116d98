# Runs from the repository root: python docs/examples/migrate_fairlearn.py (the test suite does)
import polars as pl

import fairscan

df = pl.read_csv("sample_data/credit.csv")

# Every ethnicity x age group intersection (and each attribute alone), like MetricFrame's
# by_group, with the gap to the overall rate tested: flagged when above 0.05, FDR 10%.
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=["ethnicity", "age_group"],
    scans=[
        {
            "id": "fpr-flags",
            "type": "flag",
            "metric": "fpr",
            "target": "overall",
            "groups": {"attributes": ["ethnicity", "age_group"], "max_order": 2},
            "tolerance": 0.05,
        }
    ],
    significance={"alpha": 0.1, "seed": 0},
)
print(
    report.findings.select("label", "size", "effect_inside", "effect_reference", "adjusted_p_value")
)

# Simultaneous 90% lower bounds on each ethnicity's FPR gap to the overall rate; the groups
# certified above 0 are the findings (every group's bound is in the report)
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=["ethnicity"],
    scans=[
        {
            "id": "fpr-bounds",
            "type": "certify",
            "metric": "fpr",
            "target": "overall",
            "groups": {"attributes": ["ethnicity"], "max_order": 1},
            "bound": "lower",
        }
    ],
    significance={"alpha": 0.1, "seed": 0},
)
print(report.findings.select("label", "statistic", "statistic_value"))

# The subgroup nobody listed: search every intersection of all four attributes
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=["sex", "ethnicity", "age_group", "region"],
    scans=[{"id": "fpr", "type": "fpr_scan", "penalty": 1}],
    significance={"replicates": 199, "seed": 0},
)
print(report.findings.select("label", "size", "effect_inside", "p_value", "significant"))
