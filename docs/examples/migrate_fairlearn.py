# python docs/examples/migrate_fairlearn.py (from the repository root)
import polars as pl

import fairscan

df = pl.read_csv("sample_data/credit.csv")

# Every ethnicity x age group intersection (and each
# attribute alone), as MetricFrame.by_group; a gap to the
# overall FPR above 0.05 is flagged, at an FDR of 10%
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
            "groups": {
                "attributes": ["ethnicity", "age_group"],
                "max_order": 2,
            },
            "tolerance": 0.05,
        }
    ],
    significance={"alpha": 0.1, "seed": 0},
)
print(
    report.findings.select(
        "label", "size", "effect_inside", "adjusted_p_value"
    )
)

# 90% lower bounds on each ethnicity's FPR gap, valid
# for all groups at once; groups certified above 0 are
# the findings (every group's bound is in the report)
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
            "groups": {"attributes": ["ethnicity"]},
            "bound": "lower",
        }
    ],
    significance={"alpha": 0.1, "seed": 0},
)
print(report.findings.select("label", "statistic", "statistic_value"))

# The subgroup nobody listed: search every intersection
# of all four attributes
report = fairscan.audit(
    df,
    outcome="default",
    recommendation="high_risk",
    attributes=["sex", "ethnicity", "age_group", "region"],
    scans=[{"id": "fpr", "type": "fpr_scan", "penalty": 1}],
    significance={"replicates": 199, "seed": 0},
)
print(report.findings.select("label", "size", "p_value"))
