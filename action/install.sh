#!/usr/bin/env bash
# The GitHub Action's install step: fairscan from the action's checkout ($ACTION_PATH) into a
# venv of its own under $RUNNER_TEMP, made with $BASE_PYTHON. Nothing is put on PATH, so the
# user's later steps keep their own python and pip. Writes `python=PATH` (the venv's python)
# to $GITHUB_OUTPUT.
set -euo pipefail
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/fairscan-action-venv"
"$BASE_PYTHON" -m venv "$venv"
if [ -x "$venv/bin/python" ]; then
    python="$venv/bin/python"
else
    python="$venv/Scripts/python.exe" # Windows runners
fi
"$python" -m pip install --quiet --disable-pip-version-check "$ACTION_PATH"
echo "python=$python" >> "$GITHUB_OUTPUT"
