"""Settings for gpucatalog, read from the environment.

Every knob is an environment variable listed in `.env.example` and the README. Each value is
parsed strictly: a bad value stops start-up with an error that names the variable.
`DJANGO_ENV` picks the defaults: `development` (for `make run`), `test`, or `production`.
"""

import os
import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent

_MISSING = object()
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str, environ: dict[str, str] | None = None) -> str | None:
    """Return the variable's value, treating an empty string as unset."""
    value = (os.environ if environ is None else environ).get(name)
    return value if value not in (None, "") else None


def env_str(name: str, default=_MISSING, *, environ=None) -> str:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return default
    return value


def env_bool(name: str, default=_MISSING, *, environ=None) -> bool:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of true/false/1/0/yes/no/on/off, got {value!r}")


def env_int(name: str, default=_MISSING, *, minimum: int | None = None, environ=None) -> int:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def env_decimal(
    name: str, default=_MISSING, *, minimum=None, maximum=None, environ=None
) -> Decimal:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return Decimal(default)
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


def env_list(name: str, default=_MISSING, *, environ=None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name} must be a comma-separated list without empty items")
    return items


def env_choice(name: str, choices: tuple[str, ...], default=_MISSING, *, environ=None) -> str:
    value = env_str(name, default, environ=environ)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_url(name: str, schemes: tuple[str, ...], default=_MISSING, *, environ=None) -> str | None:
    value = _raw(name, environ)
    if value is None:
        if default is _MISSING:
            raise ImproperlyConfigured(f"{name} is required but not set")
        return default
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.hostname:
        raise ImproperlyConfigured(
            f"{name} must be a URL with scheme {' or '.join(schemes)} and a host, got {value!r}"
        )
    return value


def env_rate(name: str, default=_MISSING, *, environ=None) -> str:
    """A django-ratelimit rate: requests per period, e.g. 5/h, 120/m or 20/10m."""
    value = env_str(name, default, environ=environ).strip()
    if not re.fullmatch(r"[1-9]\d*/\d*[smhd]", value):
        raise ImproperlyConfigured(f"{name} must look like 5/h, 120/m or 20/10m, got {value!r}")
    return value


def database_from_env(environ=None) -> dict:
    """Parse DATABASE_URL into Django's DATABASES entry; PostgreSQL only."""
    url = _raw("DATABASE_URL", environ)
    if url is None:
        raise ImproperlyConfigured(
            "DATABASE_URL is required: `make run` and `make test` start an embedded PostgreSQL "
            "server and set it; otherwise point it at PostgreSQL, "
            "e.g. postgres://user@127.0.0.1:5432/gpucatalog"
        )
    if urlsplit(url).scheme not in ("postgres", "postgresql", "pgsql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a PostgreSQL URL (postgres://...), got scheme "
            f"{urlsplit(url).scheme!r}; SQLite and others are not supported"
        )
    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if not config.get("NAME"):
        raise ImproperlyConfigured("DATABASE_URL must name a database, e.g. .../gpucatalog")
    config["ENGINE"] = "django.db.backends.postgresql"
    # A database host that stops answering fails a connection after this many seconds instead
    # of the operating system's TCP timeout (minutes), so /healthz and workers notice quickly.
    config.setdefault("OPTIONS", {})["connect_timeout"] = env_int(
        "DATABASE_CONNECT_TIMEOUT", 5, minimum=1, environ=environ
    )
    return config


DJANGO_ENV = env_choice("DJANGO_ENV", ("development", "test", "production"), "development")
PRODUCTION = DJANGO_ENV == "production"
TESTING = DJANGO_ENV == "test"

DEBUG = env_bool("DEBUG", DJANGO_ENV == "development")
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG must be false when DJANGO_ENV=production")

if PRODUCTION:
    SECRET_KEY = env_str("SECRET_KEY")
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters with 5 distinct ones")
else:
    SECRET_KEY = env_str(
        "SECRET_KEY", "django-insecure-development-only-key-never-use-in-production"
    )

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required when DJANGO_ENV=production")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if urlsplit(_origin).scheme not in ("http", "https"):
        raise ImproperlyConfigured(
            f"CSRF_TRUSTED_ORIGINS items must start with https://: {_origin}"
        )

