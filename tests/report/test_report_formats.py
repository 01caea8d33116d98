"""The report-format registry (issue 22): one protocol, every format an entry."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from report_builders import finding, report, scan

from fairscan.report.formats import (
    FORMATS,
    ReportFormat,
    get_format,
    render,
    sink_formats,
    write_reports,
)
from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import render_markdown
from fairscan.report.view import ReportView
from fairscan.spec.models import ReportFormat as SpecFormat


def test_the_registry_holds_the_formats_the_spec_accepts() -> None:
    # the spec layer cannot import the report layer: its schema's copy is pinned here, in order
    assert tuple(FORMATS) == typing.get_args(SpecFormat)
    assert {name: fmt.extension for name, fmt in FORMATS.items() if fmt.extension} == {
        "json": ".json",
        "markdown": ".md",
        "junit": ".junit.xml",
        "html": ".html",
        "sarif": ".sarif",
    }
    assert [f.name for f in sink_formats(["json", "github", "html"])] == ["github"]
    for name, fmt in FORMATS.items():
        assert isinstance(fmt, ReportFormat) and fmt.name == name
        assert (fmt.extension is None) != (fmt.sink is None), name  # a file or a sink


def test_unknown_formats_name_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown report format 'pdf'; the formats are: json"):
        get_format("pdf")


def test_hooks_are_passed_explicitly(tmp_path: Path) -> None:
    rep = report(scan([finding({"race": ["A"]})]))
    hooks = {"fpr_scan": RenderHooks(markdown=lambda s: ["EXTRA LINE FROM THE HOOK"])}
    assert "EXTRA LINE FROM THE HOOK" not in render(rep, "markdown")
    assert "EXTRA LINE FROM THE HOOK" in render(rep, "markdown", hooks)
    assert get_format("github").render(rep, hooks) == render_markdown(rep, hooks) + "\n"
    (path,) = write_reports(rep, tmp_path, ["markdown", "github"], hooks)
    assert "EXTRA LINE FROM THE HOOK" in path.read_text(encoding="utf-8")
    # the view carries the hooks it was given: no registration by import order
    view = ReportView.of(rep, hooks)
    assert view.to_markdown() == render(rep, "markdown", hooks)
    assert view.to_json() == render(rep, "json")
    assert ReportView.of(rep).to_markdown() == render(rep, "markdown")
    assert view.model_dump() == rep.model_dump()
