"""Settings for gpucatalog, read from the environment.

Every knob is an environment variable listed in `.env.example` and the README, read through the
strict parsers of `gpucatalog/env.py`: a bad value stops start-up with an error that names the
variable. `DJANGO_ENV` picks the defaults: `development` (for `make run`), `test`, or `production`.
"""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from gpucatalog.env import (
    database_from_env,
    env_bool,
    env_choice,
    env_decimal,
    env_emails,
    env_file_text,
    env_int,
    env_list,
    env_minutes_by_slug,
    env_origins,
    env_rate,
    env_secret_key,
    env_str,
    env_url,
    mailers_from_env,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# -- Core and security -----------------------------------------------------------------------------
DJANGO_ENV = env_choice("DJANGO_ENV", ("development", "test", "production"), "development")
PRODUCTION = DJANGO_ENV == "production"
TESTING = DJANGO_ENV == "test"
DEBUG = env_bool("DEBUG", DJANGO_ENV == "development")
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG must be false when DJANGO_ENV=production")
SECRET_KEY = (
    env_secret_key("SECRET_KEY")
    if PRODUCTION
    else env_str("SECRET_KEY", "django-insecure-development-only-key-never-use-in-production")
)
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required when DJANGO_ENV=production")
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS", [])
# The absolute base of the links the API and feeds hand out; unset: the host of the request.
SITE_URL = env_url("SITE_URL", ("http", "https"), None)
ROOT_URLCONF = "gpucatalog.urls"
WSGI_APPLICATION = "gpucatalog.wsgi.application"

# Security headers. Production answers only over HTTPS; a proxy in front sets X-Forwarded-Proto.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Admin messages live in the (Secure, HttpOnly) session: the cookie store would set and delete a
# `messages` cookie that carries neither flag.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 63072000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    CSRF_COOKIE_HTTPONLY = True
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# -- Content Security Policy: the site's own scripts, styles and images only ----------------------
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

# -- Apps and middleware ---------------------------------------------------------------------------
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
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Rate limits on /api/ and /feeds/ answer 429 before any session or view work is done.
    "offerings.web.middleware.RateLimitMiddleware",
    # More query fields than DATA_UPLOAD_MAX_NUMBER_FIELDS: 400 before anything reads request.GET.
    "offerings.web.middleware.TooManyFieldsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

# -- Templates -------------------------------------------------------------------------------------
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
                "offerings.web.context.currency",
            ],
            # The content package is not an app of its own: its tag library is named here.
            "libraries": {"content": "offerings.content.templatetags"},
        },
    },
]

# -- Database --------------------------------------------------------------------------------------
DATABASES = {"default": database_from_env()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# -- Cache, rate limits and locks: Redis when REDIS_URL is set, local memory otherwise -------------
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"), None)


def _cache(prefix: str, max_entries: int) -> dict:
    if REDIS_URL:
        return {
            "BACKEND": "offerings.web.cache_backend.PooledClientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": prefix,
        }
    return {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": prefix,
        "OPTIONS": {"MAX_ENTRIES": max_entries},
    }


# `default` holds whole responses (offerings/web/caching.py); the rate limits count in an alias of
# their own, so no amount of page traffic can evict a client's count.
CACHES = {"default": _cache("gpucatalog", 300), "ratelimit": _cache("gpucatalog-limits", 100_000)}
# How long a response is cached, keyed on the catalog's data version (0: off, the test default).
PAGE_CACHE_SECONDS = env_int("PAGE_CACHE_SECONDS", 0 if TESTING else 300, minimum=0)
# Rate limits per client IP (django-ratelimit, counted in the cache); off in the test settings.
RATELIMIT_ENABLE = env_bool("RATELIMIT_ENABLE", not TESTING)
RATELIMIT_USE_CACHE = "ratelimit"
CORRECTION_RATE = env_rate("CORRECTION_RATE", "5/h")
API_RATE = env_rate("API_RATE", "120/m")
FEED_RATE = env_rate("FEED_RATE", "30/m")
# Renders that miss the response cache (pages, exports, estimates, plans), per client IP.
RENDER_RATE = env_rate("RENDER_RATE", "60/m")
# django-axes: after AXES_FAILURE_LIMIT failed logins from one client IP, every login from it is
# refused (429) for AXES_COOLOFF_MINUTES; counted in Redis with REDIS_URL, else in the database.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 30, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_HANDLER = (
    "axes.handlers.cache.AxesCacheHandler"
    if REDIS_URL
    else "axes.handlers.database.AxesDatabaseHandler"
)

