"""Render hooks: how a scan type renders its own ``detail`` in the Markdown and HTML reports.

The renderers never branch on the scan type. They render the common contract (status,
population, findings) and then call the hooks the scan type registered, if any. The library
API hands the registry's hooks in (``fairscan.scans.render_hooks()``), so this layer imports no
scan module. For callers that pass none (``AuditReport.to_html()``, ``write_reports`` without
hooks), the registry registers itself as the default provider when it is imported
(:func:`set_default_hooks`); :func:`default_hooks` is empty until then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fairscan.report.models import Finding, ScanResult


@dataclass(frozen=True)
class RenderHooks:
    """Optional per-type renderers of ``scans[].detail`` and ``findings[].detail``."""

    # extra Markdown lines after the scan's findings
    markdown: Callable[[ScanResult], list[str]] | None = None
    # extra HTML after the scan's findings
    html: Callable[[ScanResult], str] | None = None
    # extra Markdown lines under one finding (after its common table)
    finding_markdown: Callable[[ScanResult, Finding], list[str]] | None = None
    # extra HTML inside one finding's block (charts of its detail)
    finding_html: Callable[[ScanResult, Finding], str] | None = None


HookMap = Mapping[str, RenderHooks]
NO_HOOKS: HookMap = {}


_default_provider: Callable[[], HookMap] | None = None


def set_default_hooks(provider: Callable[[], HookMap] | None) -> None:
    """Register what :func:`default_hooks` returns (the scan registry does, on import);
    ``None`` unregisters."""
    global _default_provider
    _default_provider = provider


def default_hooks() -> HookMap:
    """The registered scan types' render hooks, or none before the registry is imported."""
    return NO_HOOKS if _default_provider is None else _default_provider()


def resolve_hooks(hooks: HookMap | None) -> HookMap:
    """``hooks`` as given, or :func:`default_hooks` for ``None``."""
    return default_hooks() if hooks is None else hooks
