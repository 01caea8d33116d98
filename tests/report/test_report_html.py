"""HTML report: structure and charts without a browser, then a real headless Chromium run.

The browser test needs Debian's ``chromium`` on PATH. When it is missing it is installed with
apt-get if running as root with ``CI`` set or ``FAIRSCAN_INSTALL_CHROMIUM=1``; otherwise the
test is skipped with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from typer.testing import CliRunner

from fairscan.report.html import INSIDE, NULL_BARS, render_html
from fairscan.report.models import (
    AuditGroup,
    AuditPlotData,
    AuditReport,
    CertificationResult,
    Environment,
    Finding,
    NullDistribution,
    Population,
    Provenance,
    ScanResult,
    ScanTiming,
    SubrocCover,
    SubrocPattern,
    SubrocResult,
    SubrocRoc,
    Verdict,
)
from fairscan.report.write import render, write_reports
from fairscan.scans.subroc import roc_points

ROOT = Path(__file__).resolve().parents[2]
TIMING = ScanTiming(search_seconds=0.01, significance_seconds=0.1, total_seconds=0.11)
EVIL = "<script>alert('x')</script>"


# --- report builders -----------------------------------------------------------------------


def _finding(subgroup: dict[str, list[str]], score: float) -> Finding:
    return Finding(
        subgroup=subgroup,
        score=score,
        llr=score + 1,
        penalty_cost=1.0,
        size=349,
        observed_count=232,
        expected_count=105.6,
        observed_rate=232 / 349,
        expected_rate=0.3027,
        outside_rate=0.261,
        q=4.57,
        p_value=0.01,
        significant=True,
        null_quantile=8.1,
        description=f"The rows with {subgroup} are flagged more often & {EVIL}.",
    )


def _mdss_scan() -> ScanResult:
    return ScanResult(
        id="fpr",
        type="fpr_scan",
        status="significant",
        parameters={},
        timing=TIMING,
        population=Population(
            description="true negatives",
            size=3363,
            observed_rate=0.3027,
            expected_rate=0.3027,
            observed_label="recommended positive",
        ),
        findings=[_finding({"priors": ["Over 5"]}, 95.8), _finding({"race": [EVIL]}, 40.2)],
        null_distribution=NullDistribution(
            replicates=99,
            alpha=0.05,
            quantile=8.1,
            mean=5.0,
            max=12.0,
            exceed_count=0,
            scores=[float(x) for x in np.linspace(2.0, 12.0, 99)],
        ),
    )


def _flag_scan() -> ScanResult:
    groups = [
        AuditGroup(
            name=name,
            subgroup=None,
            size=100,
            share=0.1,
            estimate=0.3 + gap,
            gap=gap,
            lower=lower,
            upper=None,
            scale=0.1,
            p_value=0.01,
            adjusted_p_value=0.02,
            flagged=flagged,
            status="ok",
        )
        for name, gap, lower, flagged in [
            ("race = African-American", 0.12, 0.08, True),
            (f"group {EVIL}", 0.01, -0.04, False),
            ("sex = Female", -0.05, -0.1, False),
        ]
    ]
    cert = CertificationResult(
        mode="flag",
        metric="fpr",
        metric_description="false positive rate",
        rows=1000,
        population_rows=600,
        target="overall",
        theta=0.3,
        tolerance=0.05,
        side="above",
        alpha=0.1,
        bootstrap=200,
        correction="bh",
        redraws=0,
        sampling="rows",
        groups_total=3,
        groups_tested=3,
        hits=1,
        failed=0,
        groups=groups,
        plot=AuditPlotData(
            group=[g.name for g in groups],
            gap=[g.gap for g in groups],
            lower=[g.lower for g in groups],
            upper=[g.upper for g in groups],
        ),
    )
    return ScanResult(
        id="flags",
        type="flag",
        status="significant",
        parameters={},
        timing=TIMING,
        certification=cert,
    )


def _subroc_scan() -> ScanResult:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    score = y + rng.normal(0, 1, 500)
    overall = roc_points(y, score)
    sub = roc_points(y[:100], score[:100] + rng.normal(0, 2, 100))
    cover = SubrocCover(size=100, positives=50, negatives=50, negative_ratio=0.5, measure=0.7)
    pattern = SubrocPattern(
        rank=1,
        subgroup={"sex": ["Male"]},
        description="sex = Male: roc_auc = 0.70 vs 0.76 overall.",
        score=10.0,
        weighted_score=10.0,
        relative_score=0.06,
        optimistic_estimate=20.0,
        search=cover,
        validation=cover,
        validation_statistic=0.05,
        p_value=0.01,
        adjusted_p_value=0.02,
        significant=True,
        reported=True,
        roc=SubrocRoc(**sub),
    )
    result = SubrocResult(
        measure="roc_auc",
        overall_search=0.76,
        overall_validation=0.75,
        search_rows=500,
        search_positives=int(y.sum()),
        validation_rows=500,
        validation_positives=250,
        candidates_evaluated=10,
        candidates_valid=10,
        pruned=0,
        skipped=0,
        per_level=[],
        subsets=100,
        correction="by",
        alpha=0.05,
        null_distributions=1,
        reported=1,
        patterns=[pattern],
        roc=SubrocRoc(**overall),
    )
    return ScanResult(
        id="weak", type="subroc", status="significant", parameters={}, timing=TIMING, subroc=result
    )


def _report(*scans: ScanResult) -> AuditReport:
    return AuditReport(
        name="html-test",
        description=f"A test report {EVIL}",
        verdict=Verdict(
            status="findings", exit_code=1, significant_findings=2, scans=1, scans_with_errors=0
        ),
        provenance=Provenance(
            tool_version="0.1.0",
            spec_path="s.audit.yaml",
            spec_sha256="a" * 64,
            data_path="d.csv",
            data_sha256="b" * 64,
            data_rows=5000,
            rows_after_filter=5000,
            filter=None,
            seed=0,
            seed_entropy="0",
            utc_time="2024-01-01T00:00:00Z",
            finished_utc_time="2024-01-01T00:00:01Z",
            total_seconds=1.0,
            workers=1,
            parameters={},
            environment=Environment(python="3.11", platform="linux", packages={}),
        ),
        attributes={"priors": ["Over 5"], "race": [EVIL]},
        scans=list(scans),
    )


class _Tree(HTMLParser):
    """Checks nesting (every non-void tag closed in order) and collects tags with attributes."""

    VOID: ClassVar[set[str]] = {
        "meta",
        "br",
        "hr",
        "img",
        "input",
        "link",
        "rect",
        "line",
        "circle",
        "polyline",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), tuple(self.stack)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), tuple(self.stack)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(text: str) -> _Tree:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    assert not tree.errors, tree.errors[:5]
    assert tree.stack == [], tree.stack
    return tree


# --- unit tests (no browser) -----------------------------------------------------------------


def test_html_is_well_formed_and_has_a_bar_chart_and_null_histogram_per_finding():
    report = _report(_mdss_scan())
    text = render_html(report)
    assert text.startswith("<!DOCTYPE html>")
    tree = _parse(text)
    findings = [a for t, a, _ in tree.tags if t == "div" and a.get("class") == "finding"]
    assert len(findings) == 2
    charts = [a.get("data-chart") for t, a, _ in tree.tags if t == "figure"]
    assert charts.count("bars") == 2
    assert charts.count("null") == 2
    # each bar chart: inside, expected and outside bars, with counts
    assert text.count('class="bar"') >= 6
    assert "232 of 349" in text
    assert "786 of 3014" in text  # outside: 0.3027 * 3363 - 232 of 3363 - 349


def test_null_histogram_marks_the_observed_score_and_quantile():
    text = render_html(_report(_mdss_scan()))
    tree = _parse(text)
    observed = [a for t, a, _ in tree.tags if t == "line" and a.get("class") == "observed"]
    assert len(observed) == 2
    assert "observed 95.80" in text and "observed 40.20" in text
    assert any(t == "line" and a.get("class") == "quantile" for t, a, _ in tree.tags)
    # both observed scores exceed every null maximum: their lines sit right of the quantile
    quantiles = [a for t, a, _ in tree.tags if t == "line" and a.get("class") == "quantile"]
    for obs, q in zip(observed, quantiles, strict=True):
        assert float(obs["x1"]) > float(q["x1"])


def test_forest_plot_for_flag_report():
    text = render_html(_report(_flag_scan()))
    tree = _parse(text)
    assert [a.get("data-chart") for t, a, _ in tree.tags if t == "figure"] == ["forest"]
    points = [a for t, a, _ in tree.tags if t == "circle" and a.get("class") == "point"]
    intervals = [a for t, a, _ in tree.tags if t == "line" and a.get("class") == "interval"]
    assert len(points) == len(intervals) == 3
    assert points[0]["fill"] == INSIDE  # the flagged group comes first, in red


def test_roc_curves_for_subroc():
    text = render_html(_report(_subroc_scan()))
    tree = _parse(text)
    assert [a.get("data-chart") for t, a, _ in tree.tags if t == "figure"] == ["roc"]
    curves = [a for t, a, _ in tree.tags if t == "polyline" and a.get("class") == "roc"]
    assert len(curves) == 2
    for curve in curves:
        assert 2 < len(curve["points"].split()) <= 201


def test_roc_points_are_monotone_and_downsampled():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 5000)
    score = rng.normal(size=5000) + y
    pts = roc_points(y, score)
    assert pts is not None
    fpr, tpr = np.array(pts["fpr"]), np.array(pts["tpr"])
    assert len(fpr) <= 200 and len(fpr) == len(tpr)
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    # trapezoid area under the down-sampled curve is close to the exact AUC
    from fairscan.engine.subroc import measure

    assert abs(np.trapezoid(tpr, fpr) - measure(y, score, "roc_auc")) < 0.01
    assert roc_points(np.ones(5), np.arange(5.0)) is None


def test_no_external_resources_and_no_script():
    text = render_html(_report(_mdss_scan(), _flag_scan(), _subroc_scan()))
    tree = _parse(text)
    assert "http://" not in text and "https://" not in text
    assert "//" not in re.sub(r"file:|<!--.*?-->", "", text).replace("</", "")
    for tag, attrs, _ in tree.tags:
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
        assert tag not in {"script", "link", "img", "iframe", "object", "embed"}, tag
    assert "@import" not in text and "url(" not in text


def test_data_strings_are_escaped():
    text = render_html(_report(_mdss_scan(), _flag_scan()))
    tree = _parse(text)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert not any(t == "script" for t, _, _ in tree.tags)
    # the label stays text: the parser sees it as data, in the heading and in the plot labels
    joined = "".join(tree.text)
    assert EVIL in joined
    assert f"race = {EVIL}" in joined


def test_html_format_is_written(tmp_path):
    report = _report(_mdss_scan())
    assert render(report, "html") == render_html(report)
    paths = write_reports(report, tmp_path, ["json", "html"])
    assert [p.name for p in paths] == ["html-test.json", "html-test.html"]


# --- the browser test ------------------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]
# Console messages are logged as "INFO:CONSOLE:1] ..." (or "CONSOLE(1)" in older builds).
CONSOLE = re.compile(r"CONSOLE[(:]|Uncaught")


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    path = _find_chromium()
    if path:
        return path
    wanted = os.environ.get("FAIRSCAN_INSTALL_CHROMIUM") == "1" or bool(os.environ.get("CI"))
    if not wanted or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip(
            "chromium not on PATH (install it with `apt-get install chromium`, or run as root "
            "with CI or FAIRSCAN_INSTALL_CHROMIUM=1 to install it automatically)"
        )
    try:
        subprocess.run(
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium",
            shell=True,
            check=True,
            timeout=300,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"could not install chromium with apt-get: {exc}")
    path = _find_chromium()
    if not path:
        pytest.skip("apt-get install chromium did not put chromium on PATH")
    return path


def load_in_chromium(
    browser: str, page: Path, png: Path, profile: Path, size: str = "1200,2000"
) -> list[str]:
    """Load ``page`` headless, write a screenshot; return the console lines Chromium logged."""
    done = subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={size}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert png.is_file(), f"no screenshot (exit {done.returncode}):\n{done.stderr[-2000:]}"
    return [line for line in done.stderr.splitlines() if CONSOLE.search(line)]


def decode_png(data: bytes) -> tuple[int, int, np.ndarray]:
    """8-bit RGB/RGBA PNG (what Chromium writes) -> (width, height, uint8 array h x w x 3)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for row in range(height):
        start = row * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        else:  # sub, average, paeth depend on the left neighbour: go byte by byte
            cur = np.zeros(stride, dtype=np.int32)
            for i in range(stride):
                a = int(cur[i - bpp]) if i >= bpp else 0
                b = int(prev[i])
                c = int(prev[i - bpp]) if i >= bpp else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (int(line[i]) + pred) & 0xFF
        out[row] = cur
        prev = cur
    return width, height, out.reshape(height, width, bpp)[:, :, :3]


