"""Typed readers of environment variables for the settings, strict and loud.

Each reader takes the variable's name and returns its parsed value. An empty value counts as
unset. Unset, a reader returns its default, or stops start-up with `ImproperlyConfigured` naming
the variable when there is none (the variable is required); a bad value stops start-up with an
error that names the variable and says what it should look like. Every reader takes `environ`
(default: `os.environ`) so tests can pass their own mapping.
"""

import enum
import os
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

type Environ = Mapping[str, str] | None

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})
EMAIL_ADDRESS = re.compile(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+")
# A django-ratelimit rate: requests per period, e.g. 5/h, 120/m or 20/10m.
RATE = re.compile(r"[1-9]\d*/\d*[smhd]")
# A (provider slug, minutes) item of a per-provider map such as aws=360.
SLUG = re.compile(r"[a-z0-9]+")
MINUTES = re.compile(r"\d+")


class _Missing(enum.Enum):
    MISSING = enum.auto()


# The default of a required variable: unset, start-up stops with an error naming it.
REQUIRED = _Missing.MISSING


def _raw(name: str, environ: Environ = None) -> str | None:
    """Return the variable's value, treating an empty string as unset."""
    value = (os.environ if environ is None else environ).get(name)
    return value if value not in (None, "") else None


def _unset[T](name: str, default: T | _Missing) -> T:
    """Return the default of an unset variable, or stop start-up if it has none."""
    if default is REQUIRED:
        raise ImproperlyConfigured(f"{name} is required but not set")
    return default


def env_str(name: str, default: str | _Missing = REQUIRED, *, environ: Environ = None) -> str:
    """Return the variable's text as it is."""
    value = _raw(name, environ)
    return _unset(name, default) if value is None else value


def env_bool(name: str, default: bool | _Missing = REQUIRED, *, environ: Environ = None) -> bool:
    """Return true/yes/on/1 as True and false/no/off/0 as False, in any case."""
    value = _raw(name, environ)
    if value is None:
        return _unset(name, default)
    lowered = value.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of true/false/1/0/yes/no/on/off, got {value!r}")


def env_int(
    name: str,
    default: int | _Missing = REQUIRED,
    *,
    minimum: int | None = None,
    environ: Environ = None,
) -> int:
    """Return a whole number, at least `minimum` if given (the default is not checked)."""
    value = _raw(name, environ)
    if value is None:
        return _unset(name, default)
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def env_decimal(
    name: str,
    default: Decimal | int | str | _Missing = REQUIRED,
    *,
    minimum: Decimal | int | str | None = None,
    maximum: Decimal | int | str | None = None,
    environ: Environ = None,
) -> Decimal:
    """Return a finite decimal number within [`minimum`, `maximum`] where given."""
    value = _raw(name, environ)
    if value is None:
        return Decimal(_unset(name, default))
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be a decimal number, got {value!r}") from None
    if not number.is_finite():
        raise ImproperlyConfigured(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and number < Decimal(minimum):
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > Decimal(maximum):
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")
    return number


def env_list(
    name: str, default: Iterable[str] | _Missing = REQUIRED, *, environ: Environ = None
) -> list[str]:
    """Return the items of a comma-separated list, stripped; an empty item is refused."""
    value = _raw(name, environ)
    if value is None:
        return list(_unset(name, default))
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name} must be a comma-separated list without empty items")
    return items


def env_choice(
    name: str,
    choices: tuple[str, ...],
    default: str | _Missing = REQUIRED,
    *,
    environ: Environ = None,
) -> str:
    """Return one of `choices`, exactly as written."""
    value = env_str(name, default, environ=environ)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_url(
    name: str,
    schemes: tuple[str, ...],
    default: str | _Missing | None = REQUIRED,
    *,
    environ: Environ = None,
) -> str | None:
    """Return a URL with one of `schemes` and a host, unchanged."""
    value = _raw(name, environ)
    if value is None:
        return _unset(name, default)
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.hostname:
        raise ImproperlyConfigured(
            f"{name} must be a URL with scheme {' or '.join(schemes)} and a host, got {value!r}"
        )
    return value


def env_origins(
    name: str, default: Iterable[str] | _Missing = REQUIRED, *, environ: Environ = None
) -> list[str]:
    """Return a comma-separated list of origins, each starting with http:// or https://."""
    origins = env_list(name, default, environ=environ)
    for origin in origins:
        if urlsplit(origin).scheme not in ("http", "https"):
            raise ImproperlyConfigured(f"{name} items must start with https://: {origin}")
    return origins


def env_emails(
    name: str, default: Iterable[str] | _Missing = REQUIRED, *, environ: Environ = None
) -> list[str]:
    """Return a comma-separated list of email addresses."""
    addresses = env_list(name, default, environ=environ)
    for address in addresses:
        if not EMAIL_ADDRESS.fullmatch(address):
            raise ImproperlyConfigured(f"{name}: {address!r} is not an email address")
    return addresses


def env_rate(name: str, default: str | _Missing = REQUIRED, *, environ: Environ = None) -> str:
    """Return a django-ratelimit rate: requests per period, e.g. 5/h, 120/m or 20/10m."""
    value = env_str(name, default, environ=environ).strip()
    if not RATE.fullmatch(value):
        raise ImproperlyConfigured(f"{name} must look like 5/h, 120/m or 20/10m, got {value!r}")
    return value


def env_secret_key(name: str, *, environ: Environ = None) -> str:
    """Return a required secret of at least 50 characters with 5 distinct ones."""
    value = env_str(name, environ=environ)
    if len(value) < 50 or len(set(value)) < 5:
        raise ImproperlyConfigured(f"{name} must be at least 50 characters with 5 distinct ones")
    return value


def env_file_text(name: str, default: str | _Missing = REQUIRED, *, environ: Environ = None) -> str:
    """Return the ASCII text of the file the variable names (a key, a certificate)."""
    value = _raw(name, environ)
    if value is None:
        return _unset(name, default)
    try:
        return Path(value).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImproperlyConfigured(f"{name} cannot be read: {exc}") from None


def env_minutes_by_slug(name: str, *, minimum: int = 1, environ: Environ = None) -> dict[str, int]:
    """Return a per-provider map written `aws=360,azure=360,lambda=30` (slug=minutes); unset: {}."""
    value = _raw(name, environ)
    if value is None:
        return {}
    result: dict[str, int] = {}
    for item in value.split(","):
        slug, sep, minutes = (part.strip() for part in item.partition("="))
        if not sep or not SLUG.fullmatch(slug) or not MINUTES.fullmatch(minutes):
            raise ImproperlyConfigured(
                f"{name} must look like aws=360,lambda=30 (provider slug=minutes), got {item!r}"
            )
        if slug in result:
            raise ImproperlyConfigured(f"{name} names {slug} twice")
        if int(minutes) < minimum:
            raise ImproperlyConfigured(
                f"{name}: {slug} must be at least {minimum} minutes, got {minutes}"
            )
        result[slug] = int(minutes)
    return result


def database_from_env(environ: Environ = None) -> dict[str, Any]:
    """Return Django's DATABASES entry parsed from DATABASE_URL; PostgreSQL only."""
    url = _raw("DATABASE_URL", environ)
    if url is None:
        raise ImproperlyConfigured(
            "DATABASE_URL is required: `make run` and `make test` start an embedded PostgreSQL "
            "server and set it; otherwise point it at PostgreSQL, "
            "e.g. postgres://user@127.0.0.1:5432/gpucatalog"
        )
    scheme = urlsplit(url).scheme
    if scheme not in ("postgres", "postgresql", "pgsql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a PostgreSQL URL (postgres://...), got scheme "
            f"{scheme!r}; SQLite and others are not supported"
        )
    # The site runs under an ASGI server, where each request's synchronous code runs in a thread
    # of its own: a connection kept for reuse by its thread would never be reused, only left open.
    # So a process keeps a pool of open connections (psycopg_pool, Django's `pool` option) that
    # each request borrows and gives back, up to DATABASE_POOL_MAX_SIZE; 0 turns the pool off,
    # and then each request opens its own and closes it (DATABASE_CONN_MAX_AGE 0, the default)
    # or keeps it for that many seconds (docs/operations.md).
    max_age = env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0, environ=environ)
    pool_size = env_int("DATABASE_POOL_MAX_SIZE", 0 if max_age else 16, minimum=0, environ=environ)
    if pool_size and max_age:
        raise ImproperlyConfigured(
            "DATABASE_CONN_MAX_AGE keeps connections without the pool: set "
            "DATABASE_POOL_MAX_SIZE=0 with it, or leave DATABASE_CONN_MAX_AGE at 0"
        )
    try:
        config: dict[str, Any] = dict(
            dj_database_url.parse(url, conn_max_age=max_age, conn_health_checks=max_age > 0)
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if not config.get("NAME"):
        raise ImproperlyConfigured("DATABASE_URL must name a database, e.g. .../gpucatalog")
    config["ENGINE"] = "django.db.backends.postgresql"
    # A database host that stops answering fails a connection after this many seconds instead
    # of the operating system's TCP timeout (minutes), so /healthz and workers notice quickly.
    options = config.setdefault("OPTIONS", {})
    connect_timeout = env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1, environ=environ)
    options["connect_timeout"] = connect_timeout
    if pool_size:
        # A request waits at most as long for a free connection as for a new one.
        options["pool"] = {"min_size": 1, "max_size": pool_size, "timeout": connect_timeout}
    # PostgreSQL's JIT compiles any plan its estimate calls costly; the listing's facet counts
    # (a dozen EXISTS subqueries) are such plans but run in milliseconds, and compiling them
    # took seconds. Off for this site's sessions, unless DATABASE_URL's own `options` names jit.
    server_options = options.get("options", "")
    if "jit" not in server_options:
        options["options"] = f"{server_options} -c jit=off".strip()
    return config