# The absolute base of links the API and feeds hand out (e.g. https://gpucatalog.example);
# empty means "the host of the request".
SITE_URL = env_url("SITE_URL", ("http", "https"), None)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.sitemaps",
    "django.contrib.postgres",
    "django_filters",
    "offerings",
    "providers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gpucatalog.urls"
WSGI_APPLICATION = "gpucatalog.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # The content package is not an app of its own: its tag library is named here.
            "libraries": {"content": "offerings.content.templatetags"},
        },
    },
]

DATABASES = {"default": database_from_env()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Cache, rate limits and locks: Redis when REDIS_URL is set, local memory otherwise.
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"), None)
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "gpucatalog",
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "gpucatalog",
        }
    }

# Celery: the broker is Redis. Without CELERY_BROKER_URL no task can be sent and /healthz says so.
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", ("redis", "rediss"), None)
CELERY_TASK_ALWAYS_EAGER = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if TESTING
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Serve static files through WhiteNoise from the finders while developing and testing, so no
# collectstatic is needed there; production serves the hashed, compressed files in STATIC_ROOT.
WHITENOISE_USE_FINDERS = DEBUG or TESTING
WHITENOISE_AUTOREFRESH = DEBUG or TESTING

# Catalog behaviour.
# A price observed longer ago than this is marked stale wherever it appears.
PRICE_STALE_AFTER_HOURS = env_int("PRICE_STALE_AFTER_HOURS", 72, minimum=1)
# A scraper run returning fewer offers than this share of the last good run is rejected whole.
REFRESH_MIN_ROW_RATIO = env_decimal("REFRESH_MIN_ROW_RATIO", "0.8", minimum=0, maximum=1)

# Rendered filter page and API responses are cached this long, keyed on the catalog's data
# version (offerings/caching.py); 0 turns the cache off (the default in the test settings).
PAGE_CACHE_SECONDS = env_int("PAGE_CACHE_SECONDS", 0 if TESTING else 300, minimum=0)
# Each web process also keeps its most requested finished pages in memory (offerings/caching.py,
# LocalPageCache), re-reading the data version at most this often: a page is at most this far
# behind a write.
PAGE_CACHE_LOCAL_ENTRIES = env_int("PAGE_CACHE_LOCAL_ENTRIES", 256, minimum=0)
PAGE_CACHE_VERSION_CHECK_SECONDS = float(
    env_decimal("PAGE_CACHE_VERSION_CHECK_SECONDS", "1", minimum=0, maximum=60)
)

# Rate limits (django-ratelimit, counted in the cache: Redis with REDIS_URL, else local memory).
# Off in the test settings; the tests of the limits switch them on.
RATELIMIT_ENABLE = env_bool("RATELIMIT_ENABLE", not TESTING)
RATELIMIT_USE_CACHE = "default"
CORRECTION_RATE = env_rate("CORRECTION_RATE", "5/h")
# Per client IP: the JSON API (/api/...) and the feeds (/feeds/...); over it they answer 429.
API_RATE = env_rate("API_RATE", "120/m")
FEED_RATE = env_rate("FEED_RATE", "30/m")

