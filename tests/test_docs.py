"""Generated documentation stays in sync with the code, and `audit explain` reads as words."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fairscan.explain import explain, explanation, parameters
from fairscan.scans import SCAN_TYPES

ROOT = Path(__file__).resolve().parent.parent


def _build_docs() -> ModuleType:
    """scripts/build_docs.py (a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "scripts" / "build_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_docs", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_docs() -> ModuleType:
    return _build_docs()


def test_generated_pages_are_up_to_date(build_docs: ModuleType) -> None:
    stale = build_docs.stale(ROOT)
    assert not stale, f"stale documentation pages {[str(p) for p in stale]}: run `make docs`"


def test_every_scan_type_has_a_page_in_the_site_navigation(build_docs: ModuleType) -> None:
    pages = build_docs.pages(ROOT)
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for type_ in SCAN_TYPES:
        assert Path(f"docs/scans/{type_}.md") in pages
        assert f"scans/{type_}.md" in nav, f"add scans/{type_}.md to the nav of mkdocs.yml"


def test_every_scan_type_is_explained_with_its_parameters() -> None:
    for type_, entry in SCAN_TYPES.items():
        text = explain(type_)
        assert entry.docs.title in text and "Parameters:" in text
        for name, field in entry.spec_model.model_fields.items():
            if name != "type":
                assert f"  {field.alias or name}:" in text, (type_, name)


def test_explain_types_read_as_words() -> None:
    """No Python typing syntax: `number or null`, `one of: ge, gt`, never Optional[Literal[...]]."""
    for type_ in SCAN_TYPES:
        for param in parameters(type_):
            assert not re.search(
                r"Optional|Literal|Union|\[|\]|\bstr\b|\bfloat\b|\bint\b", param.type
            ), (
                type_,
                param.name,
                param.type,
            )
    by_name = {p.name: p for p in parameters("fpr_scan")}
    assert by_name["threshold"].type == "number or null"
    assert by_name["threshold_rule"].type == "one of: ge, gt or null"
    assert by_name["restarts"].type == "integer from 1 to 100000"
    assert by_name["penalty"].type == "number >= 0"
    assert by_name["id"].type == "string"


def test_explain_lists_nested_keys_and_spec_names() -> None:
    cbs = {p.name: p for p in parameters("cbs")}
    assert cbs["protected"].type == "mapping" and cbs["protected"].default == "required"
    assert cbs["protected.column"].type == "string"
    assert "Column defining the protected class." in cbs["protected.column"].description
    flag = {p.name: p for p in parameters("flag")}
    assert flag["groups"].type == "mapping or list of mappings"
    assert {"groups.attributes", "groups.intervals.grid", "groups[].filter"} <= set(flag)
    # a field with an alias is listed as a spec writes it
    ijdi = {p.name for p in parameters("ijdi_scan")}
    assert "lambda" in ijdi and "lam" not in ijdi
    assert "  lambda: number >= 0 or null (default: null)" in explain("ijdi_scan")


def test_scan_pages_carry_the_explain_text(build_docs: ModuleType) -> None:
    for type_ in SCAN_TYPES:
        page = build_docs.scan_page(type_)
        info = explanation(type_)
        assert info.what in page and (info.reading or "") in page
        for param in info.parameters:
            assert f"| `{param.name}` |" in page


def test_spec_reference_covers_every_top_level_key(build_docs: ModuleType) -> None:
    import json

    schema = json.loads((ROOT / "schemas" / "audit-spec.schema.json").read_text(encoding="utf-8"))
    page = build_docs.spec_reference(schema)
    for key in schema["properties"]:
        assert f"| `{key}` |" in page, key
    assert "| `significance.replicates` |" in page and "| `columns.threshold_rule` |" in page
    assert "Optional[" not in page and "anyOf" not in page


def test_api_reference_lists_the_public_api(build_docs: ModuleType) -> None:
    import fairscan

    page = build_docs.api_reference()
    for name in fairscan.__all__:
        if name != "__version__":
            assert re.search(rf"^::: fairscan\.[\w.]+\.{name}$", page, re.M), name


# --- Sphinx roles on the API page (scripts/docs_roles.py) ---------------------------------------


def _docs_roles() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_roles", ROOT / "scripts" / "docs_roles.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_roles", module)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_become_links_to_the_public_api_or_code() -> None:
    roles = _docs_roles()
    public = {"SpecError": "fairscan.errors", "AuditReport": "fairscan.report.models"}
    members = frozenset({"fairscan.report.models.AuditReport.findings"})
    text = (
        "Raises :class:`~fairscan.SpecError` or :class:`fairscan.errors.SpecError`; "
        ":func:`fairscan.data.prepare.prepare_data` is internal; see :mod:`.spec` and "
        ":attr:`AuditReport.findings`, :meth:`AuditReport.nothing`, "
        ":class:`the report <fairscan.AuditReport>`."
    )
    out = roles.rewrite_roles(text, public, members)
    assert out == (
        "Raises [`SpecError`][fairscan.errors.SpecError] or "
        "[`fairscan.errors.SpecError`][fairscan.errors.SpecError]; "
        "`fairscan.data.prepare.prepare_data()` is internal; see `spec` and "
        "[`AuditReport.findings`][fairscan.report.models.AuditReport.findings], "
        "`AuditReport.nothing()`, "
        "[`the report`][fairscan.report.models.AuditReport]."
    )
    assert ":class:" not in out and ":func:" not in out and ":mod:" not in out


def test_the_site_renders_the_roles_with_the_extension() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "scripts/docs_roles.py:SphinxRoles" in config
    assert "use_directory_urls: false" in config


# --- runnable examples ---------------------------------------------------------------------------


def test_every_scan_page_has_an_example_whose_spec_validates(build_docs: ModuleType) -> None:
    """docs/examples/<type>.audit.yaml exists for every scan type, is on its page and validates
    (spec and data: `audit validate`) on the shipped sample data."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    specs = []
    for type_ in SCAN_TYPES:
        spec = ROOT / "docs" / "examples" / f"{type_}.audit.yaml"
        assert spec.is_file(), f"write {spec.relative_to(ROOT)}"
        page = build_docs.scan_page(type_)
        assert f'--8<-- "docs/examples/{type_}.audit.yaml"' in page
        assert f"$ audit run docs/examples/{type_}.audit.yaml" in page
        assert f"type: {type_}" in spec.read_text(encoding="utf-8")
        specs.append(str(spec))
    result = CliRunner().invoke(app, ["validate", *specs])
    assert result.exit_code == 0, result.output
    assert result.output.count("ok ") == len(SCAN_TYPES), result.output


@pytest.mark.slow
def test_every_example_spec_runs(tmp_path: Path) -> None:
    """Each scan page's example runs end to end (few replicates), and finds the sample data's
    injected subgroup where the scan searches for it."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    for type_ in SCAN_TYPES:
        spec = ROOT / "docs" / "examples" / f"{type_}.audit.yaml"
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(spec),
                "--out",
                str(tmp_path),
                "--replicates",
                "19",
                "--workers",
                "1",
                "-q",
            ],
        )
        assert result.exit_code in (0, 1), (type_, result.output)
        assert (tmp_path / f"example-{type_.replace('_', '-')}.json").is_file(), type_


