"""The environment readers parse strictly, with errors that name the variable."""

from decimal import Decimal

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

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

SMTP = "django.core.mail.backends.smtp.EmailBackend"


# -- values: text, flags, numbers, lists, choices, URLs -------------------------------------------


@pytest.mark.parametrize(
    ("parser", "value", "message"),
    [
        (env_bool, "maybe", "FLAG must be one of true/false"),
        (env_int, "12a", "FLAG must be a whole number"),
        (env_decimal, "abc", "FLAG must be a decimal number"),
        (env_decimal, "NaN", "FLAG must be a finite number"),
        (env_list, "a,,b", "FLAG must be a comma-separated list"),
        (env_origins, "gpucatalog.example", "FLAG items must start with https://"),
        (env_emails, "prices@example.com,not-an-address", "FLAG: 'not-an-address' is not an"),
    ],
)
def test_a_bad_value_is_refused_with_the_variable_named(parser, value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        parser("FLAG", environ={"FLAG": value})


def test_values_parse_and_an_empty_value_falls_back_to_the_default():
    assert env_bool("F", environ={"F": "Yes"}) is True
    assert env_bool("F", environ={"F": "off"}) is False
    assert env_bool("F", False, environ={"F": ""}) is False
    assert env_int("F", environ={"F": " 42 "}) == 42
    assert env_decimal("F", environ={"F": "0.75"}) == Decimal("0.75")
    assert env_list("F", environ={"F": "a.example, b.example"}) == ["a.example", "b.example"]


def test_an_unset_variable_takes_its_default_unchanged():
    assert env_str("F", "fallback", environ={}) == "fallback"
    assert env_int("F", 7, environ={"F": ""}) == 7
    assert env_decimal("F", "0.8", environ={}) == Decimal("0.8")
    assert env_list("F", ("a", "b"), environ={}) == ["a", "b"]
    assert env_url("F", ("redis",), None, environ={}) is None
    assert env_origins("F", [], environ={}) == []
    assert env_emails("F", [], environ={}) == []
    assert env_file_text("F", "", environ={}) == ""


@pytest.mark.parametrize(
    "parser",
    [
        env_str,
        env_bool,
        env_int,
        env_decimal,
        env_list,
        env_origins,
        env_emails,
        env_rate,
        env_file_text,
    ],
)
def test_a_missing_required_variable_is_named(parser):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is required but not set"):
        parser("SECRET_KEY", environ={"SECRET_KEY": ""})


def test_range_and_choice_limits_are_enforced():
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("HOURS", minimum=1, environ={"HOURS": "0"})
    with pytest.raises(ImproperlyConfigured, match="at most 1"):
        env_decimal("RATIO", maximum=1, environ={"RATIO": "1.5"})
    with pytest.raises(ImproperlyConfigured, match="RATIO must be at least 0"):
        env_decimal("RATIO", minimum=0, environ={"RATIO": "-0.1"})
    with pytest.raises(ImproperlyConfigured, match="DJANGO_ENV must be one of"):
        env_choice("DJANGO_ENV", ("development", "production"), environ={"DJANGO_ENV": "prod"})
    assert env_choice("LOG_FORMAT", ("plain", "json"), "plain", environ={}) == "plain"


def test_urls_must_have_the_expected_scheme_and_a_host():
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL must be a URL with scheme redis"):
        env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "http://localhost:6379"})
    with pytest.raises(ImproperlyConfigured, match="SITE_URL must be a URL with scheme http"):
        env_url("SITE_URL", ("http", "https"), environ={"SITE_URL": "https://"})
    assert env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "redis://127.0.0.1:6379/0"})


def test_origins_and_email_addresses_parse():
    environ = {"ORIGINS": "https://a.example, http://b.example", "TO": "a@b.example,c@d.example"}

    assert env_origins("ORIGINS", environ=environ) == ["https://a.example", "http://b.example"]
    assert env_emails("TO", environ=environ) == ["a@b.example", "c@d.example"]


# -- secrets and files ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["short", "a" * 60, "ab" * 30])
def test_a_weak_secret_key_is_refused_with_the_variable_named(value):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY must be at least 50 characters"):
        env_secret_key("SECRET_KEY", environ={"SECRET_KEY": value})


