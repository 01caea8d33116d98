#!/usr/bin/env bash
# A Linux x86_64 wheel that pip installs without a compiler on glibc >= 2.17 (RHEL/CentOS 7+,
# Amazon Linux 2, Ubuntu 18.04+): compiled by zig's C compiler (PyPI package `ziglang`) against
# glibc 2.17's symbols, without OpenMP (no runtime library to vendor: benchmarks/RESULTS.md,
# issue 23), tagged manylinux2014 and checked with `auditwheel show`.
#
#     scripts/build_wheel.sh [OUTDIR]        (default dist/; `make wheel`)
#
# Needs the `release` extra in the running Python: build, wheel, Cython, setuptools, ziglang,
# auditwheel. Release builds for other platforms are .github/workflows/release.yml's
# (cibuildwheel).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-dist}
PY=${PYTHON:-python}
ARCH=$(uname -m)
TARGET="$ARCH-linux-gnu.2.17"
ZIG="$PY -m ziglang cc -target $TARGET"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The sdist first, then the wheel from the unpacked sdist in a temporary directory (what
# `python -m build` does without --wheel): no build/ objects of another compiler are reused, and
# the sdist is shown to build. -O3 and no -ffast-math as in setup.py.
FAIRSCAN_NO_OPENMP=1 CC="$ZIG" LDSHARED="$ZIG -shared" \
    "$PY" -m build --no-isolation --outdir "$WORK" . > "$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log"; exit 1; }
"$PY" -m wheel tags --remove --platform-tag "manylinux_2_17_$ARCH.manylinux2014_$ARCH" "$WORK"/*.whl >/dev/null
mkdir -p "$OUT"
mv "$WORK"/fairscan-*manylinux*.whl "$OUT"/
WHEEL=$(ls -t "$OUT"/fairscan-*manylinux_2_17_"$ARCH"*.whl | head -1)
"$PY" -m auditwheel show "$WHEEL" 2>&1 | grep -v '^INFO'
# the tag must be what auditwheel finds the binaries consistent with
"$PY" -m auditwheel show "$WHEEL" 2>&1 | tr -s ' \n' ' ' | grep -q "consistent with the following platform tag: \"manylinux_2_17_$ARCH\"" ||
    { echo "error: $WHEEL is not manylinux_2_17 compatible" >&2; exit 1; }
echo "$WHEEL"
