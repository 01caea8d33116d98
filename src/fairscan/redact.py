"""The one home of secret handling for connection URLs: what fairscan shows or stores of a
URL, how ``${NAME}`` values are spliced into it, and how secrets are masked in free text.

A URL is shown by an **allow-list**: its scheme, host, port and path, and only the query
parameters in :data:`SAFE_PARAMS` (known to carry no credential); every other parameter's value
becomes ``***``, and the user, password and fragment are dropped. Everything fairscan shows or
stores (report provenance, messages, annotations, MLflow params, ``validate --show-resolved``)
goes through :func:`shown_url`.

``${NAME}`` values are percent-encoded for the URL component they stand in
(:func:`interpolated`), so that a value holding ``@``, ``/``, ``:`` or ``?`` cannot move the
connection to another host. Free text (a driver's error) is masked by :func:`mask_text`:
every value of the URL's variables and every literal value of a parameter outside the
allow-list, case-insensitively (drivers echo host names lower-cased) and in its
percent-encoded forms.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

MASK = "***"
ENV_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
# a URL inside free text (a driver's message, an MLflow error)
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]]+")
# key=value words of a libpq keyword string ("host=h password=x"), shown by the same allow-list
_KEYWORD = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]*)")

# Query parameters known to carry no credential (lower case); any other is shown as ***.
# Connection target: host, port, database, schema; PostgreSQL (libpq): sslmode, connect_timeout,
# application_name, target_session_attrs, client_encoding; DuckDB: memory_limit, threads;
# Snowflake: warehouse, role; any engine: timezone. `options`, `passfile`, `sslkey`, `user` and
# every `*password*`, `*token*`, `*secret*`, `*credentials*` are masked.
SAFE_PARAMS = frozenset(
    {
        "host",
        "port",
        "database",
        "dbname",
        "schema",
        "sslmode",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
        "client_encoding",
        "memory_limit",
        "threads",
        "warehouse",
        "role",
        "timezone",
    }
)
# parameter names that hold a credential: written literally in a spec they are an error
# (secrets come from the environment only); matched as parts of the name, case-insensitively.
# (`sslkey`, `passfile` name files: masked when shown, not refused)
_SECRET_WORDS = r"pass(word|wd)|pwd|token|secret|credential|(api|access|private)_?key"
_SECRET_NAME = re.compile(_SECRET_WORDS, re.IGNORECASE)
# a value that sets one inside another parameter (`options=-c password=x`), not from ${NAME}
_SECRET_SETTING = re.compile(rf"({_SECRET_WORDS})\w*\s*=\s*(?!\$\{{)", re.IGNORECASE)


def _safe(key: str) -> bool:
    return key.strip().lower() in SAFE_PARAMS


def _quote_value(value: str) -> str:
    # placeholders and the mask stay readable in what is shown
    return quote(value, safe="${}*/:,")


def shown_url(url: str) -> str:
    """``url`` as fairscan shows and stores it: no user, password or fragment, and the value of
    every query parameter outside :data:`SAFE_PARAMS` replaced by ``***``. A string that is not
    a URL (a file path) is returned as it is, a libpq keyword string masked the same way."""
    match = _SCHEME.match(url)
    if match is None:
        return _shown_keywords(url) if "=" in url else url
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return f"{match.group(1)}://(unparsable URL)"
    # the host as written (urlsplit's hostname would lower-case a ${NAME})
    host = parts.netloc.rpartition("@")[2]
    shown = f"{parts.scheme}://{host}{parts.path}"
    if query:
        shown += "?" + "&".join(
            f"{_quote_value(k)}={_quote_value(v) if _safe(k) else MASK}" for k, v in query
        )
    return shown


def _shown_keywords(text: str) -> str:
    return _KEYWORD.sub(lambda m: m.group(0) if _safe(m.group(1)) else f"{m.group(1)}={MASK}", text)


def literal_secret(url: str) -> str | None:
    """What holds a secret written literally (not as ``${NAME}``) in ``url``: ``password``
    for the password of ``user:password@``, else the query parameter's name; None when none.
    A spec with one is refused: secrets come from the environment only."""
    if _SCHEME.match(url) is None:
        return None
    try:
        parts = urlsplit(url)
        password = parts.password
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return None
    if password is not None and not ENV_PLACEHOLDER.fullmatch(password):
        return "password"
    for key, value in query:
        if ENV_PLACEHOLDER.fullmatch(value.strip()):
            continue
        if _SECRET_NAME.search(key) or _SECRET_SETTING.search(value):
            return key
    return None


def secret_values(url: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The values to mask in any message about ``url``: the values of the environment
    variables it names, the literal values of its query parameters outside the allow-list, and
    a literal user password."""
    env = os.environ if environ is None else environ
    values = [env[name] for name in ENV_PLACEHOLDER.findall(url) if env.get(name)]
    if _SCHEME.match(url) is None:
        return values
    try:
        parts = urlsplit(url)
        values += [parts.password or ""]
        values += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _safe(k)]
    except ValueError:
        pass
    return [v for v in values if v.strip() and v != MASK and not ENV_PLACEHOLDER.fullmatch(v)]


