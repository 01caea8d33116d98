"""Issue 28, the report: readable complement labels, nested-group notes, the overview of the
top findings, "What was audited", the model block, number formats (percentages with counts,
the p-value floor), the off-scale null histogram, the calibration reference, and the rate
intervals of subset-scan findings (checked against scipy's Wilson interval)."""

from __future__ import annotations

import json
import re

import pytest
from report_builders import finding, null, population, report, scan
from scipy.stats import binomtest

from fairscan.report.formats import render, report_json
from fairscan.report.html import bar_chart, null_histogram, render_html
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditedModel, Effect
from fairscan.report.overview import (
    audited_items,
    constrained_attributes,
    containers,
    readable_label,
)
from fairscan.report.text import fmt_p_floor, p_floor_note, rate_with_count, wilson_interval
from fairscan.report.view import ReportView
from fairscan.scans import render_hooks
from fairscan.scans.mdss_render import SEARCH_CAVEAT, rate_intervals

EDUCATION = ["primary", "secondary", "college", "university", "doctorate"]
EVIL = "<script>alert(1)</script>"


def _education_report(*findings):
    return report(
        scan(list(findings), null_distribution=null(999)),
        attributes={"education": EDUCATION, "sex": ["Female", "Male"]},
    )


# --- labels ---------------------------------------------------------------------------------


def test_all_values_but_one_read_as_not_equal():
    chosen = [v for v in EDUCATION if v != "university"]
    f = finding({"education": chosen, "sex": ["Male"]})
    assert f.label == f"education in {{{', '.join(chosen)}}} and sex = Male"
    assert readable_label(f, {"education": EDUCATION}) == "education ≠ university and sex = Male"
    two_left_out = finding({"education": ["primary", "secondary", "college"]})
    assert readable_label(two_left_out, {"education": EDUCATION}) == (
        "education ∉ {university, doctorate}"
    )
    # a selection shorter than its complement, and unknown attributes, keep their label
    short = finding({"education": ["primary", "secondary"]})
    assert readable_label(short, {"education": EDUCATION}) == short.label
    assert readable_label(f, {}) == f.label
    # the rendered reports use the readable label
    text = render_markdown(_education_report(f))
    assert "education ≠ university and sex = Male" in text
    assert "education ≠ university and sex = Male" in render_html(_education_report(f))


# --- nested groups --------------------------------------------------------------------------


def test_a_group_inside_another_listed_one_is_noted():
    outer = finding({"education": ["college"]})
    inner = finding({"sex": ["Male"], "education": ["college"]})
    other = finding({"sex": ["Female"]})
    assert containers([outer, inner, other]) == {1: 0}
    assert containers([inner, outer]) == {0: 1}
    assert containers([other, outer]) == {}
    text = render_markdown(_education_report(outer, inner, other))
    assert re.search(
        r"> Nested: every row of this group is also in finding 1 \(education = college\)", text
    )
    html = render_html(_education_report(outer, inner, other))
    assert html.count('class="nested"') == 1


def test_further_findings_are_collapsed_into_one_table_with_their_sentences():
    findings = [finding({"education": [v]}, description=f"sentence {v}") for v in EDUCATION]
    text = render_markdown(_education_report(*findings))
    assert text.count("### ") == 3  # the first three in full
    assert "Further findings (2), one row each:" in text
    assert "5. sentence doctorate" in text
    html = render_html(_education_report(*findings))
    assert html.count('<div class="finding"') == 3
    assert 'id="fpr-finding-5"' in html and "sentence doctorate" in html


# --- overview and "What was audited" --------------------------------------------------------


def test_overview_names_the_constrained_attributes_with_effect_sizes():
    a = finding({"education": ["college"], "sex": ["Male"]}, inside=0.5, reference=0.2)
    b = finding({"education": ["doctorate"]}, inside=0.3, reference=0.2)
    rep = _education_report(a, b)
    attrs = constrained_attributes(rep)
    assert [x.name for x in attrs] == ["education", "sex"]
    assert attrs[0].values == ["college", "doctorate"] and attrs[0].findings == 2
    assert attrs[0].largest == "+30.0 pts (fpr)"
    text = render_markdown(rep)
    assert text.index("## Overview") < text.index("## What was audited") < text.index("## `fpr`")
    assert "| education | college, doctorate | 2 | +30.0 pts (fpr) |" in text
    html = render_html(rep)
    assert html.index('id="overview"') < html.index('id="scan-fpr"')
    assert 'data-chart="overview"' in html
    assert html.count('class="inside"') == 2 and html.count('class="reference"') == 2


def test_what_was_audited_lists_data_filter_attributes_bins_settings_and_seed():
    rep = _education_report(finding({"education": ["college"]}))
    rep = rep.model_copy(
        update={
            "bins": {"education": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]},
            "provenance": rep.provenance.model_copy(
                update={
                    "filter": "age >= 18",
                    "parameters": {
                        "columns": {"outcome": "y", "recommendation": "flagged"},
                        "significance": {"replicates": 999, "alpha": 0.05},
                    },
                }
            ),
        }
    )
    items = dict(audited_items(rep))
    assert items["data"].startswith("d.csv (sha256 bbbb")
    assert items["rows"] == "7214 in the data, 6172 audited (85.6%)"
    assert items["filter"] == "age >= 18"
    assert items["columns"] == "outcome = y, recommendation = flagged"
    assert items["attribute education"].startswith("binned at 0, 1, 2, 3, 4, 5 → 5 bins")
    assert items["attribute sex"] == "2 values: Female, Male"
    assert items["significance"] == "999 null replicates, alpha = 0.05"
    assert items["seed"] == "0"
    assert items["scan fpr (fpr_scan)"] == "penalty = 1"
    for text in (render_markdown(rep), render_html(rep)):
        assert "What was audited" in text
        assert any(f"age {gt}= 18" in text for gt in ("&gt;", "&#62;", ">"))