def test_a_strong_secret_key_is_returned_as_it_is():
    key = "x7Gq2vL9pR4tW8zB1nM6cK3hJ5dF0sA-yU2iO7eQ9wT4rE1uY6oP3aS8dG5fH2jK"

    assert env_secret_key("SECRET_KEY", environ={"SECRET_KEY": key}) == key


def test_a_file_variable_gives_the_text_of_the_file(tmp_path):
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nabc\n", encoding="ascii")

    assert env_file_text("KEY_FILE", environ={"KEY_FILE": str(key)}).startswith("-----BEGIN")


def test_an_unreadable_file_is_refused_with_the_variable_named(tmp_path):
    binary = tmp_path / "key.der"
    binary.write_bytes(b"\xff\xfe")

    with pytest.raises(ImproperlyConfigured, match="KEY_FILE cannot be read"):
        env_file_text("KEY_FILE", environ={"KEY_FILE": str(tmp_path / "missing.pem")})
    with pytest.raises(ImproperlyConfigured, match="KEY_FILE cannot be read"):
        env_file_text("KEY_FILE", environ={"KEY_FILE": str(binary)})


# -- rates and per-provider minutes ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["lots", "5", "0/m", "5/y", "-1/m", "5 per minute"])
def test_a_bad_rate_is_refused_with_the_variable_named(value):
    with pytest.raises(ImproperlyConfigured, match="API_RATE must look like"):
        env_rate("API_RATE", environ={"API_RATE": value})