def _forms(secret: str) -> set[str]:
    """A secret as it may appear in text: as is, percent-encoded and decoded (as written in a
    URL); the case is ignored."""
    return {secret, quote(secret, safe=""), quote_plus(secret), quote(secret), unquote(secret)}


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret value masked (case-insensitively, also percent-encoded) and
    every URL in it shown by :func:`shown_url` (no user, password or unknown parameter)."""
    text = _URL_IN_TEXT.sub(lambda m: shown_url(m.group(0)), text)
    forms = sorted({f for s in secrets if s for f in _forms(s)}, key=len, reverse=True)
    if not forms:
        return text
    pattern = re.compile("|".join(re.escape(f) for f in forms), re.IGNORECASE)
    return pattern.sub(MASK, text)


# --- splicing ${NAME} values into a URL ------------------------------------------------------


def missing_variables(url: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables ``url`` names that are not set."""
    env = os.environ if environ is None else environ
    return [name for name in ENV_PLACEHOLDER.findall(url) if name not in env]


def interpolated(url: str, environ: Mapping[str, str] | None = None) -> str:
    """``url`` with each ``${NAME}`` replaced by the variable's value percent-encoded for its
    component (user and password, host, path, query, fragment): a value cannot add a user,
    a host, a path or a parameter. Drivers decode the password and query values (Ibis unquotes
    them); a host value is kept as written only when it is an IPv6 literal ``[...]``.
    Every name must be set (:func:`missing_variables`)."""
    env = os.environ if environ is None else environ
    component = _components(url)

    def encode(m: re.Match[str]) -> str:
        value = env[m.group(1)]
        if component(m.start()) == "host" and re.fullmatch(r"\[[0-9A-Fa-f:.]+\]", value):
            return value
        return quote(value, safe="")

    return ENV_PLACEHOLDER.sub(encode, url)


def _components(url: str) -> Callable[[int], str]:
    """A function: position in ``url`` -> the component there. A placeholder holds none of the
    delimiters, so the written URL's own delimiters say where each one stands."""
    match = _SCHEME.match(url)
    start = match.end() if match else 0
    netloc_end = _first(url, "/?#", start) if match else start
    at = url.rfind("@", start, netloc_end)
    query = _first(url, "?#", netloc_end)
    fragment = _first(url, "#", netloc_end)

    def component(pos: int) -> str:
        if pos < netloc_end:
            return "userinfo" if pos < at else "host"
        if pos >= fragment:
            return "fragment"
        return "query" if pos > query else "path"

    return component


def _first(text: str, chars: str, start: int) -> int:
    found = [i for i in (text.find(c, start) for c in chars) if i >= 0]
    return min(found) if found else len(text)


def shown_spec(dump: dict[str, Any]) -> dict[str, Any]:
    """A spec's ``model_dump`` as the report stores it and ``validate --show-resolved`` prints
    it: ``data.connection`` and a URL in ``data.path`` (a signed URL's query) shown by
    :func:`shown_url` (the rest holds no secret)."""
    data = dump.get("data")
    if not isinstance(data, dict):
        return dump
    shown = {
        key: shown_url(value)
        for key in ("connection", "path")
        if isinstance(value := data.get(key), str) and (key == "connection" or "://" in value)
    }
    return {**dump, "data": {**data, **shown}} if shown else dump
