"""Render hooks: how a scan type renders its own ``detail`` in the Markdown and HTML reports.

The renderers never branch on the scan type. They render the common contract (status,
population, findings) and then call the hooks the scan type registered, if any. The hooks are
always passed in explicitly: the run layer hands over the registry's
(``fairscan.scans.render_hooks()``), so this layer imports no scan module and nothing depends
on the order modules were imported in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fairscan.report.models import Finding, ScanResult


@dataclass(frozen=True)
class RenderHooks:
    """Optional per-type renderers of ``scans[].detail`` and ``findings[].detail``."""

    # Markdown lines before the scan's findings (its overview: e.g. a forest plot's table)
    lead_markdown: Callable[[ScanResult], list[str]] | None = None
    # HTML before the scan's findings (its overview chart, e.g. the forest plot)
    lead_html: Callable[[ScanResult], str] | None = None
    # extra Markdown lines after the scan's findings
    markdown: Callable[[ScanResult], list[str]] | None = None
    # extra HTML after the scan's findings
    html: Callable[[ScanResult], str] | None = None
    # extra Markdown lines under one finding (after its common table)
    finding_markdown: Callable[[ScanResult, Finding], list[str]] | None = None
    # extra HTML inside one finding's block (charts of its detail)
    finding_html: Callable[[ScanResult, Finding], str] | None = None
    # the SARIF rule's description of the scan, given its metric in words (None, or a hook
    # returning None: "subgroups whose METRIC differs significantly")
    sarif_rule: Callable[[ScanResult, str], str | None] | None = None


HookMap = Mapping[str, RenderHooks]
NO_HOOKS: HookMap = {}
