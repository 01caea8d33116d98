"""The history page (issue 35) from a real history file, and in headless Chromium (like the HTML
report's browser test): a finding resolved in one run and absent in another, a monitored
subgroup that alarms, the table of runs."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_report_html import (
    CHROMIUM_FLAGS,
    _has_colour,
    _parse,
    chromium,
    decode_png,
    load_in_chromium,
)

from fairscan.report.history_html import LINE, THRESHOLD, history_html
from fairscan.run.history import SCHEMA, read_history, read_monitor, read_runs

__all__ = ["chromium"]  # the session fixture, shared with the HTML report's tests

ROOT = Path(__file__).resolve().parents[2]
NAME = "credit <weekly>"
KEY = '{"sex": ["male"], "education": ["<b>university</b>"]}'
# run: (verdict, exit code, rows); finding per run: (label, baseline label, p, significant,
# inside) or None (no record: a gap); monitored subgroup per run: (label, evidence, alarm)
RUNS = [
    ("findings", 1, 10_000, ("found", None, 1e-6, 1, 0.31), ("new", 1.0, None)),
    ("findings", 1, 10_400, ("found", "persists", 2e-5, 1, 0.29), ("inconclusive", 9.0, None)),
    ("clean", 0, 9_800, ("found", "resolved", 0.62, 0, 0.16), ("inconclusive", 4.0, None)),
    ("clean", 0, 10_100, None, ("inconclusive", 2.5, None)),
    ("findings", 1, 10_300, ("found", "new", 3e-4, 1, 0.27), ("persists", 3100.0, "evidence")),
    ("findings", 1, 10_200, ("found", "persists", 1e-5, 1, 0.30), ("persists", 9e4, None)),
]
THRESHOLD_E = 2100.0  # 42 processes at alpha 0.02 (K / alpha)


def _history(path: Path) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA)  # the monitor tables included
        db.execute("ALTER TABLE runs ADD COLUMN rows INTEGER")
        best = 1.0
        for i, (verdict, code, rows, found, evidence) in enumerate(RUNS, 1):
            db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, 'a', ?, ?, ?, '0.1', ?)",
                (i, f"2026-0{i}-01T06:00:00Z", NAME, f"{i:02d}" * 32, verdict, code, rows),
            )
            if found is not None:
                label, retest, p, sig, inside = found
                db.execute(
                    "INSERT INTO findings VALUES (?, 'fpr', 'fpr_scan', ?, ?, ?, 3.0, ?, ?,"
                    " 'false positive rate', ?, 0.15)",
                    (i, KEY, f"sex = male & <b>{label}</b>", retest, p, sig, inside),
                )
            label, e, alarm = evidence
            best = max(best, e)
            db.execute(
                "INSERT INTO monitor_runs VALUES (?, ?, 'fpr', 'subgroup', ?, ?, ?, ?, ?, ?)",
                (i, "fpr|subgroup|" + KEY, KEY, label, e, min(1.0, 1 / best), THRESHOLD_E, alarm),
            )
            db.execute(
                "INSERT INTO monitor_runs VALUES (?, 'fpr|scan', 'fpr', 'scan', '{}', ?, ?, 1.0,"
                " ?, NULL)",
                (i, "inconclusive", 0.8 + 0.05 * i, THRESHOLD_E),
            )
        db.commit()
    return path


def _page(tmp_path: Path) -> str:
    path = _history(tmp_path / "history.sqlite")
    return history_html(read_history(path), 0.05, runs=read_runs(path), monitor=read_monitor(path))


def _classes(tree, tag: str) -> list[str]:
    return [a.get("class") or "" for t, a, _ in tree.tags if t == tag]


def test_page_series_gaps_threshold_and_runs_table(tmp_path: Path) -> None:
    html = _page(tmp_path)
    assert "&lt;b&gt;" in html and "<b>" not in html  # labels and keys escaped
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert html.count('<section class="series monitor"') == 2  # the subgroup and the scan
    assert html.count('<section class="series finding"') == 1  # one identity, labels changed
    # the finding: runs 1-3 joined, run 4 a gap, runs 5-6 joined (in the p and effect charts)
    assert html.count('class="gap"') == 2 and html.count('class="segment"') >= 2 * 2
    assert html.count(">resolved</text>") == 1 and html.count('class="alarm"') == 1
    assert "alarm threshold 2,100" in html and html.count('class="threshold"') == 2 + 1
    assert ">2026-04-01</text>" in html  # dates under the x axis
    assert "10,400" in html and "2026-02-01 06:00:00" in html  # rows and dates in the table


def _dom(browser: str, page: Path, profile: Path) -> str:
    done = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_history_page_in_headless_chromium(chromium: str, tmp_path: Path) -> None:
    """The page after load in Chromium: two monitored series, one finding, the gap, the alarm
    threshold and the alarm, six runs in the table; the screenshot paints them."""
    page = tmp_path / "history.html"
    page.write_text(_page(tmp_path), encoding="utf-8")
    tree = _parse(_dom(chromium, page.resolve(), tmp_path / "profile-dom"))
    sections = _classes(tree, "section")
    assert sections.count("series monitor") == 2 and sections.count("series finding") == 1
    lines = _classes(tree, "line")
    assert lines.count("gap") == 2 and lines.count("threshold") == 3
    assert _classes(tree, "path").count("alarm") == 1
    rows = [t for t, _, _ in tree.tags if t == "tr"]
    assert len(rows) == 1 + len(RUNS)
    png = tmp_path / "history.png"  # kept under the test's tmp dir
    console = load_in_chromium(chromium, page, png, tmp_path / "profile", "1000,1500")
    assert console == [], "console messages:\n" + "\n".join(console)
    _, _, pixels = decode_png(png.read_bytes())
    assert pixels.astype(np.float64).mean(axis=2).std() > 5, "screenshot is blank"
    assert _has_colour(pixels, THRESHOLD) > 100  # the alarm thresholds, alarm, red dots
    assert _has_colour(pixels, LINE) > 100  # the series' lines
    if os.environ.get("FAIRSCAN_WRITE_DOCS_IMAGES") == "1":  # refresh the docs' screenshot
        shutil.copyfile(png, ROOT / "docs" / "images" / "history.png")


def test_docs_screenshot_is_committed_and_shown() -> None:
    assert (ROOT / "docs" / "images" / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert re.search(r"!\[[^]]*\]\(images/history\.png\)", ci)