def test_the_model_block_reaches_every_format_escaped():
    model = AuditedModel(name=f"credit {EVIL}", version="2.3.1", owner="risk", description="GBM")
    rep = _education_report(finding({"education": ["college"]})).model_copy(update={"model": model})
    assert json.loads(report_json(rep))["model"] == model.model_dump()
    markdown = render_markdown(rep)
    shown = "Model: credit &#60;script&#62;alert(1)&#60;/script&#62; 2.3.1, owned by risk: GBM"
    assert shown in markdown
    html = render_html(rep)
    assert "credit &lt;script&gt;alert(1)&lt;/script&gt; 2.3.1, owned by risk: GBM" in html
    assert "<script>" not in html
    display = ReportView.of(rep)._repr_html_()
    assert "<script>" not in display and "credit &lt;script&gt;" in display
    # without one, the JSON has no model key (shipped reports keep their digests)
    assert "model" not in json.loads(report_json(_education_report()))


# --- number formats -------------------------------------------------------------------------


def test_rates_are_percentages_with_counts_and_p_values_explain_their_floor():
    assert rate_with_count(142 / 200, 200) == "71.0% (142 of 200)"
    assert rate_with_count(0.6027, 353) == "60.3% (n = 353)"
    assert rate_with_count(None, 3) == "n/a"
    assert p_floor_note(0.001, 999) == "the smallest possible with 999 replicates"
    assert fmt_p_floor(1 / 200, 199) == "p = 0.0050, the smallest possible with 199 replicates"
    assert p_floor_note(0.002, 999) is None and p_floor_note(0.001, None) is None
    text = render_markdown(_education_report(finding({"education": ["college"]}, p_value=0.001)))
    assert "p = 0.0010, the smallest possible with 999 replicates" in text


# --- charts ---------------------------------------------------------------------------------


def test_null_histogram_keeps_the_null_readable_when_the_observed_score_is_far_beyond():
    nd = null(199, scores=[0.0] * 150 + [0.5, 1.0, 1.5, 2.0, 3.5] * 10)
    nd = nd.model_copy(update={"quantile": 3.5})
    svg = null_histogram(nd, 197.76)
    ticks = [
        float(t)
        for t in re.findall(r'text-anchor="middle" font-size="11" fill="#555">([\d.]+)<', svg)
    ]
    assert max(ticks) < 10  # the axis spans the null, not 0..200
    assert "off scale" in svg and "far beyond the largest null maximum (3.50)" in svg
    assert len(re.findall(r'<rect class="bar"', svg)) >= 4  # the null is spread over bars
    # an observed score within reach keeps its place on the axis
    assert "off scale" not in null_histogram(nd, 5.0)


def test_calibration_reference_is_not_repeated_as_expected_inside():
    same = Effect(
        metric="rate of default = 1",
        inside=0.4334,
        reference=0.6027,
        reference_name="mean predicted probability (score) in the subgroup",
        inside_count=353,
        reference_count=353,
        expected=0.6027,
    )
    chart = bar_chart(same)
    assert ">expected inside<" not in chart and ">expected<" in chart
    assert "expected inside the subgroup itself" in chart
    f = finding(
        metric=same.metric,
        inside=same.inside,
        reference=same.reference,
        reference_name=same.reference_name,
        reference_count=353,
        expected=same.expected,
    )
    assert "| expected inside |" not in render_markdown(report(scan([f])))
    # a scan whose expectation differs from its reference keeps both
    assert ">expected inside<" in bar_chart(finding().effect)


def test_rate_intervals_match_scipy_and_say_what_they_leave_out():
    f = finding(inside=142 / 200, size=200, reference=714 / 7582, reference_count=7582)
    f.effect.inside_count = 200
    lo, hi = wilson_interval(142, 200)
    ref = binomtest(142, 200).proportion_ci(method="wilson")
    assert lo == pytest.approx(ref.low, abs=1e-12) and hi == pytest.approx(ref.high, abs=1e-12)
    text = rate_intervals(f)
    assert text is not None and SEARCH_CAVEAT in text
    assert f"95% interval {100 * lo:.1f}% to {100 * hi:.1f}%" in text
    rlo, rhi = binomtest(714, 7582).proportion_ci(method="wilson")
    assert f"95% interval {100 * rlo:.1f}% to {100 * rhi:.1f}%" in text
    assert "not for the search" in text
    hooks = render_hooks()
    rep = report(scan([f]))
    assert SEARCH_CAVEAT in render(rep, "markdown", hooks)
    assert 'class="intervals"' in render(rep, "html", hooks)
    # a metric that is not a rate has no interval
    auc = finding(metric="ROC AUC", inside=0.7, reference=0.76)
    assert rate_intervals(auc) is None


def test_population_percent_and_every_new_sink_stays_escaped():
    f = finding({"education": [EVIL]}, description=f"d {EVIL}")
    rep = report(
        scan([f] * 5, population=population()),
        attributes={"education": [EVIL, "x"]},
        description=EVIL,
    )
    html = render_html(rep)
    assert "<script>" not in html
    markdown = render_markdown(rep)
    assert "<script>" not in markdown
