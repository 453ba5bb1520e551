"""Settings read STRATA_* variables the way pydantic-settings did: each field from its own
variable (the name in any case), converted in pydantic's lax mode, arguments winning, and a bad
value refused naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from strata.foundation.config import Settings, get_settings


def test_each_field_comes_from_its_variable_converted(monkeypatch):
    """Given STRATA_ variables for an int, a bool, a float, a path and a literal
    When settings are built
    Then each field holds the converted value (control: the defaults without them)."""
    defaults = Settings()
    assert (defaults.db_port, defaults.db_iam_auth, defaults.llm_timeout_s) == (5432, False, 30.0)
    monkeypatch.setenv("STRATA_DB_PORT", "6543")
    monkeypatch.setenv("STRATA_DB_IAM_AUTH", "true")
    monkeypatch.setenv("STRATA_LLM_TIMEOUT_S", "2.5")
    monkeypatch.setenv("STRATA_HOME", "/var/strata")
    monkeypatch.setenv("STRATA_EMBEDDER", "openai")
    monkeypatch.setenv("strata_db_name", "lower-case-name")
    settings = Settings()
    assert settings.db_port == 6543
    assert settings.db_iam_auth is True
    assert settings.llm_timeout_s == 2.5
    assert settings.home == Path("/var/strata")
    assert settings.embedder == "openai"
    assert settings.db_name == "lower-case-name"


def test_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "64")
    assert Settings().embedding_dim == 64
    assert Settings(embedding_dim=128).embedding_dim == 128


def test_unknown_and_foreign_variables_are_ignored(monkeypatch):
    """Given a STRATA_ variable no field has and a field's name without the prefix
    Then neither reaches the settings (control: the prefixed one does)."""
    monkeypatch.setenv("STRATA_NOT_A_SETTING", "x")
    monkeypatch.setenv("POOL_MAX", "99")
    monkeypatch.setenv("STRATA_POOL_MIN", "2")
    settings = Settings()
    assert settings.pool_max == 8 and settings.pool_min == 2
    assert not hasattr(settings, "not_a_setting")


@pytest.mark.parametrize(("variable", "value"), [
    ("STRATA_DB_PORT", "not-a-port"),
    ("STRATA_EMBEDDING_DIM", "8"),  # below the field's minimum
    ("STRATA_RUNTIME", "lambda"),   # not one of the literals
    ("STRATA_DB_IAM_AUTH", "perhaps"),
])
def test_a_bad_value_is_refused_naming_the_field(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as raised:
        Settings()
    field = variable.removeprefix("STRATA_").lower()
    assert [error["loc"] for error in raised.value.errors()] == [(field,)]
    assert value not in str(raised.value.errors()[0]["msg"])


def test_get_settings_is_cached_until_cleared(monkeypatch):
    get_settings.cache_clear()
    try:
        first = get_settings()
        monkeypatch.setenv("STRATA_POOL_MAX", "3")
        assert get_settings() is first and first.pool_max == 8
        get_settings.cache_clear()
        assert get_settings().pool_max == 3
    finally:
        get_settings.cache_clear()
