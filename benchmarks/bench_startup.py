"""Start-up benchmark (issue 11): CPU of whole `audit run` processes on a fresh install.

Installs the project with ``pip install <source>`` (a regular, non-editable install that builds
the compiled kernels) into a new virtual environment under ``benchmarks/work/``, then runs the
COMPAS FPR audit (one fpr_scan, penalty 1, 100 restarts, no replicates) in fresh processes:

* the first run after the install (empty caches: no run has happened in that environment);
* ``--runs`` later runs (median and range).

CPU is user + system time of the whole process tree (``os.wait4``), wall the elapsed time.
With ``--aif360`` the same audit runs through AIF360 0.6.1's ``bias_scan`` (whole process:
interpreter, imports, CSV load, scan) in ``benchmarks/.venv-aif360`` (see aif360_baseline.py).

Run from the project venv, after ``make compas`` (build/compas.csv)::

    python benchmarks/bench_startup.py --aif360
    python benchmarks/bench_startup.py --source /path/to/older/checkout --label "numba (5d4c88c)"
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "work"
COMPAS = ROOT / "build" / "compas.csv"
AIF360_PYTHON = ROOT / "benchmarks" / ".venv-aif360" / "bin" / "python"

SPEC = """\
version: 1
name: compas-fpr-startup
data: {{path: {data}}}
columns: {{outcome: two_year_recid, prediction: prob_decile, recommendation: high_risk}}
attributes: [sex, race, age_group, c_charge_degree, priors]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 100}}
significance: {{replicates: 0, seed: 0}}
output: {{dir: reports, formats: [json, markdown]}}
"""

# The same FPR-Scan through AIF360 (inputs as in aif360_baseline.py), timed as a whole process.
AIF360_SCRIPT = """
import sys
import pandas as pd
from aif360.detectors.mdss_detector import bias_scan
attrs = ["sex", "race", "age_group", "c_charge_degree", "priors"]
df = pd.read_csv(sys.argv[1], dtype=dict.fromkeys(attrs, str), keep_default_na=False)
neg = df[df["two_year_recid"] == 0].reset_index(drop=True)
obs = neg["high_risk"].astype(int)
exp = pd.Series(float(obs.mean()), index=obs.index)
subgroup, score = bias_scan(data=neg[attrs].astype(str), observations=obs, expectations=exp,
                            overpredicted=False, scoring="Bernoulli", num_iters=100, penalty=1.0,
                            mode="binary")
print(subgroup, score)
"""


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds of the process and its children, wall seconds); fails on a bad exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = (proc.stdout.read() if proc.stdout else b"") + (
        proc.stderr.read() if proc.stderr else b""
    )
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {code}:\n{out.decode()}")
    return usage.ru_utime + usage.ru_stime, wall


def install(source: Path, venv: Path) -> float:
    """A fresh venv with ``pip install <source>``; returns the install's wall seconds."""
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    start = time.perf_counter()
    subprocess.run([*pip, str(source)], check=True)
    return time.perf_counter() - start


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def bench_fairscan(source: Path, label: str, runs: int) -> list[str]:
    venv = WORK / "startup-venv"
    seconds = install(source, venv)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "fpr.audit.yaml"
        spec.write_text(SPEC.format(data=COMPAS.as_posix()), encoding="utf-8")
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("NUMBA_CACHE_DIR", None)
        cmd = [str(venv / "bin" / "audit"), "run", str(spec), "--quiet"]
        first = timed(cmd, Path(tmp), env)
        later = [timed(cmd, Path(tmp), env) for _ in range(runs)]
        version = [str(venv / "bin" / "audit"), "--version"]
        version_cpu = [timed(version, Path(tmp), env)[0] for _ in range(runs)]
    return [
        f"| {label}: `pip install` (builds the kernels) | — | {seconds:.1f} s |",
        f"| {label}: first `audit run` after the install | **{first[0]:.2f} s** | {first[1]:.2f} s |",
        f"| {label}: later `audit run` (median of {runs}, range) | **{summary([c for c, _ in later])}** "
        f"| {summary([w for _, w in later])} |",
        f"| {label}: `audit --version` (median of {runs}) | {summary(version_cpu)} | — |",
    ]


def bench_aif360(runs: int) -> list[str]:
    if not AIF360_PYTHON.exists():
        raise SystemExit(f"{AIF360_PYTHON} is missing: see benchmarks/aif360_baseline.py")
    cmd = [str(AIF360_PYTHON), "-c", AIF360_SCRIPT, str(COMPAS)]
    results = [timed(cmd, ROOT) for _ in range(runs)]
    return [
        f"| AIF360 0.6.1 `bias_scan` whole process (median of {runs}, range) "
        f"| **{summary([c for c, _ in results])}** | {summary([w for _, w in results])} |"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout to install")
    parser.add_argument("--label", default="fairscan", help="row label for that checkout")
    parser.add_argument("--runs", type=int, default=5, help="later runs to time")
    parser.add_argument("--aif360", action="store_true", help="also time AIF360's bias_scan")
    args = parser.parse_args()
    if not COMPAS.exists():
        raise SystemExit("build/compas.csv is missing: run `make compas` first")
    WORK.mkdir(parents=True, exist_ok=True)
    rows = ["| what | CPU (user + system) | wall |", "|---|---|---|"]
    rows += bench_fairscan(args.source.resolve(), args.label, args.runs)
    if args.aif360:
        rows += bench_aif360(args.runs)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
