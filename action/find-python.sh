#!/usr/bin/env bash
# The GitHub Action's first step: which Python to install fairscan with, without touching the
# Python of the user's job. Writes `python=PATH` to $GITHUB_OUTPUT: $FAIRSCAN_PYTHON when given
# (a command or a path), else the first of `python3` and `python` on PATH that is new enough
# (fairscan's requires-python) and can make a venv. Empty when none fits: the action then has
# actions/setup-python install one without putting it on PATH (update-environment: false).
set -euo pipefail
minimum_major=3
minimum_minor=11
if [ -n "${FAIRSCAN_PYTHON:-}" ]; then
    candidates=("$FAIRSCAN_PYTHON")
else
    candidates=(python3 python)
fi
found=""
for candidate in "${candidates[@]}"; do
    path=$(command -v "$candidate" 2>/dev/null) || continue
    # venv and ensurepip: Debian's python3 without python3-venv cannot make a venv
    if "$path" -c "import sys, venv, ensurepip; sys.exit(sys.version_info < ($minimum_major, $minimum_minor))" 2>/dev/null; then
        found=$path
        break
    fi
    echo "fairscan: $path is older than Python $minimum_major.$minimum_minor or cannot make a venv; not used" >&2
done
if [ -n "${FAIRSCAN_PYTHON:-}" ] && [ -z "$found" ]; then
    echo "::error title=fairscan action::the python input ($FAIRSCAN_PYTHON) is not a Python $minimum_major.$minimum_minor+ that can make a venv" >&2
    exit 2
fi
if [ -n "$found" ]; then
    echo "fairscan: installing with $found ($("$found" --version 2>&1))" >&2
else
    echo "fairscan: no Python $minimum_major.$minimum_minor+ on PATH; actions/setup-python will install one, off PATH" >&2
fi
echo "python=$found" >> "$GITHUB_OUTPUT"
