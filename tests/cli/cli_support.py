"""Helpers of the end-to-end CLI tests: synthetic data sets, spec texts, the CLI outcome.

Imported by ``tests/cli/conftest.py`` and the tests as ``cli_support`` (the conftest puts this
folder on ``sys.path``: the tests run with ``--import-mode=importlib``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from typer.testing import Result

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SPEC = ROOT / "audits" / "sample.audit.yaml"
SAMPLE_DATA = ROOT / "sample_data" / "credit.csv"
SCHEMAS = ROOT / "schemas"

TRACEBACK = "Traceback (most recent call last)"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# Fast settings for every run: few replicates (19 is the smallest R whose minimum p-value,
# 1/20, can reach alpha = 0.05) and one worker process.
FAST = ("--replicates", "19", "--workers", "1")


def strict_json(text: str) -> object:
    """``json.loads`` that rejects NaN / Infinity."""

    def reject(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=reject)


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------

BIASED_GROUP = {"region": "S", "age_group": "a"}


def synthetic_frame(n: int = 3000, *, seed: int = 0, bias: bool = False) -> pl.DataFrame:
    """Three categorical attributes, a binary outcome ``y``, a probability ``p`` and a decision
    ``rec``. Without bias, ``p`` is the true probability of ``y`` (0.3 everywhere) and ``rec``
    is drawn with that same probability, independently of ``y`` and of the attributes: no
    subgroup differs from the rest in anything. With ``bias``, rows with region S and age
    group a get ``p`` inflated by +0.35 (and ``rec`` drawn from the inflated ``p``)."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], size=n)
    region = rng.choice(["N", "S", "E", "W"], size=n)
    age_group = rng.choice(["a", "b", "c"], size=n)
    truth = np.full(n, 0.3)
    y = (rng.random(n) < truth).astype(np.int64)
    p = truth.copy()
    if bias:
        p[(region == BIASED_GROUP["region"]) & (age_group == BIASED_GROUP["age_group"])] += 0.35
    rec = (rng.random(n) < p).astype(np.int64)
    return pl.DataFrame(
        {"sex": sex, "region": region, "age_group": age_group, "y": y, "p": p, "rec": rec}
    )


# --------------------------------------------------------------------------------------------
# Spec files
# --------------------------------------------------------------------------------------------

SPEC_TEMPLATE = """\
version: 1
name: {name}
data:
  path: {data}
columns:
  outcome: y
  prediction: p
  recommendation: rec
attributes: [sex, region, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 0.5, restarts: 5}}
  - {{id: calibration, type: bias_scan, direction: negative, penalty: 0.5, restarts: 5}}
significance: {{replicates: 19, alpha: 0.05, seed: 7}}
output: {{dir: reports}}
"""


def spec_text(name: str = "synthetic", data: str = "data.csv") -> str:
    return SPEC_TEMPLATE.format(name=name, data=data)


def line_of(text: str, prefix: str) -> int:
    """1-based number of the first line of ``text`` that starts with ``prefix``."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(prefix):
            return number
    raise AssertionError(f"no line starting with {prefix!r} in:\n{text}")


@dataclass
class Project:
    """A folder holding data files and spec files, as a user would lay them out."""

    root: Path

    def data(self, name: str = "data.csv", frame: pl.DataFrame | None = None, **kw: object) -> Path:
        path = self.root / name
        (frame if frame is not None else synthetic_frame(**kw)).write_csv(path)  # type: ignore[arg-type]
        return path

    def spec(self, text: str, name: str = "synthetic.audit.yaml") -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


# --------------------------------------------------------------------------------------------
# Running the CLI
# --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """A CLI result with ANSI escapes stripped (in case the console detected a colour terminal)."""

    result: Result

    @property
    def code(self) -> int:
        return self.result.exit_code

    @property
    def stdout(self) -> str:
        return _ANSI.sub("", self.result.stdout)

    @property
    def stderr(self) -> str:
        return _ANSI.sub("", self.result.stderr)

    @property
    def output(self) -> str:
        return _ANSI.sub("", self.result.output)


Invoke = Callable[..., Outcome]
