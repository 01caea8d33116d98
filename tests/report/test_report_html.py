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
from report_builders import finding, population, report, scan
from typer.testing import CliRunner

from fairscan.report.formats import render, write_reports
from fairscan.report.hooks import RenderHooks
from fairscan.report.html import (
    INSIDE,
    NULL_BARS,
    escape,
    figure,
    forest_plot,
    html_table,
    null_histogram,
    render_html,
    roc_chart,
)
from fairscan.report.models import AuditReport, Finding, NullDistribution, ScanResult

ROOT = Path(__file__).resolve().parents[2]
EVIL = "<script>alert('x')</script>"


# --- report builders -----------------------------------------------------------------------


def _finding(subgroup: dict[str, list[str]], score: float) -> Finding:
    return finding(
        subgroup,
        statistic=("penalised_score", score),
        p_value=0.01,
        description=f"The rows with {subgroup} are flagged more often & {EVIL}.",
    )


def _mdss_scan() -> ScanResult:
    return scan(
        [_finding({"priors": ["Over 5"]}, 95.8), _finding({"race": [EVIL]}, 40.2)],
        population=population(),
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


# A flag-like type whose hook draws the forest plot of its groups from its own detail.
GROUPS = [
    ("race = African-American", 0.12, 0.08, True),
    (f"group {EVIL}", 0.01, -0.04, False),
    ("sex = Female", -0.05, -0.1, False),
]


def _groups_html(s: ScanResult) -> str:
    groups = s.detail["groups"]
    return (
        '<div class="charts">'
        + forest_plot(
            [g["name"] for g in groups],
            [g["gap"] for g in groups],
            [g["lower"] for g in groups],
            [None for _ in groups],
            [g["flagged"] for g in groups],
            s.detail["tolerance"],
            False,
            hit_label="flagged",
            metric="false positive rate",
        )
        + "</div>"
        + html_table(["group", "gap"], [[g["name"], g["gap"]] for g in groups], {1})
    )


def _flag_scan() -> ScanResult:
    detail = {
        "tolerance": 0.05,
        "groups": [
            {"name": n, "gap": gap, "lower": lower, "flagged": hit} for n, gap, lower, hit in GROUPS
        ],
    }
    hit = finding(
        group="race = African-American",
        statistic=("gap", 0.12),
        metric="false positive rate",
        inside=0.42,
        reference=0.30,
        reference_name="overall target",
        expected=None,
        p_value=0.01,
        adjusted_p_value=0.02,
        significant=True,
    )
    return scan([hit], id="flags", type="toy_flag", detail=detail)


def _roc(rng: np.random.Generator, n: int) -> tuple[list[float], list[float]]:
    fpr = np.sort(np.concatenate([[0.0, 1.0], rng.random(n)]))
    tpr = np.sort(np.concatenate([[0.0, 1.0], rng.random(n)]))
    return [float(x) for x in fpr], [float(x) for x in tpr]


def _subroc_scan() -> ScanResult:
    rng = np.random.default_rng(0)
    overall, sub = _roc(rng, 60), _roc(rng, 40)
    pattern = finding(
        {"sex": ["Male"]},
        statistic=("interestingness", 10.0),
        metric="ROC AUC",
        inside=0.70,
        reference=0.76,
        reference_name="overall (validation set)",
        expected=None,
        p_value=0.01,
        adjusted_p_value=0.02,
        detail={"roc": {"fpr": sub[0], "tpr": sub[1]}},
    )
    return scan(
        [pattern],
        id="weak",
        type="toy_subroc",
        detail={"roc": {"fpr": overall[0], "tpr": overall[1]}},
    )


def _roc_finding_html(s: ScanResult, f: Finding) -> str:
    overall = (s.detail["roc"]["fpr"], s.detail["roc"]["tpr"])
    sub = (f.detail["roc"]["fpr"], f.detail["roc"]["tpr"])
    return '<div class="charts">' + roc_chart(overall, sub, f.label) + "</div>"


HOOKS = {
    "toy_flag": RenderHooks(html=_groups_html),
    "toy_subroc": RenderHooks(finding_html=_roc_finding_html),
}


def _report(*scans: ScanResult) -> AuditReport:
    return report(
        *scans,
        name="html-test",
        description=f"A test report {EVIL}",
        attributes={"priors": ["Over 5"], "race": [EVIL]},
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


def _charts(tree: _Tree) -> list[str | None]:
    return [a.get("data-chart") for t, a, _ in tree.tags if t == "figure"]


# --- unit tests (no browser) -----------------------------------------------------------------


def test_html_is_well_formed_and_has_a_bar_chart_and_null_histogram_per_finding():
    report = _report(_mdss_scan())
    text = render_html(report)
    assert text.startswith("<!DOCTYPE html>")
    tree = _parse(text)
    findings = [a for t, a, _ in tree.tags if t == "div" and a.get("class") == "finding"]
    assert len(findings) == 2
    charts = _charts(tree)
    assert charts.count("bars") == 2
    assert charts.count("null") == 2
    # each bar chart: inside, expected and reference bars, with row counts
    assert text.count('class="bar"') >= 6
    assert "66.5% (232 of 349)" in text
    assert "26.1% (n = 3014)" in text
    assert "expected inside" in text and "the other true negatives" in text


def test_bar_chart_without_expectation_or_values():
    f = finding(expected=None, reference_count=None)
    text = render_html(_report(scan([f])))
    tree = _parse(text)
    assert _charts(tree) == ["overview", "bars"]  # no null distribution: no histogram
    assert text.count('class="bar"') == 2
    empty = finding(inside=None, reference=None, expected=None)
    assert _charts(_parse(render_html(_report(scan([empty]))))) == []  # nothing to draw


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


def test_forest_plot_from_a_scan_hook():
    text = render_html(_report(_flag_scan()), HOOKS)
    tree = _parse(text)
    assert _charts(tree) == ["overview", "bars", "forest"]
    points = [a for t, a, _ in tree.tags if t == "circle" and a.get("class") == "point"]
    intervals = [a for t, a, _ in tree.tags if t == "line" and a.get("class") == "interval"]
    assert len(points) == len(intervals) == 3
    assert points[0]["fill"] == INSIDE  # the flagged group comes first, in red
    assert "red = flagged" in text and "Gap of false positive rate" in text
    # without the hook the finding still renders, without the type's chart
    assert _charts(_parse(render_html(_report(_flag_scan())))) == ["overview", "bars"]


def test_forest_plot_two_sided_marks_both_tolerances_and_caps_the_rows():
    names = [f"g{i}" for i in range(5)]
    svg = forest_plot(
        names,
        [0.1] * 5,
        [0.0] * 5,
        [0.2] * 5,
        [True, False] * 2 + [False],
        0.05,
        True,
        max_groups=3,
    )
    tree = _parse(svg)
    dashed = [a for t, a, _ in tree.tags if t == "line" and a.get("stroke") == "#e0a800"]
    assert len(dashed) == 2
    assert len([a for t, a, _ in tree.tags if t == "circle"]) == 3
    assert "Showing 3 of 5 groups (hit first)" in svg


def test_roc_curves_from_a_finding_hook():
    text = render_html(_report(_subroc_scan()), HOOKS)
    tree = _parse(text)
    assert _charts(tree) == ["bars", "roc"]  # ROC AUC is no rate: no overview chart
    curves = [a for t, a, _ in tree.tags if t == "polyline" and a.get("class") == "roc"]
    assert len(curves) == 2
    for curve in curves:
        assert 2 < len(curve["points"].split()) <= 201
    # the ROC chart sits inside the finding's block
    roc = next(stack for t, a, stack in tree.tags if t == "figure" and a.get("data-chart") == "roc")
    assert "div" in roc


def test_public_primitives_escape():
    assert escape("<a href='x'>") == "&lt;a href=&#x27;x&#x27;&gt;"
    table = html_table(["h<1>", "n"], [[EVIL, 1.5]], {1})
    assert "<script>" not in table and '<td class="n">1.5</td>' in table
    fig = figure("<svg></svg>", f"caption {EVIL}", "custom")
    assert 'data-chart="custom"' in fig and "<script>" not in fig
    null = NullDistribution(
        replicates=3,
        alpha=0.1,
        quantile=2.0,
        mean=1.0,
        max=2.5,
        exceed_count=1,
        scores=[0.5, 1.0, 2.5],
    )
    hist = null_histogram(null, 2.0, caption=f"custom {EVIL}")
    assert 'data-chart="null"' in hist and "custom &lt;script&gt;" in hist


def test_roc_points_are_monotone_and_downsampled():
    from fairscan.engine.subroc import measure
    from fairscan.scans.subroc import roc_points

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
    assert abs(np.trapezoid(tpr, fpr) - measure(y, score, "roc_auc")) < 0.01
    assert roc_points(np.ones(5), np.arange(5.0)) is None


def test_no_external_resources_and_no_script():
    text = render_html(_report(_mdss_scan(), _flag_scan(), _subroc_scan()), HOOKS)
    tree = _parse(text)
    assert "http://" not in text and "https://" not in text
    assert "//" not in re.sub(r"file:|<!--.*?-->", "", text).replace("</", "")
    for tag, attrs, _ in tree.tags:
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
        assert tag not in {"script", "link", "img", "iframe", "object", "embed"}, tag
    assert "@import" not in text and "url(" not in text


def test_data_strings_are_escaped():
    text = render_html(_report(_mdss_scan(), _flag_scan()), HOOKS)
    tree = _parse(text)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert not any(t == "script" for t, _, _ in tree.tags)
    # the label stays text: the parser sees it as data, in the heading and in the plot labels
    joined = "".join(tree.text)
    assert EVIL in joined
    assert f"race = {EVIL}" in joined
    assert f"group {EVIL}" in joined


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


@pytest.mark.slow
def test_contract_report_renders_in_headless_chromium(chromium, tmp_path):
    """A report built from the contract, with hook charts, paints without console messages."""
    page = tmp_path / "contract.html"
    page.write_text(
        render_html(_report(_mdss_scan(), _flag_scan(), _subroc_scan()), HOOKS), encoding="utf-8"
    )
    png = tmp_path / "contract.png"
    console = load_in_chromium(chromium, page, png, tmp_path / "profile")
    assert console == [], "console messages:\n" + "\n".join(console)
    _, _, pixels = decode_png(png.read_bytes())
    assert pixels.astype(np.float64).mean(axis=2).std() > 10, "screenshot is blank"
    assert _has_colour(pixels, INSIDE) > 200
    assert _has_colour(pixels, NULL_BARS) > 200


@pytest.mark.slow
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


@pytest.mark.slow
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
    # 9 replicates keep it fast: a randomization scan cannot reach alpha 0.05 and is UNTESTED
    # (exit 2, issue 34); the report is written all the same
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exit_code != 2 or "UNTESTED" in result.output, result.output
    html = next(tmp_path.glob("*.html"))
    png = tmp_path / "page.png"
    console = load_in_chromium(chromium, html, png, tmp_path / "profile", "1000,1400")
    assert console == [], "console messages:\n" + "\n".join(console)
    _, _, pixels = decode_png(png.read_bytes())
    assert pixels.astype(np.float64).mean(axis=2).std() > 10, "screenshot is blank"


def test_forest_plot_lists_untested_groups_below_instead_of_plotting_them():
    """Issue 16: too-small or empty groups are not drawn; they are named under the plot."""
    html = forest_plot(
        ["g0"],
        [0.1],
        [0.0],
        [0.2],
        [True],
        0.05,
        False,
        untested=[("tiny <b>", "too small (3 rows)"), ("gone", "no rows")],
    )
    svg = html[: html.index("</svg>")]
    assert "tiny" not in svg and "gone" not in svg
    assert len([a for t, a, _ in _parse(html).tags if t == "circle"]) == 1
    assert (
        "Not tested, so not plotted (2): tiny &lt;b&gt; (too small (3 rows)); gone (no rows)."
        in html
    )
