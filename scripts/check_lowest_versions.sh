#!/usr/bin/env bash
# The declared floors are true: install the lowest versions of fairscan's direct runtime
# dependencies that pyproject.toml allows (uv --resolution lowest-direct), the test tools at their
# newest versions that fit, then run the fast test suite and the demo against them.
#
#     scripts/check_lowest_versions.sh [VENV]        (default .venv-lowest; uv from PyPI)
#
# Needs `uv` on PATH or in the project venv (`pip install uv`); run from a checkout whose kernels
# are not built in place by another interpreter (the editable install builds them).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-lowest}
UV=$(command -v uv || echo .venv/bin/uv)
PY=${PYTHON:-python3}
rm -rf "$VENV"
"$UV" venv --quiet --python "$PY" "$VENV"
export VIRTUAL_ENV=$PWD/$VENV
"$UV" pip install --quiet --resolution lowest-direct -e .
"$UV" pip freeze --exclude-editable > "$VENV/floors.txt"
echo "== lowest direct versions:"
grep -iE '^(typer|pydantic|pyyaml|polars|numpy|scipy|rich|scikit-learn|threadpoolctl|joblib)==' "$VENV/floors.txt"
# the test and docs tools at the newest versions that fit the runtime pins
"$VENV/bin/python" scripts/extras.py test docs > "$VENV/extras.txt"
"$UV" pip install --quiet -r "$VENV/extras.txt" -c "$VENV/floors.txt"
"$VENV/bin/audit" run audits/sample.audit.yaml --out "$VENV/reports" --no-progress || [ $? -eq 1 ]
test -s "$VENV/reports/sample-credit.json"
"$VENV/bin/python" -m pytest -m "not slow" -q -p no:cacheprovider
