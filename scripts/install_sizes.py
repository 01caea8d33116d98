"""Installed size of fairscan's base install and of each extra, each in a fresh virtual
environment (uv, wheels from the package index), printed as the Markdown table of
docs/install.md's "Install sizes" section.

    python scripts/install_sizes.py [--wheel dist/fairscan-*.whl] [EXTRA ...]

Each environment gets pyproject.toml's runtime dependencies (plus the extra's), then fairscan
itself from ``--wheel`` without dependencies (else its size is left out: about 2 MB of kernels
and Python). The size is that of the environment's site-packages, minus an empty environment's
(pip, setuptools); files are copied, not linked from uv's cache, so each is counted. The base
row also says whether pyarrow, pandas or Ibis came with it (a base install must bring none).

Needs ``uv`` on PATH (``pip install uv``) and network access to the package index.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the heavy modules a base install must not bring (issue 38)
NOT_IN_BASE = ("pyarrow", "pandas", "ibis")
MB = 10**6


def project() -> dict[str, object]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages")) or sorted(
        venv.glob("Lib/site-packages")
    )
    return found[0]


def tree_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            file = Path(root, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def build_venv(uv: str, venv: Path, requirements: list[str], wheel: Path | None) -> None:
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "UV_LINK_MODE": "copy"}
    python = os.environ.get("PYTHON", sys.executable)
    subprocess.run([uv, "venv", "--quiet", "--python", python, str(venv)], check=True, env=env)
    if requirements:
        subprocess.run([uv, "pip", "install", "--quiet", *requirements], check=True, env=env)
    if wheel is not None:
        subprocess.run(
            [uv, "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True, env=env
        )


def measure(
    uv: str, work: Path, name: str, requirements: list[str], wheel: Path | None
) -> tuple[float, list[str]]:
    venv = work / name
    build_venv(uv, venv, requirements, wheel)
    site = site_packages(venv)
    present = [m for m in NOT_IN_BASE if (site / m).is_dir()]
    size = tree_bytes(site)
    shutil.rmtree(venv)
    return size / MB, present


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extras", nargs="*", help="extras to measure (default: all)")
    parser.add_argument("--wheel", type=Path, help="a built fairscan wheel to install (no deps)")
    args = parser.parse_args()
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    meta = project()
    base: list[str] = list(meta["dependencies"])  # type: ignore[call-overload]
    extras: dict[str, list[str]] = meta["optional-dependencies"]  # type: ignore[assignment]
    chosen = args.extras or sorted(extras)
    with tempfile.TemporaryDirectory(prefix="fairscan-sizes-") as tmp:
        work = Path(tmp)
        empty, _ = measure(uv, work, "empty", [], None)
        base_mb, present = measure(uv, work, "base", base, args.wheel)
        base_mb -= empty
        print("| install | size (MB) | adds to the base (MB) |")
        print("|---|---:|---:|")
        print(f"| `fairscan` (base) | {base_mb:.0f} | |")
        for extra in chosen:
            mb, _ = measure(uv, work, extra, [*base, *extras[extra]], args.wheel)
            mb -= empty
            print(f"| `fairscan[{extra}]` | {mb:.0f} | {mb - base_mb:.0f} |", flush=True)
    if present:
        print(f"\nthe base install brought {', '.join(present)}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