# Provider scrapers (refresh_prices). A provider whose API key is unset is skipped.
LAMBDA_API_KEY = env_str("LAMBDA_API_KEY", "")
# Verda (DataCrunch) OAuth2 client credentials; both are needed.
DATACRUNCH_CLIENT_ID = env_str("DATACRUNCH_CLIENT_ID", "")
DATACRUNCH_CLIENT_SECRET = env_str("DATACRUNCH_CLIENT_SECRET", "")
# RunPod GraphQL API key.
RUNPOD_API_KEY = env_str("RUNPOD_API_KEY", "")
# Vast.ai API key (offer search).
VAST_API_KEY = env_str("VAST_API_KEY", "")
# Google Cloud API key for the Cloud Billing Catalog API (any project).
GCP_API_KEY = env_str("GCP_API_KEY", "")
# Nebius AI Cloud service account: its id, the id of its public key and the matching private
# key (PEM text, "\n" escapes allowed, or a file named by NEBIUS_PRIVATE_KEY_FILE); all needed.
NEBIUS_SERVICE_ACCOUNT_ID = env_str("NEBIUS_SERVICE_ACCOUNT_ID", "")
NEBIUS_PUBLIC_KEY_ID = env_str("NEBIUS_PUBLIC_KEY_ID", "")
NEBIUS_PRIVATE_KEY = env_str("NEBIUS_PRIVATE_KEY", "").replace("\\n", "\n")
if not NEBIUS_PRIVATE_KEY and env_str("NEBIUS_PRIVATE_KEY_FILE", ""):
    try:
        NEBIUS_PRIVATE_KEY = Path(env_str("NEBIUS_PRIVATE_KEY_FILE")).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImproperlyConfigured(f"NEBIUS_PRIVATE_KEY_FILE cannot be read: {exc}") from None
# Regions each scraper reads, comma-separated; unset means the scraper's own default list.
AZURE_PRICE_REGIONS = env_list("AZURE_PRICE_REGIONS", [])
AWS_PRICE_REGIONS = env_list("AWS_PRICE_REGIONS", [])
# OCI lists one global price; it is written into these regions (default: eu-amsterdam-1).
OCI_PRICE_REGIONS = env_list("OCI_PRICE_REGIONS", [])
# RunPod data-center ids / country codes to query (default: every listed one).
RUNPOD_PRICE_REGIONS = env_list("RUNPOD_PRICE_REGIONS", [])
# GCP regions to price (default: every region the GPU SKUs list).
GCP_PRICE_REGIONS = env_list("GCP_PRICE_REGIONS", [])
# Nebius regions to price (default: the region of every project the service account sees).
NEBIUS_PRICE_REGIONS = env_list("NEBIUS_PRICE_REGIONS", [])

# Security headers. Production answers only over HTTPS; a proxy in front sets X-Forwarded-Proto.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 63072000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    CSRF_COOKIE_HTTPONLY = True

# -- Security: brute force on the admin login, rate limits, the admin's CSP (issue 10) --------
INSTALLED_APPS += ["axes"]
# Admin messages live in the (Secure, HttpOnly) session: the cookie store would set and delete a
# `messages` cookie that carries neither flag.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
# Rate limits on /api/ and /feeds/ answer 429 before any session or view work is done.
MIDDLEWARE.insert(
    MIDDLEWARE.index("whitenoise.middleware.WhiteNoiseMiddleware") + 1,
    "offerings.middleware.RateLimitMiddleware",
)
# django-axes: after AXES_FAILURE_LIMIT failed logins from one client IP, every login from it
# is refused (429) for AXES_COOLOFF_MINUTES. Counted in Redis with REDIS_URL, in the database
# otherwise (local memory would count per process).
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 30, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_HANDLER = (
    "axes.handlers.cache.AxesCacheHandler"
    if REDIS_URL
    else "axes.handlers.database.AxesDatabaseHandler"
)

