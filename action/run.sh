#!/usr/bin/env bash
# The GitHub Action's audit step: `audit run` with the venv's python ($FAIRSCAN_RUN_PYTHON),
# keeping its exit code. SUMMARY=true (the default) passes --job-summary, so the Markdown
# report reaches the job summary whatever the specs' output.formats; anything else turns the
# summary off (also for specs that list `github`).
set -uo pipefail
summary=()
if [ "${SUMMARY:-true}" = "true" ]; then
    summary=(--job-summary)
else
    unset GITHUB_STEP_SUMMARY
fi
# word splitting of SPECS and ARGS is intended (several specs, several flags)
# shellcheck disable=SC2086
"$FAIRSCAN_RUN_PYTHON" -m fairscan.cli run --no-progress ${summary[@]+"${summary[@]}"} $SPECS $ARGS
code=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "exit-code=$code" >> "$GITHUB_OUTPUT"
fi
exit "$code"