# -- Languages and time ----------------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# -- Static files ----------------------------------------------------------------------------------
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

# -- Provider keys and regions (refresh_prices skips a provider whose keys are unset) --------------
LAMBDA_API_KEY = env_str("LAMBDA_API_KEY", "")
DATACRUNCH_CLIENT_ID = env_str("DATACRUNCH_CLIENT_ID", "")
DATACRUNCH_CLIENT_SECRET = env_str("DATACRUNCH_CLIENT_SECRET", "")
RUNPOD_API_KEY = env_str("RUNPOD_API_KEY", "")
VAST_API_KEY = env_str("VAST_API_KEY", "")
GCP_API_KEY = env_str("GCP_API_KEY", "")
# Nebius service account: id, public key id, private key (PEM, "\n" escapes allowed, or a file).
NEBIUS_SERVICE_ACCOUNT_ID = env_str("NEBIUS_SERVICE_ACCOUNT_ID", "")
NEBIUS_PUBLIC_KEY_ID = env_str("NEBIUS_PUBLIC_KEY_ID", "")
NEBIUS_PRIVATE_KEY = env_str("NEBIUS_PRIVATE_KEY", "").replace("\\n", "\n") or env_file_text(
    "NEBIUS_PRIVATE_KEY_FILE", ""
)
# Regions each scraper reads, comma-separated; unset: the scraper's own default (.env.example).
AZURE_PRICE_REGIONS = env_list("AZURE_PRICE_REGIONS", [])
AWS_PRICE_REGIONS = env_list("AWS_PRICE_REGIONS", [])
OCI_PRICE_REGIONS = env_list("OCI_PRICE_REGIONS", [])
RUNPOD_PRICE_REGIONS = env_list("RUNPOD_PRICE_REGIONS", [])
GCP_PRICE_REGIONS = env_list("GCP_PRICE_REGIONS", [])
NEBIUS_PRICE_REGIONS = env_list("NEBIUS_PRICE_REGIONS", [])
SKYPILOT_CLOUDS = env_list("SKYPILOT_CLOUDS", [])  # SkyPilot catalog files to read; empty: all