LOG_LEVEL = env_choice("LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# -- Scheduled refresh on Celery, curator alerts (issue 7) -----------------------------------------


def env_minutes_by_slug(name: str, *, minimum: int = 1, environ=None) -> dict[str, int]:
    """A per-provider map written `aws=360,azure=360,lambda=30` (slug=minutes), parsed strictly."""
    value = _raw(name, environ)
    if value is None:
        return {}
    result: dict[str, int] = {}
    for item in value.split(","):
        slug, sep, minutes = (part.strip() for part in item.partition("="))
        if not sep or not re.fullmatch(r"[a-z0-9]+", slug) or not re.fullmatch(r"\d+", minutes):
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


def mailers_from_env(environ=None, *, production: bool = False) -> dict:
    """Django's MAILERS from EMAIL_URL (smtp://, smtp+tls://, smtps://) or EMAIL_HOST and co.

    With neither, development prints mail on the console and production sends through the
    SMTP server on localhost:25; the test runner swaps in its in-memory outbox.
    """
    url = _raw("EMAIL_URL", environ)
    host = _raw("EMAIL_HOST", environ)
    if url is not None and host is not None:
        raise ImproperlyConfigured("set EMAIL_URL or EMAIL_HOST, not both")
    options = {
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
        schemes = {"smtp": (False, False), "smtp+tls": (True, False), "smtps": (False, True)}
        if parts.scheme not in schemes or not parts.hostname:
            raise ImproperlyConfigured(
                "EMAIL_URL must look like smtp+tls://user:password@host:587 (schemes smtp, "
                f"smtp+tls, smtps) with a host, got scheme {parts.scheme!r}"
            )
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured("EMAIL_URL has an invalid port") from None
        use_tls, use_ssl = schemes[parts.scheme]
        options |= {
            "host": parts.hostname,
            "port": port or (465 if use_ssl else 587 if use_tls else 25),
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
        default_port = 465 if use_ssl else 587 if use_tls else 25
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


# Minutes between scheduled refreshes: REFRESH_INTERVAL_MINUTES for every provider, unless
# REFRESH_INTERVALS names it (aws=360,lambda=30). Each registered provider gets a beat entry.
REFRESH_INTERVAL_MINUTES = env_int("REFRESH_INTERVAL_MINUTES", 360, minimum=5)
REFRESH_INTERVALS = env_minutes_by_slug("REFRESH_INTERVALS", minimum=5)
# A provider whose last good run is older than this is "stale" (default: twice its interval).
REFRESH_STALE_AFTER_MINUTES = env_minutes_by_slug("REFRESH_STALE_AFTER_MINUTES", minimum=5)
# How often check_freshness looks for failing and stale providers (and emails the curators).
REFRESH_CHECK_MINUTES = env_int("REFRESH_CHECK_MINUTES", 15, minimum=1)
# How often beat fetches the ECB's daily reference rates (refresh_rates); default once a day.
REFRESH_RATES_MINUTES = env_int("REFRESH_RATES_MINUTES", 24 * 60, minimum=60)
# Time limits of one provider's refresh task; see providers/schedule.py for the timeout chain
# they must respect (HTTP retries < soft < hard < lock < broker visibility timeout).
REFRESH_SOFT_TIME_LIMIT_SECONDS = env_int("REFRESH_SOFT_TIME_LIMIT_SECONDS", 900, minimum=60)
REFRESH_HARD_TIME_LIMIT_SECONDS = env_int("REFRESH_HARD_TIME_LIMIT_SECONDS", 960, minimum=60)
# Task-level retries of a transient failure (network given up on, database unreachable):
# exponential backoff from the base, capped, with jitter.
REFRESH_MAX_RETRIES = env_int("REFRESH_MAX_RETRIES", 3, minimum=0)
REFRESH_RETRY_BACKOFF_SECONDS = env_int("REFRESH_RETRY_BACKOFF_SECONDS", 60, minimum=1)
REFRESH_RETRY_BACKOFF_MAX_SECONDS = env_int("REFRESH_RETRY_BACKOFF_MAX_SECONDS", 1800, minimum=1)
# A task whose worker died under it is redelivered at most this many times, then given up on
# with a failed refresh run (deliveries are counted in the cache: Redis with REDIS_URL).
REFRESH_MAX_REDELIVERIES = env_int("REFRESH_MAX_REDELIVERIES", 2, minimum=0)
# Tests and demos only, refused in production: the worker serves each provider from
# DIR/<slug>/manifest.json (the --replay format) instead of the network.
REFRESH_REPLAY_DIR = env_str("REFRESH_REPLAY_DIR", "")
# Test-only hook (DJANGO_ENV=test): the first refresh to reach its upsert writes its pid to
# this file and sleeps before committing, so a test can kill the worker mid-write.
REFRESH_TEST_PAUSE_FILE = env_str("REFRESH_TEST_PAUSE_FILE", "")
REFRESH_TEST_PAUSE_SECONDS = env_int("REFRESH_TEST_PAUSE_SECONDS", 30, minimum=1)
if PRODUCTION and REFRESH_REPLAY_DIR:
    raise ImproperlyConfigured("REFRESH_REPLAY_DIR is for tests and demos, not production")
if REFRESH_TEST_PAUSE_FILE and not TESTING:
    raise ImproperlyConfigured("REFRESH_TEST_PAUSE_FILE is honoured only with DJANGO_ENV=test")

# Celery. Late acks: a message is acknowledged only after its task finished, so a worker lost
# mid-task gets it redelivered (reject_on_worker_lost); one message prefetched at a time.
CELERY_VISIBILITY_TIMEOUT_SECONDS = env_int("CELERY_VISIBILITY_TIMEOUT_SECONDS", 3600, minimum=60)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Celery logs through LOGGING below instead of replacing the root handlers.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# The beat schedule is built from the provider registry in providers/schedule.py at start-up;
# beat keeps it in the broker's Redis (RedBeat) and sends it only while it holds a Redis lock, so
# a second beat stands by instead of sending every task twice (providers/beat.py). A beat killed
# outright keeps the lock until BEAT_LOCK_TIMEOUT_SECONDS; each tick (at most
# BEAT_MAX_LOOP_SECONDS apart) extends it.
CELERY_BEAT_SCHEDULER = "providers.beat:SingleBeatScheduler"
BEAT_MAX_LOOP_SECONDS = env_int("BEAT_MAX_LOOP_SECONDS", 30, minimum=1)
BEAT_LOCK_TIMEOUT_SECONDS = env_int(
    "BEAT_LOCK_TIMEOUT_SECONDS", 5 * BEAT_MAX_LOOP_SECONDS, minimum=2
)
if BEAT_LOCK_TIMEOUT_SECONDS < 2 * BEAT_MAX_LOOP_SECONDS:
    raise ImproperlyConfigured(
        f"BEAT_LOCK_TIMEOUT_SECONDS ({BEAT_LOCK_TIMEOUT_SECONDS}) must be at least twice "
        f"BEAT_MAX_LOOP_SECONDS ({BEAT_MAX_LOOP_SECONDS}): the lock must outlive a tick"
    )
CELERY_BEAT_MAX_LOOP_INTERVAL = BEAT_MAX_LOOP_SECONDS
CELERY_REDBEAT_REDIS_URL = CELERY_BROKER_URL
CELERY_REDBEAT_LOCK_TIMEOUT = BEAT_LOCK_TIMEOUT_SECONDS
# Passed to beat's Redis client: a Redis that stops answering is noticed, not waited on.
CELERY_REDBEAT_REDIS_OPTIONS = {"socket_timeout": 5, "socket_connect_timeout": 5}

# Curator alerts: failing or stale providers are emailed to these addresses (comma-separated).
CURATOR_EMAILS = env_list("CURATOR_EMAILS", [])
for _address in CURATOR_EMAILS:
    if not re.fullmatch(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+", _address):
        raise ImproperlyConfigured(f"CURATOR_EMAILS: {_address!r} is not an email address")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "gpucatalog@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
MAILERS = mailers_from_env(production=PRODUCTION)
if PRODUCTION and CURATOR_EMAILS and not (_raw("EMAIL_URL") or _raw("EMAIL_HOST")):
    raise ImproperlyConfigured(
        "CURATOR_EMAILS is set but no mail server is: set EMAIL_URL or EMAIL_HOST"
    )

# Log lines of a refresh carry its provider, refresh run and task ids.
LOGGING["filters"] = {"refresh": {"()": "providers.logcontext.RefreshContextFilter"}}
LOGGING["handlers"]["console"]["filters"] = ["refresh"]
LOGGING["formatters"]["plain"]["format"] = (
    "%(asctime)s %(levelname)s %(name)s%(refresh)s %(message)s"
)
# LOG_FORMAT=json: one JSON object per line, with provider, run_id and task_id during a refresh.
LOG_FORMAT = env_choice("LOG_FORMAT", ("plain", "json"), "plain")
LOGGING["formatters"]["json"] = {"()": "providers.logcontext.JsonFormatter"}
LOGGING["handlers"]["console"]["formatter"] = LOG_FORMAT
