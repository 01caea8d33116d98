"""Sphinx cross-reference roles in docstrings, rendered on the documentation site.

The package's docstrings use Sphinx roles (``:class:`~fairscan.SpecError```, ``:func:`audit```,
``:mod:`fairscan.report.verdict```). mkdocstrings renders docstrings as Markdown, where a role
would show raw. This griffe extension (``mkdocs.yml``: ``mkdocstrings.handlers.python.options.
extensions``) rewrites every role before rendering:

* a role whose target is a name of the public API (``fairscan.__all__``), written in any form
  (``SpecError``, ``~fairscan.SpecError``, ``fairscan.errors.SpecError``, a member such as
  ``AuditReport.findings``), becomes a link to its entry on the API page: ``[`SpecError`][id]``,
  resolved by mkdocs-autorefs;
* any other target (internal modules and helpers, which the site does not document) becomes
  inline code, so the reader sees the name without a dangling link.

``~`` shows only the last component, as in Sphinx. :func:`rewrite_roles` is the pure function;
tests/test_docs.py checks it and that the built API page shows no role.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from griffe import Alias, AliasResolutionError, CyclicAliasError, Extension, Module, Object

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj|const|type):`([^`]+)`")


def _display(target: str, role: str) -> str:
    shown = target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target
    shown = shown.lstrip(".")
    return f"{shown}()" if role in ("func", "meth") and not shown.endswith(")") else shown


def _identifier(target: str, public: Mapping[str, str]) -> str | None:
    """The documented identifier of a public name (or of a member of one), else None."""
    parts = target.lstrip("~.").split(".")
    # the longest prefix whose last name is public: fairscan.errors.SpecError, SpecError.x
    for index, name in enumerate(parts):
        if name in public and (
            index == 0 or parts[:index] in (["fairscan"], public[name].split("."))
        ):
            rest = parts[index + 1 :]
            return ".".join([public[name], name, *rest])
    return None


def rewrite_roles(
    text: str, public: Mapping[str, str], members: frozenset[str] = frozenset()
) -> str:
    """Replace the Sphinx roles of ``text``: links for the public API, code for the rest.

    ``public`` maps each public name to its module (``fairscan._PUBLIC``); ``members`` are the
    identifiers of documented members (``fairscan.report.models.AuditReport.findings``): a
    member not in it is shown as code, so no link points to an entry the page does not have.
    """

    def replace(match: re.Match[str]) -> str:
        role, target = match.group(1), match.group(2).strip()
        titled = re.fullmatch(r"(.+?)\s*<([^>]+)>", target)  # :class:`title <target>`
        if titled:
            target = titled.group(2)
        shown = titled.group(1) if titled else _display(target, role)
        identifier = _identifier(target, public)
        tops = {f"{module}.{name}" for name, module in public.items()}
        linked = identifier is not None and (identifier in tops or identifier in members)
        return f"[`{shown}`][{identifier}]" if linked else f"`{shown}`"

    return ROLE.sub(replace, text)


def _public() -> dict[str, str]:
    import fairscan

    return {name: module for name, module in fairscan._PUBLIC.items() if not name.startswith("_")}


def _walk(obj: Object | Alias) -> Iterator[Object]:
    """Every object defined in ``obj`` (aliases, i.e. re-exports, are visited where defined)."""
    if isinstance(obj, Alias):
        return
    yield obj
    for member in obj.members.values():
        yield from _walk(member)


class SphinxRoles(Extension):
    """Rewrite the Sphinx roles of every docstring of the package (see the module docstring)."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        # the whole tree is loaded here, before any docstring is parsed for rendering
        public = _public()
        members: set[str] = set()
        for name, module in public.items():
            try:
                documented = pkg[f"{module}.{name}".removeprefix(f"{pkg.path}.")]
            except (KeyError, AliasResolutionError, CyclicAliasError):
                continue
            members.update(
                f"{module}.{name}.{member}"
                for member in documented.members
                if not member.startswith("_")
            )
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite_roles(obj.docstring.value, public, frozenset(members))