# -- Catalog refresh -------------------------------------------------------------------------------
# A price observed longer ago than this is marked stale wherever it appears; a scraper run
# returning fewer offers than REFRESH_MIN_ROW_RATIO of the last good run is rejected whole.
PRICE_STALE_AFTER_HOURS = env_int("PRICE_STALE_AFTER_HOURS", 72, minimum=1)
REFRESH_MIN_ROW_RATIO = env_decimal("REFRESH_MIN_ROW_RATIO", "0.8", minimum=0, maximum=1)
# Each registered provider is refreshed every REFRESH_INTERVAL_MINUTES unless REFRESH_INTERVALS
# names it (aws=360,lambda=30), and is stale after REFRESH_STALE_AFTER_MINUTES (default: 2x that).
REFRESH_INTERVAL_MINUTES = env_int("REFRESH_INTERVAL_MINUTES", 360, minimum=5)
REFRESH_INTERVALS = env_minutes_by_slug("REFRESH_INTERVALS", minimum=5)
REFRESH_STALE_AFTER_MINUTES = env_minutes_by_slug("REFRESH_STALE_AFTER_MINUTES", minimum=5)
# How often check_freshness emails curators new problems, and refresh_rates fetches ECB rates.
REFRESH_CHECK_MINUTES = env_int("REFRESH_CHECK_MINUTES", 15, minimum=1)
REFRESH_RATES_MINUTES = env_int("REFRESH_RATES_MINUTES", 24 * 60, minimum=60)
# A refresh task's time limits: they must keep providers/schedule.py's timeout chain in order.
REFRESH_SOFT_TIME_LIMIT_SECONDS = env_int("REFRESH_SOFT_TIME_LIMIT_SECONDS", 900, minimum=60)
REFRESH_HARD_TIME_LIMIT_SECONDS = env_int("REFRESH_HARD_TIME_LIMIT_SECONDS", 960, minimum=60)
# Transient failures (network given up on, database unreachable) are retried with capped, jittered
# exponential backoff; a task whose worker died is redelivered at most REFRESH_MAX_REDELIVERIES
# times (counted in the cache), then recorded as a failed run.
REFRESH_MAX_RETRIES = env_int("REFRESH_MAX_RETRIES", 3, minimum=0)
REFRESH_RETRY_BACKOFF_SECONDS = env_int("REFRESH_RETRY_BACKOFF_SECONDS", 60, minimum=1)
REFRESH_RETRY_BACKOFF_MAX_SECONDS = env_int("REFRESH_RETRY_BACKOFF_MAX_SECONDS", 1800, minimum=1)
REFRESH_MAX_REDELIVERIES = env_int("REFRESH_MAX_REDELIVERIES", 2, minimum=0)
# Tests and demos only: workers replay DIR/<slug>/manifest.json instead of the network. Tests only:
# the first refresh to reach its upsert writes its pid to the pause file and sleeps before commit.
REFRESH_REPLAY_DIR = env_str("REFRESH_REPLAY_DIR", "")
REFRESH_TEST_PAUSE_FILE = env_str("REFRESH_TEST_PAUSE_FILE", "")
REFRESH_TEST_PAUSE_SECONDS = env_int("REFRESH_TEST_PAUSE_SECONDS", 30, minimum=1)
if PRODUCTION and REFRESH_REPLAY_DIR:
    raise ImproperlyConfigured("REFRESH_REPLAY_DIR is for tests and demos, not production")
if REFRESH_TEST_PAUSE_FILE and not TESTING:
    raise ImproperlyConfigured("REFRESH_TEST_PAUSE_FILE is honoured only with DJANGO_ENV=test")

# -- Data dumps (/data/) ---------------------------------------------------------------------------
# Where `publish_dump` writes a snapshot of each data version (every web server must read the same
# directory), how long a snapshot is kept after its date, and how often beat publishes one.
DUMP_DIR = Path(env_str("DUMP_DIR", str(BASE_DIR / "var" / "dumps")))
DUMP_KEEP_DAYS = env_int("DUMP_KEEP_DAYS", 90, minimum=1)
DUMP_INTERVAL_MINUTES = env_int("DUMP_INTERVAL_MINUTES", 24 * 60, minimum=60)

# -- Celery, on Redis: without CELERY_BROKER_URL no task can be sent (/healthz says so) ------------
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", ("redis", "rediss"), None)
CELERY_TASK_ALWAYS_EAGER = False
# Late acks: a message is acknowledged only after its task finished, so a worker lost mid-task
# gets it redelivered (reject_on_worker_lost); one message prefetched at a time.
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
# Beat builds its schedule from the registry (providers/schedule.py) and sends it only while it
# holds a lock in the broker's Redis, so a second beat stands by (providers/beat.py).
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

# -- Mail, and the curators emailed when a provider fails or goes stale ----------------------------
CURATOR_EMAILS = env_emails("CURATOR_EMAILS", [])
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "gpucatalog@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
MAILERS = mailers_from_env(production=PRODUCTION)
if PRODUCTION and CURATOR_EMAILS and not (env_str("EMAIL_URL", "") or env_str("EMAIL_HOST", "")):
    raise ImproperlyConfigured(
        "CURATOR_EMAILS is set but no mail server is: set EMAIL_URL or EMAIL_HOST"
    )

# -- Logging ---------------------------------------------------------------------------------------
LOG_LEVEL = env_choice("LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "INFO")
# plain, or json (one object per line); the lines of a refresh carry its provider, run and task.
LOG_FORMAT = env_choice("LOG_FORMAT", ("plain", "json"), "plain")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s%(refresh)s %(message)s"},
        "json": {"()": "providers.logcontext.JsonFormatter"},
    },
    "filters": {"refresh": {"()": "providers.logcontext.RefreshContextFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["refresh"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