# EMAIL_URL schemes -> (use_tls, use_ssl).
EMAIL_SCHEMES = {"smtp": (False, False), "smtp+tls": (True, False), "smtps": (False, True)}


def _default_smtp_port(*, use_tls: bool, use_ssl: bool) -> int:
    return 465 if use_ssl else 587 if use_tls else 25


def mailers_from_env(environ: Environ = None, *, production: bool = False) -> dict[str, Any]:
    """Return Django's MAILERS from EMAIL_URL (smtp://, smtp+tls://, smtps://) or EMAIL_HOST and co.

    With neither, development prints mail on the console and production sends through the
    SMTP server on localhost:25; the test runner swaps in its in-memory outbox.
    """
    url = _raw("EMAIL_URL", environ)
    host = _raw("EMAIL_HOST", environ)
    if url is not None and host is not None:
        raise ImproperlyConfigured("set EMAIL_URL or EMAIL_HOST, not both")
    options: dict[str, Any] = {
        "host": "localhost",
        "port": 25,
        "username": "",
        "password": "",
        "use_tls": False,
        "use_ssl": False,
        "timeout": env_int("EMAIL_TIMEOUT_SECONDS", 10, minimum=1, environ=environ),
    }
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in EMAIL_SCHEMES or not parts.hostname:
            raise ImproperlyConfigured(
                "EMAIL_URL must look like smtp+tls://user:password@host:587 (schemes smtp, "
                f"smtp+tls, smtps) with a host, got scheme {parts.scheme!r}"
            )
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured("EMAIL_URL has an invalid port") from None
        use_tls, use_ssl = EMAIL_SCHEMES[parts.scheme]
        options |= {
            "host": parts.hostname,
            "port": port or _default_smtp_port(use_tls=use_tls, use_ssl=use_ssl),
            "username": unquote(parts.username or ""),
            "password": unquote(parts.password or ""),
            "use_tls": use_tls,
            "use_ssl": use_ssl,
        }
    elif host is not None:
        use_tls = env_bool("EMAIL_USE_TLS", False, environ=environ)
        use_ssl = env_bool("EMAIL_USE_SSL", False, environ=environ)
        if use_tls and use_ssl:
            raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be true")
        default_port = _default_smtp_port(use_tls=use_tls, use_ssl=use_ssl)
        options |= {
            "host": host,
            "port": env_int("EMAIL_PORT", default_port, minimum=1, environ=environ),
            "username": env_str("EMAIL_HOST_USER", "", environ=environ),
            "password": env_str("EMAIL_HOST_PASSWORD", "", environ=environ),
            "use_tls": use_tls,
            "use_ssl": use_ssl,
        }
    elif not production:
        return {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
    return {
        "default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": options}
    }
