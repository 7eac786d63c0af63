"""Settings shared by every environment; everything that varies comes from the environment (README.md)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from console.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Installed from a wheel, the site-wide templates and static files sit inside the package
# (`console/site/`, copied there by setup.py); in a checkout they are the top-level folders.
_PACKAGED_SITE = Path(__file__).resolve().parent.parent / "site"
SITE_DIR = _PACKAGED_SITE if _PACKAGED_SITE.is_dir() else BASE_DIR
# A checkout keeps its state in its own var/; an installed console in ./var of where it runs.
_DEFAULT_VAR = BASE_DIR / "var" if (BASE_DIR / "manage.py").is_file() else Path.cwd() / "var"
VAR_DIR = Path(os.environ.get("STALWART_VAR_DIR") or _DEFAULT_VAR)

SECRET_KEY = os.environ.get("STALWART_SECRET_KEY", "")
DEBUG = False
ALLOWED_HOSTS = [h for h in os.environ.get("STALWART_ALLOWED_HOSTS", "").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "console",
    "firewall",
    "rulebooks",
    "guard",
    "router",
    "proof",
    "axes",
]

MIDDLEWARE = [
    # /healthz and /readyz, answered before the host check and the HTTPS redirect (console/probes.py).
    "console.probes.ProbeMiddleware",
    # Every request's id, in its log lines and in the response's X-Request-ID (console/logs.py).
    "console.logs.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "console.middleware.ApiQueryMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.LoginRequiredMiddleware",
    # A page's form errors in its organisation's language (console/errors_i18n.py).
    "console.middleware.OrganisationLanguageMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# Sign-in is throttled by django-axes: AxesStandaloneBackend refuses a locked-out account and
# address before the password is checked; the attempts live in the database (every process of
# `make run` and of a deployment sees the same counts).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.organisation",
            ],
        },
    },
]

# Connections are kept across requests (`STALWART_DB_CONN_MAX_AGE` seconds; 0 opens one per
# request) and checked before a request reuses one, so a database restart costs one reconnect.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'stalwart.sqlite3'}"),
        conn_max_age=int(os.environ.get("STALWART_DB_CONN_MAX_AGE", "600")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql") and os.environ.get(
    "STALWART_DB_PREPARED", "1"
) not in ("0", "false", "no"):
    # The decision endpoints' own statements (console/statements.py) bind their parameters on the
    # server, which prepares each the fifth time it runs on a connection. Django's own queries
    # keep binding on the client and are never prepared. `STALWART_DB_PREPARED=0` turns it off,
    # for a pooler that cannot keep prepared statements (PgBouncer's transaction mode before 1.21).
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The web process and the workers share the file: writers queue (IMMEDIATE) rather than
    # fail on a lock upgrade, and readers never wait for a writer (WAL).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# After this many failed sign-ins for one account from one address, that pair is locked out
# (429) for the cool-off; a right password after the lockout does not get in either.
AXES_FAILURE_LIMIT = int(os.environ.get("STALWART_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("STALWART_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [SITE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

REDIS_URL = os.environ.get("REDIS_URL", "")

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "console.cache.SharedRedisCache", "LOCATION": REDIS_URL}}
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}
else:
    # The embedded broker: kombu's SQLAlchemy transport over var/broker.sqlite3 (console/broker.py),
    # so `make run` needs no Redis.
    from console.broker import TRANSPORT, broker_url

    VAR_DIR.mkdir(parents=True, exist_ok=True)
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CELERY_BROKER_URL = broker_url(VAR_DIR)
    CELERY_BROKER_TRANSPORT = TRANSPORT
    CELERY_BROKER_TRANSPORT_OPTIONS = {}

CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = {
    # Finds events and notifications that no task was sent for (the broker was down).
    "sweep-outbox": {"task": "firewall.sweep", "schedule": 2.0},
    # Runs the secondary steps of PARTIAL writes that are due (the outbox of guard.PendingStep).
    "reconcile-partial": {"task": "guard.reconcile", "schedule": 5.0},
    # Deletes the writes /check allowed and nobody reported, once they expired (guard.running).
    "expire-checked-writes": {"task": "guard.expire_checked", "schedule": 600.0},
    # Re-sends queued graph proofs and retries those whose worker was lost (their lease lapsed).
    "sweep-proofs": {"task": "proof.sweep", "schedule": 5.0},
    # A worker that takes it writes when it last did: the dashboard and Health page read it.
    "worker-heartbeat": {
        "task": "console.worker_heartbeat",
        "schedule": 5.0,
        "options": {"expires": 10.0},
    },
}
if not REDIS_URL:
    # The embedded broker keeps delivered messages' rows: the beat removes the old ones.
    CELERY_BEAT_SCHEDULE["prune-embedded-broker"] = {
        "task": "console.broker_prune",
        "schedule": 600.0,
    }
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "console.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "console.api.pagination.Pages",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "console.api.errors.exception_handler",
    # JSON only; the rulebook views also take a file (console.api.parsers.WITH_FILES).
    "DEFAULT_PARSER_CLASSES": ["console.api.parsers.StrictJSONParser"],
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Stalwart console API",
    "DESCRIPTION": "Organisations, settings, audit rows and the event feed of a Stalwart console.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/v1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # S1, S2 and the confirmation reading share one set of modes: one enum, named once.
    "ENUM_NAME_OVERRIDES": {
        "SaidModeEnum": "console.models.SaidMode",
        "GroundedModeEnum": "console.models.GroundedMode",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "console.api.schema.add_error_responses",
    ],
}

# Text lines by default; `STALWART_LOG_FORMAT=json` writes JSON lines (console/logs.py).
STALWART_LOG_FORMAT = os.environ.get("STALWART_LOG_FORMAT", "text")
if STALWART_LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured("STALWART_LOG_FORMAT must be `text` or `json`")
LOGGING = logging_config(STALWART_LOG_FORMAT, os.environ.get("STALWART_LOG_LEVEL", "INFO"))

# The key of the audit chain's HMAC and of its signed checkpoints; never stored in the database.
# Unset, it is derived from SECRET_KEY (console/audit.py).
STALWART_AUDIT_KEY = os.environ.get("STALWART_AUDIT_KEY", "")
# The secret each organisation's bundle key (Ed25519, console/bundles.py) is derived from; never
# stored in the database. Unset, SECRET_KEY. Changing it changes every organisation's public key.
STALWART_BUNDLE_SECRET = os.environ.get("STALWART_BUNDLE_SECRET", "")
# The longest a bundle long-poll waits here (`GET /v1/bundle?wait=`, at most 30): each waiting
# request holds a web thread.
STALWART_BUNDLE_MAX_WAIT = float(os.environ.get("STALWART_BUNDLE_MAX_WAIT", "30"))
# How many bundle long-polls may wait at once in one web process (beyond: answered at once, with
# Retry-After); by default half the process's threads, so the others keep serving.
STALWART_BUNDLE_MAX_POLLS = int(
    os.environ.get("STALWART_BUNDLE_MAX_POLLS")
    or max(1, int(os.environ.get("STALWART_WEB_THREADS") or 4) // 2)
)
# Seconds between two re-checks of a waiting long-poll: the safety net beside Redis pub/sub, and
# all there is while Redis is down.
STALWART_BUNDLE_RECHECK = float(os.environ.get("STALWART_BUNDLE_RECHECK", "1"))
# Seconds the previous bundle key is still listed by GET /v1/bundle/key after a rotation.
STALWART_BUNDLE_KEY_GRACE = float(os.environ.get("STALWART_BUNDLE_KEY_GRACE", str(7 * 86400)))
# Signed anchors of every chain, appended outside the database as rows commit ("" switches off).
STALWART_AUDIT_ANCHOR_FILE = os.environ.get(
    "STALWART_AUDIT_ANCHOR_FILE", str(VAR_DIR / "audit-anchors.jsonl")
)

# How many outbox events a worker matches in one transaction.
STALWART_MATCH_BATCH = int(os.environ.get("STALWART_MATCH_BATCH", "500"))

# A worker not heard from for this long is shown as missing on the dashboard and the Health page.
STALWART_WORKER_STALE_SECONDS = float(os.environ.get("STALWART_WORKER_STALE_SECONDS", "30"))

# How long the health check waits for a worker to answer its ping task.
STALWART_HEALTH_WORKER_TIMEOUT = float(os.environ.get("STALWART_HEALTH_WORKER_TIMEOUT", "3"))

# Graph-proof jobs: a worker's lease on a job (renewed while it proves), and the attempts made
# before a job whose workers keep being lost ends `error`.
STALWART_PROOF_LEASE_SECONDS = float(os.environ.get("STALWART_PROOF_LEASE_SECONDS", "60"))
STALWART_PROOF_MAX_ATTEMPTS = int(os.environ.get("STALWART_PROOF_MAX_ATTEMPTS", "3"))

# The API's edge (console/api/parsers.py): the largest body it reads (413 past it; Django's own
# bound on form bodies is the same) and the deepest nesting of a JSON body it takes.
STALWART_API_MAX_BODY_BYTES = int(os.environ.get("STALWART_API_MAX_BODY_BYTES", "2621440"))
DATA_UPLOAD_MAX_MEMORY_SIZE = STALWART_API_MAX_BODY_BYTES
STALWART_API_MAX_JSON_DEPTH = int(os.environ.get("STALWART_API_MAX_JSON_DEPTH", "64"))

# Decision logs sent by runtimes (`POST /v1/decisions`, console/decisions.py): the most records in
# one batch, the largest record (its JSON, in bytes) and the deepest nesting of a record.
STALWART_DECISIONS_MAX_BATCH = int(os.environ.get("STALWART_DECISIONS_MAX_BATCH", "1000"))
STALWART_DECISIONS_MAX_RECORD_BYTES = int(
    os.environ.get("STALWART_DECISIONS_MAX_RECORD_BYTES", "65536")
)
STALWART_DECISIONS_MAX_DEPTH = int(os.environ.get("STALWART_DECISIONS_MAX_DEPTH", "16"))

# Failed API-key authentications per address (console/api/authentication.py): past the limit
# within the window, every key from that address answers 429 until the window ends.
STALWART_API_KEY_FAILURE_LIMIT = int(os.environ.get("STALWART_API_KEY_FAILURE_LIMIT", "20"))
STALWART_API_KEY_FAILURE_WINDOW = int(os.environ.get("STALWART_API_KEY_FAILURE_WINDOW", "300"))

# API keys are authenticated from the shared cache for this many seconds (console/services.py);
# a revocation drops the key from it at once. Without Redis the cache is each process's own,
# which another process's revocation cannot reach, so it is off unless set.
STALWART_API_KEY_CACHE_SECONDS = int(
    os.environ.get("STALWART_API_KEY_CACHE_SECONDS", "300" if REDIS_URL else "0")
)
# A key's `last_used_at` is written at most once per this many seconds (0: on every request).
STALWART_API_KEY_LAST_USED_SECONDS = int(os.environ.get("STALWART_API_KEY_LAST_USED_SECONDS", "60"))

# Group commit of decision events (console/eventwriter.py): on PostgreSQL, a decision made
# outside a transaction hands its event to its process's writer thread, which writes the events
# of every decision waiting then in one INSERT and one COMMIT; each request is answered once its
# event is committed. Off (0): each decision writes and commits its own event. At most this many
# decisions share one transaction; a request waits at most this many seconds for its event.
STALWART_EVENT_GROUP_COMMIT = os.environ.get("STALWART_EVENT_GROUP_COMMIT", "1") == "1"
STALWART_EVENT_GROUP_COMMIT_MOST = int(os.environ.get("STALWART_EVENT_GROUP_COMMIT_MOST", "200"))
STALWART_EVENT_WRITE_TIMEOUT = float(os.environ.get("STALWART_EVENT_WRITE_TIMEOUT", "30"))