def _run_example(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    import runpy

    monkeypatch.chdir(ROOT)
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


def test_migration_guide_from_aif360_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fairscan side of docs/migrate-aif360.md runs on the sample data and finds the injected
    subgroup in each of its three audits."""
    page = (ROOT / "docs" / "migrate-aif360.md").read_text(encoding="utf-8")
    assert '--8<-- "docs/examples/migrate_aif360.py"' in page
    out = _run_example(ROOT / "docs" / "examples" / "migrate_aif360.py", monkeypatch, capsys)
    assert "{'ethnicity': ['C'], 'age_group': ['18-24']}" in out
    assert out.count("ethnicity = C and age_group") == 2, out


def test_migration_guide_from_fairlearn_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (ROOT / "docs" / "migrate-fairlearn.md").read_text(encoding="utf-8")
    assert '--8<-- "docs/examples/migrate_fairlearn.py"' in page
    out = _run_example(ROOT / "docs" / "examples" / "migrate_fairlearn.py", monkeypatch, capsys)
    assert "ethnicity = C and age_group" in out and "lower_bound" in out, out


# --- generated own-data page, Methods links, placeholders ------------------------------------------


def test_own_data_page_shows_the_real_starter_spec(build_docs: ModuleType, tmp_path: Path) -> None:
    import shutil

    from fairscan.starter import starter_spec

    shutil.copyfile(ROOT / "sample_data" / "credit.csv", tmp_path / "credit.csv")
    starter = starter_spec(tmp_path / "credit.csv", spec_dir=tmp_path)
    page = build_docs.own_data_page(ROOT)
    assert starter.rstrip("\n") in page
    assert "$ audit init credit.csv -o credit.audit.yaml\nwrote credit.audit.yaml" in page
    assert not re.search(r"\{\{ [\w.]+ \}\}", page)  # every template field filled


def _site_markdown() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def test_no_reference_points_outside_the_repository_or_site(build_docs: ModuleType) -> None:
    """methods.md is not part of the repository: the site and the README link to the Methods
    section instead, and every Methods link of the generator names an existing heading."""
    for path in [*_site_markdown(), ROOT / "README.md", ROOT / "README.pypi.md"]:
        text = path.read_text(encoding="utf-8")
        assert "methods.md" not in text, path
        assert "shared/docs" not in text, path
    for number, (target, _) in build_docs.METHODS_SECTIONS.items():
        page, _, anchor = target.partition("#")
        text = (ROOT / "docs" / "methods" / page).read_text(encoding="utf-8")
        assert not anchor or f"{{#{anchor}}}" in text, (number, target)
    assert build_docs.methods_links("see methods.md §3.3 and methods.md §4.8", "../") == (
        "see [CBS: expectations from comparable records](../methods/cbs.md#expectations) and "
        "[IJDI: mitigation](../methods/error-rates.md#mitigation)"
    )


def test_methods_pages_cite_their_sources() -> None:
    index = (ROOT / "docs" / "methods" / "index.md").read_text(encoding="utf-8")
    for author in ("Zhang", "Boxer", "Menghani", "Cherian", "Siegl", "Benjamini", "Chugg", "Shin"):
        assert author in index, author
    for page in ("subset-scan", "error-rates", "cbs", "inference", "subroc", "monitoring"):
        text = (ROOT / "docs" / "methods" / f"{page}.md").read_text(encoding="utf-8")
        assert "index.md#references" in text, page


def test_no_placeholders_in_the_docs_or_readme() -> None:
    paths = [*_site_markdown(), ROOT / "README.md", ROOT / "README.pypi.md", ROOT / "mkdocs.yml"]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for placeholder in ("OWNER/", "YOUR_ORG", "TODO", "TBD", "lorem ipsum"):
            assert placeholder not in text, (path, placeholder)


def test_whole_specs_on_hand_written_pages_validate(tmp_path: Path) -> None:
    """A complete spec shown on a page (```yaml with `version: 1` on the sample data) passes
    `audit validate`, data included, as a user saving it in the repository's root would run it."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    generated = {ROOT / p for p in _build_docs().pages(ROOT)}
    specs = []
    for page in _site_markdown():
        if page in generated:
            continue
        for block in re.findall(r"```yaml[^\n]*\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            if re.search(r"(?m)^version: 1$", block) and "sample_data/" in block:
                data = (ROOT / "sample_data").as_posix()
                path = tmp_path / f"{page.stem}-{len(specs)}.audit.yaml"
                path.write_text(block.replace("sample_data", data), encoding="utf-8")
                specs.append(path)
    assert len(specs) >= 2, specs  # the migration guides' specs at least
    result = CliRunner().invoke(app, ["validate", *map(str, specs)])
    assert result.exit_code == 0, result.output


# --- the README: an entry page whose links resolve -------------------------------------------------


def test_readme_is_an_entry_page_that_starts_with_the_two_commands() -> None:
    """The README opens with `make demo` and `make test` (.ci/run runs the test command written
    there) and stays an entry page: what fairscan does, a first audit, links; the reference
    lives in docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].startswith("make demo ") and first_block[1].startswith("make test ")
    assert len(readme.splitlines()) <= 150, "move reference material into docs/"
    sections = re.findall(r"(?m)^## (.+)$", readme)
    assert sections == ["A first audit", "Install", "Documentation"], sections


def test_every_relative_link_of_the_readmes_resolves() -> None:
    for name in ("README.md", "README.pypi.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#", 1)[0]
            if path and not re.match(r"[a-z]+:", path):
                assert (ROOT / path).is_file(), f"{name}: broken link {target}"


def test_no_command_installs_fairscan_from_a_package_index() -> None:
    """No index serves fairscan yet: a command block never says a bare `pip install fairscan`,
    which finds nothing (docs/install.md gives the wheel and Git URL commands instead)."""
    bare = re.compile(r"pip install\s+(['\"]?)fairscan\1\s*(#.*)?$")
    for path in [*_site_markdown(), ROOT / "README.md", ROOT / "README.pypi.md"]:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"(?ms)^\s*```[^\n]*\n(.*?)^\s*```", text):
            for line in block.splitlines():
                command = line.strip().removeprefix("$ ")
                assert not bare.match(command), (path.relative_to(ROOT), line)