def _has_colour(pixels: np.ndarray, hex_colour: str, tolerance: int = 4) -> int:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(pixels.astype(np.int16) - rgb).max(axis=2) <= tolerance).sum())


@pytest.fixture(scope="session")
def sample_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample audit (audits/sample.audit.yaml) rendered to HTML with few replicates."""
    from fairscan.cli import app

    folder = tmp_path_factory.mktemp("html-sample")
    spec = (ROOT / "audits" / "sample.audit.yaml").read_text(encoding="utf-8")
    data = (ROOT / "sample_data" / "credit.csv").as_posix()
    spec = spec.replace("../sample_data/credit.csv", data)
    spec = re.sub(r"formats: \[[^]]*\]", "formats: [json, html]", spec)
    path = folder / "sample.audit.yaml"
    path.write_text(spec, encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["run", str(path), "--replicates", "19", "--workers", "1", "--out", str(folder), "-q"],
    )
    assert result.exit_code in (0, 1), result.output
    html = folder / "sample-credit.html"
    assert html.is_file(), result.output
    return html


def test_console_detection_catches_errors(chromium, tmp_path):
    """Control: the check below would see a script error if the page had one."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    lines = load_in_chromium(chromium, page, tmp_path / "bad.png", tmp_path / "profile", "300,200")
    assert any("Uncaught" in line for line in lines), lines


