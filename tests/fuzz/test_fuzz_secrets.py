"""Fuzz round of issue 34 over URLs, secrets and ``[tool.fairscan]`` tables: a spliced
``${NAME}`` value never changes the URL's user, host, port, path or parameters; a secret never
survives :func:`~fairscan.redact.mask_text` in any case or encoding; a parameter outside the
allow-list never shows in :func:`~fairscan.redact.shown_url`; a ``pyproject.toml`` of any
shape gives its table or a usage error, never another exception."""

from __future__ import annotations

import string
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, unquote_plus, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairscan.cli.config import load_config
from fairscan.errors import UsageError
from fairscan.redact import MASK, SAFE_PARAMS, interpolated, mask_text, shown_url

# printable text rich in URL delimiters, with letters in both cases
_ALPHABET = string.ascii_letters + string.digits + "@:/?#[]!$&'()*+,;=%-._~ \"é"
secrets_ = st.text(alphabet=_ALPHABET, min_size=4, max_size=24).filter(
    lambda s: s.strip() and s.lower() not in MASK and "*" not in s
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(password=secrets_, database=secrets_, app=secrets_)
def test_a_spliced_value_moves_nothing(password: str, database: str, app: str) -> None:
    template = "postgresql://me:${PW}@db.internal:5432/${DB}?application_name=${APP}&sslmode=x"
    url = interpolated(template, {"PW": password, "DB": database, "APP": app})
    parts = urlsplit(url)
    assert (parts.username, parts.hostname, parts.port) == ("me", "db.internal", 5432)
    assert unquote_plus(parts.password or "") == password  # as the driver decodes it
    assert parts.path.count("/") == 1 and not parts.fragment
    query = parse_qsl(parts.query, keep_blank_values=True)
    assert query == [("application_name", app), ("sslmode", "x")]


@FUZZ
@given(secret=secrets_, case=st.sampled_from(["as is", "lower", "upper", "swap"]))
def test_a_secret_never_survives_masking(secret: str, case: str) -> None:
    forms = [secret, quote(secret, safe=""), quote_plus(secret), quote(secret)]
    cases: dict[str, Callable[[str], str]] = {
        "as is": str,
        "lower": str.lower,
        "upper": str.upper,
        "swap": str.swapcase,
    }
    changed = cases[case]
    text = " | ".join(f"failed for {changed(form)}." for form in forms)
    masked = mask_text(text, [secret])
    for form in forms:
        assert form.lower() not in masked.lower(), (secret, masked)


@FUZZ
@given(
    key=st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=16),
    value=secrets_,
)
def test_an_unknown_parameter_never_shows(key: str, value: str) -> None:
    url = f"postgresql://db.internal:5432/ml?{quote(key)}={quote(value, safe='')}"
    shown = shown_url(url)
    if key.lower() in SAFE_PARAMS:
        return
    assert shown == f"postgresql://db.internal:5432/ml?{quote(key)}=***"


_KEYS = st.sampled_from(["replicates", "seed", "exit-zero", "exit_zero", "replicate", "format"])
_VALUES = st.sampled_from(["29", "true", "'x'", "[1]", "{a = 1}", "", "-1"])
_FORMS = st.sampled_from(
    [
        "[tool.fairscan]\n{k} = {v}\n",
        "tool.fairscan.{k} = {v}\n",
        "tool = {{fairscan = {{{k} = {v}}}}}\n",
        "[tool]\nfairscan.{k} = {v}\n",
        "\ufeff[tool.fairscan]\n{k} = {v}\n",
        "[tool.fairscan\n{k} = {v}\n",
        "tool.fairscan = {v}\n",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(form=_FORMS, key=_KEYS, value=_VALUES, latin=st.booleans())
def test_any_pyproject_gives_its_table_or_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, form: str, key: str, value: str, latin: bool
) -> None:
    folder: Path = tmp_path_factory.mktemp("pyproject")
    text = form.format(k=key, v=value)
    if latin:  # the same table with one Latin-1 byte in a comment
        text = text.replace("\ufeff", "") + "# réplicas\n"
    (folder / "pyproject.toml").write_bytes(text.encode("latin-1" if latin else "utf-8"))
    try:
        config = load_config(folder)
    except UsageError as error:
        assert str(folder / "pyproject.toml") in error.issues[0].render()
        return
    assert config is not None and config.path == folder / "pyproject.toml"
    assert not latin  # a file that is not UTF-8 is never read as if it were
