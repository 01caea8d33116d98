"""Spec texts shared by the spec tests (imported via the tests/spec directory on sys.path)."""

from __future__ import annotations

# The user-facing contract: must load exactly as written (with the editor modeline on line 1).
COMPAS_SPEC = """\
# yaml-language-server: $schema=../schemas/audit-spec.schema.json
version: 1
name: compas-fpr
data:
  path: compas.csv
  filter: "age >= 18"
columns:
  outcome: y
  prediction: p
  recommendation: p_bin
attributes: [sex, race, age_cat, c_charge_degree, priors]
discretize: {age: {quantiles: 5}}
scans:
  - {id: fpr, type: fpr_scan, penalty: 1, restarts: 100}
  - {id: tpr, type: tpr_scan}
  - {id: calib, type: bias_scan, direction: negative}
significance: {replicates: 999, alpha: 0.05, seed: 0}
output: {dir: reports, formats: [json, markdown]}
"""
# line numbers in COMPAS_SPEC
LINE = {
    "version": 2,
    "name": 3,
    "data": 4,
    "data.path": 5,
    "columns": 7,
    "columns.outcome": 8,
    "attributes": 11,
    "discretize": 12,
    "scans": 13,
    "scans[0]": 14,
    "scans[1]": 15,
    "scans[2]": 16,
    "significance": 17,
    "output": 18,
}


def replace(old: str, new: str, text: str = COMPAS_SPEC) -> str:
    """COMPAS_SPEC with one exact substring replaced (fails loudly if it is not there)."""
    assert old in text, old
    return text.replace(old, new, 1)