def test_sample_report_renders_in_headless_chromium(chromium, sample_html, tmp_path):
    png = tmp_path / "sample.png"
    console = load_in_chromium(chromium, sample_html, png, tmp_path / "profile")
    assert console == [], "console messages:\n" + "\n".join(console)
    width, height, pixels = decode_png(png.read_bytes())
    assert (width, height) == (1200, 2000)
    grey = pixels.astype(np.float64).mean(axis=2)
    assert grey.std() > 10, "screenshot is blank"
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    # the charts painted: the red "inside subgroup" bars and the grey-blue null histogram
    assert _has_colour(pixels, INSIDE) > 200
    assert _has_colour(pixels, NULL_BARS) > 200


COMPAS_AUDITS = sorted(p.name for p in (ROOT / "audits").glob("compas-*.audit.yaml"))


@pytest.mark.shared_data
@pytest.mark.parametrize("spec_name", COMPAS_AUDITS)
def test_compas_audit_reports_render_in_headless_chromium(
    chromium, compas_csv, spec_name, tmp_path
):
    """Issue 7: the HTML report of every COMPAS audit in audits/ loads without console errors."""
    from fairscan.cli import app

    text = (ROOT / "audits" / spec_name).read_text(encoding="utf-8")
    text = text.replace("../build/compas.csv", compas_csv.as_posix())
    text, replaced = re.subn(r"formats: \[[^]]*\]", "formats: [html]", text)
    assert replaced == 1, "every COMPAS audit names its output formats"
    spec = tmp_path / spec_name
    spec.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        app, ["run", str(spec), "--replicates", "9", "--workers", "1", "--out", str(tmp_path), "-q"]
    )
    assert result.exit_code in (0, 1), result.output
    html = next(tmp_path.glob("*.html"))
    png = tmp_path / "page.png"
    console = load_in_chromium(chromium, html, png, tmp_path / "profile", "1000,1400")
    assert console == [], "console messages:\n" + "\n".join(console)
    _, _, pixels = decode_png(png.read_bytes())
    assert pixels.astype(np.float64).mean(axis=2).std() > 10, "screenshot is blank"
