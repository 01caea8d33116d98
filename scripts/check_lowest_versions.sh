#!/usr/bin/env bash
# The declared floors are true (issue 38). In fresh virtual environments (uv):
#
# 1. the base install at the lowest versions pyproject.toml allows (uv --resolution
#    lowest-direct), with neither Ibis, DuckDB, pandas, pyarrow nor scikit-learn importable: the
#    demo and a streamed Parquet audit (prepared by polars);
# 2. the same environment plus the `sql` and `models` extras (Ibis, DuckDB, sqlglot and
#    scikit-learn at their floors) and the test tools: the same two audits give the same
#    reports (DuckDB now prepares the stream), then
#    a smoke subset of the tests that touch each dependency (spec loading, eager and streamed
#    preparation, the kernels, reports, the CLI), not the whole suite again;
# 3. the newest polars 1.x and the newest polars: the demo and the streamed audit give the same
#    reports with both (JSON compared without timings and versions).
#
#     scripts/check_lowest_versions.sh [VENV]        (default .venv-lowest; uv from PyPI)
#
# Needs `uv` on PATH or in the project venv (`pip install uv`); run from a checkout whose kernels
# are not built in place by another interpreter (the editable install builds them).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(realpath -m "${1:-.venv-lowest}")
UV=$(command -v uv || echo .venv/bin/uv)
PY=${PYTHON:-python3}
WORK=$VENV/work
SMOKE=(
    tests/spec/test_spec_load.py
    tests/data/test_data_prepare.py
    tests/data/test_data_stream.py
    tests/data/test_data_engine_parity.py
    tests/engine/test_kernel_golden.py
    tests/engine/test_fixed_subgroup.py
    tests/report/test_report_formats.py
    tests/cli/test_cli_run.py
)

venv() {  # a fresh environment: venv DIR
    rm -rf "$1"
    "$UV" venv --quiet --python "$PY" "$1"
}

audits() {  # the demo and the streamed Parquet audit, reports under OUT: audits PYTHON OUT
    local python=$1 out=$2 bin
    bin=$(dirname "$python")
    "$bin/audit" run audits/sample.audit.yaml --out "$out/demo" --no-progress --replicates 49 \
        > /dev/null || [ $? -eq 1 ]
    test -s "$out/demo/sample-credit.json"
    "$bin/audit" run "$WORK/streamed.audit.yaml" --out "$out/streamed" --no-progress > /dev/null \
        || [ $? -eq 1 ]
    test -s "$out/streamed/streamed-parquet.json"
}

same() {  # same reports: same BEFORE AFTER [compare_reports options]
    "$VENV/bin/python" scripts/compare_reports.py "$@"
}

venv "$VENV"
mkdir -p "$WORK"
export VIRTUAL_ENV=$VENV
echo "== 1. base install, lowest direct versions"
"$UV" pip install --quiet --resolution lowest-direct -e .
"$UV" pip freeze --exclude-editable > "$VENV/floors.txt"
grep -iE '^(typer|pydantic|pyyaml|polars|numpy|scipy|rich|threadpoolctl|joblib)==' \
    "$VENV/floors.txt"
for module in ibis duckdb pandas pyarrow sqlglot sklearn; do
    if "$VENV/bin/python" -c "import $module" 2> /dev/null; then
        echo "the base install brought $module" >&2
        exit 1
    fi
done
"$VENV/bin/python" - "$WORK" << 'EOF'
import sys
from pathlib import Path

import polars as pl

work = Path(sys.argv[1])
(work / "parts").mkdir(exist_ok=True)
credit = pl.read_csv("sample_data/credit.csv")
for i, part in enumerate(credit.iter_slices(5000)):
    part.write_parquet(work / "parts" / f"part-{i}.parquet")
(work / "streamed.audit.yaml").write_text(f"""\
version: 1
name: streamed-parquet
data:
  path: {(work / "parts").resolve()}
  filter: "region != 'East'"
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, income]
discretize:
  income: {{quantiles: 4}}
scans:
  - {{id: fpr, type: fpr_scan, restarts: 20}}
  - {{id: calibration, type: bias_scan, direction: negative, restarts: 10}}
significance: {{replicates: 49, seed: 7, workers: 1}}
output: {{formats: [json]}}
""")
EOF
audits "$VENV/bin/python" "$WORK/base"
grep -q '"engine": "polars"' "$WORK/base/streamed/streamed-parquet.json"

echo "== 2. plus fairscan[sql,models] at their floors and the test tools: same reports, smoke tests"
"$VENV/bin/python" scripts/extras.py sql models > "$VENV/sql.txt"
"$UV" pip install --quiet --resolution lowest-direct -r "$VENV/sql.txt" -c "$VENV/floors.txt"
"$UV" pip freeze --exclude-editable > "$VENV/floors.txt"
grep -iE '^(ibis-framework|duckdb|sqlglot|scikit-learn)==' "$VENV/floors.txt"
"$VENV/bin/python" scripts/extras.py test > "$VENV/extras.txt"
"$UV" pip install --quiet -r "$VENV/extras.txt" -c "$VENV/floors.txt"
audits "$VENV/bin/python" "$WORK/sql"
grep -q '"engine": "duckdb"' "$WORK/sql/streamed/streamed-parquet.json"
same "$WORK/base/demo" "$WORK/sql/demo"
same "$WORK/base/streamed" "$WORK/sql/streamed" --ignore-key data_source
"$VENV/bin/python" -m pytest -m "not slow" -q -p no:cacheprovider "${SMOKE[@]}"

echo "== 3. the newest polars 1.x against the newest polars"
for polars in "polars<2" "polars"; do
    "$UV" pip install --quiet --upgrade "$polars"
    "$VENV/bin/python" -c "import polars; print('polars', polars.__version__)"
    audits "$VENV/bin/python" "$WORK/${polars//[<]/}"
done
same "$WORK/polars2" "$WORK/polars" --ignore-key data_source
same "$WORK/polars2/streamed" "$WORK/base/streamed" --ignore-key data_source
echo "== floors proven: base and sql extra at their floors, polars 1.x and 2.x give one report"