def test_rates_parse_and_default():
    assert env_rate("API_RATE", "120/m", environ={}) == "120/m"
    assert env_rate("FEED_RATE", environ={"FEED_RATE": " 20/10m "}) == "20/10m"
    for name in ("API_RATE", "FEED_RATE", "CORRECTION_RATE"):
        assert env_rate(name, environ={name: getattr(settings, name)})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("aws=360,azure", "must look like aws=360"),
        ("aws=six", "must look like aws=360"),
        ("AWS=360", "must look like aws=360"),
        ("aws=360,aws=30", "names aws twice"),
        ("aws=2", "at least 5 minutes"),
        ("aws=-5", "must look like aws=360"),
        ("aws=360,", "must look like aws=360"),
    ],
)
def test_per_provider_intervals_are_parsed_strictly(value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        env_minutes_by_slug("REFRESH_INTERVALS", minimum=5, environ={"REFRESH_INTERVALS": value})


def test_per_provider_intervals_parse():
    environ = {"REFRESH_INTERVALS": "aws=360, azure = 360,lambda=30"}

    assert env_minutes_by_slug("REFRESH_INTERVALS", environ=environ) == {
        "aws": 360,
        "azure": 360,
        "lambda": 30,
    }
    assert env_minutes_by_slug("REFRESH_INTERVALS", environ={}) == {}


# -- the database ---------------------------------------------------------------------------------


def test_sqlite_is_refused_as_a_database():
    with pytest.raises(ImproperlyConfigured, match="must be a PostgreSQL URL"):
        database_from_env({"DATABASE_URL": "sqlite:///db.sqlite3"})
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL is required"):
        database_from_env({})


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"DATABASE_URL": "postgres://u@db.example:5432/"}, "DATABASE_URL must name a database"),
        ({"DATABASE_URL": "postgres://u@db.example:port/db"}, "DATABASE_URL is not a valid"),
        (
            {"DATABASE_URL": "postgres://u@db.example/db", "DATABASE_CONNECT_TIMEOUT": "0"},
            "DATABASE_CONNECT_TIMEOUT must be at least 1",
        ),
        (
            {
                "DATABASE_URL": "postgres://u@db.example/db",
                "DATABASE_CONN_MAX_AGE": "60",
                "DATABASE_POOL_MAX_SIZE": "4",
            },
            "set DATABASE_POOL_MAX_SIZE=0 with it",
        ),
    ],
)
def test_a_bad_database_url_is_refused_with_the_variable_named(environ, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        database_from_env(environ)


def test_a_postgres_url_becomes_the_postgresql_backend():
    config = database_from_env({"DATABASE_URL": "postgres://u:p@db.example:6543/catalog"})
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.example", 6543, "catalog")
    assert config["OPTIONS"]["connect_timeout"] == 5


def test_each_process_pools_its_connections_unless_told_otherwise():
    url = {"DATABASE_URL": "postgres://u@db.example/db"}
    config = database_from_env(url)
    assert config["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 16, "timeout": 5}
    assert config["CONN_MAX_AGE"] == 0  # Django refuses persistent connections with a pool
    sized = database_from_env(url | {"DATABASE_POOL_MAX_SIZE": "3"})
    assert sized["OPTIONS"]["pool"]["max_size"] == 3
    for off in ({"DATABASE_POOL_MAX_SIZE": "0"}, {"DATABASE_CONN_MAX_AGE": "60"}):
        assert "pool" not in database_from_env(url | off)["OPTIONS"]
    assert database_from_env(url | {"DATABASE_CONN_MAX_AGE": "60"})["CONN_MAX_AGE"] == 60


def test_database_sessions_run_without_postgresql_jit_unless_the_url_asks_for_it():
    plain = database_from_env({"DATABASE_URL": "postgres://u@db.example/catalog"})
    assert plain["OPTIONS"]["options"] == "-c jit=off"
    own = database_from_env(
        {"DATABASE_URL": "postgres://u@db.example/catalog?options=-c%20statement_timeout%3D5000"}
    )
    assert own["OPTIONS"]["options"] == "-c statement_timeout=5000 -c jit=off"
    asked = database_from_env(
        {"DATABASE_URL": "postgres://u@db.example/catalog?options=-c%20jit%3Don"}
    )
    assert asked["OPTIONS"]["options"] == "-c jit=on"


def test_the_test_database_session_has_jit_off(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


# -- mail -----------------------------------------------------------------------------------------


def test_without_a_mail_server_development_prints_mail_and_production_uses_localhost():
    assert mailers_from_env({}) == {
        "default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
    }
    production = mailers_from_env({}, production=True)["default"]
    assert production["BACKEND"] == SMTP
    assert (production["OPTIONS"]["host"], production["OPTIONS"]["port"]) == ("localhost", 25)


def test_an_email_url_sets_host_port_credentials_and_tls():
    config = mailers_from_env(
        {"EMAIL_URL": "smtp+tls://alerts%40example.com:p%2Fw@mail.example:2525"}
    )

    assert config["default"]["BACKEND"] == SMTP
    assert config["default"]["OPTIONS"] == {
        "host": "mail.example",
        "port": 2525,
        "username": "alerts@example.com",
        "password": "p/w",
        "use_tls": True,
        "use_ssl": False,
        "timeout": 10,
    }


def test_smtps_means_implicit_tls_on_465():
    options = mailers_from_env({"EMAIL_URL": "smtps://mail.example"})["default"]["OPTIONS"]

    assert (options["port"], options["use_ssl"], options["use_tls"]) == (465, True, False)


def test_separate_email_variables_work_too():
    options = mailers_from_env(
        {
            "EMAIL_HOST": "mail.example",
            "EMAIL_USE_TLS": "true",
            "EMAIL_HOST_USER": "alerts",
            "EMAIL_HOST_PASSWORD": "secret",
            "EMAIL_TIMEOUT_SECONDS": "5",
        }
    )["default"]["OPTIONS"]

    assert options == {
        "host": "mail.example",
        "port": 587,
        "username": "alerts",
        "password": "secret",
        "use_tls": True,
        "use_ssl": False,
        "timeout": 5,
    }


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"EMAIL_URL": "http://mail.example"}, "EMAIL_URL must look like smtp"),
        ({"EMAIL_URL": "smtp://"}, "EMAIL_URL must look like smtp"),
        ({"EMAIL_URL": "smtp://mail.example:port"}, "EMAIL_URL has an invalid port"),
        ({"EMAIL_URL": "smtp://a.example", "EMAIL_HOST": "b.example"}, "not both"),
        ({"EMAIL_HOST": "m.example", "EMAIL_USE_TLS": "1", "EMAIL_USE_SSL": "1"}, "both be true"),
        ({"EMAIL_HOST": "m.example", "EMAIL_PORT": "0"}, "EMAIL_PORT must be at least 1"),
        ({"EMAIL_TIMEOUT_SECONDS": "soon"}, "EMAIL_TIMEOUT_SECONDS must be a whole number"),
    ],
)
def test_bad_mail_settings_are_refused_with_the_variable_named(environ, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        mailers_from_env(environ)
