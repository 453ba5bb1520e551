"""Where the client finds its server and key.

For each setting, the first that is set wins:

1. an explicit argument (``Client(url=..., key=...)``; the CLI's ``--url``);
2. a profile named explicitly (``profile=`` / ``--profile``, or ``STRATA_PROFILE``);
3. ``STRATA_URL`` and ``STRATA_KEY``;
4. the ``[default]`` profile;
5. for the URL only, ``http://127.0.0.1:8080`` (what ``strata dev`` serves).

Profiles live in ``$STRATA_PROFILES`` if set, else ``$XDG_CONFIG_HOME/strata/profiles.toml``
(``~/.config/strata/profiles.toml``): one TOML table per profile with ``url`` and either
``key`` or ``key_file`` (a file holding the key, ``~`` expanded, relative to the profile
file), and optionally ``timeout`` (seconds) and ``max_retries``::

    [default]
    url = "http://127.0.0.1:8080"
    key_file = "~/src/strata/.strata/admin.key"

    [prod]
    url = "https://memory.example.com"
    key = "sk_..."

Not ``$STRATA_HOME``: that is the server's data directory, and a client usually runs
elsewhere. Keep the file private (``chmod 600``); the CLI takes no key on its command line,
where it would land in shell history and ``ps``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata.client.errors import ConfigError

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3


@dataclass(frozen=True)
class ClientConfig:
    url: str = DEFAULT_URL
    key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_RETRIES
    profile: str | None = None  # the profile that supplied something, if any


def profiles_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("STRATA_PROFILES"):
        return Path(env["STRATA_PROFILES"]).expanduser()
    base = Path(env["XDG_CONFIG_HOME"]).expanduser() if env.get("XDG_CONFIG_HOME") else (
        Path.home() / ".config")
    return base / "strata" / "profiles.toml"


def load_profiles(path: Path) -> dict[str, dict[str, Any]]:
    import tomllib

    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the profile file {path}: {exc}") from None
    for name, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: profile {name!r} must be a table ([{name}])")
    return data


def _profile_values(path: Path, name: str, table: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    unknown = set(table) - {"url", "key", "key_file", "timeout", "max_retries"}
    if unknown:
        raise ConfigError(f"{path}: profile {name!r} has unknown settings: {', '.join(sorted(unknown))}")
    if "url" in table:
        out["url"] = str(table["url"])
    if "key" in table:
        out["key"] = str(table["key"]).strip()
    elif "key_file" in table:
        key_path = Path(str(table["key_file"])).expanduser()
        if not key_path.is_absolute():
            key_path = path.parent / key_path
        try:
            out["key"] = key_path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{path}: profile {name!r}: cannot read key_file: {exc.strerror}") from None
    for setting, kind in (("timeout", float), ("max_retries", int)):
        if setting in table:
            try:
                out[setting] = kind(table[setting])
            except (TypeError, ValueError):
                raise ConfigError(f"{path}: profile {name!r}: {setting} must be a number") from None
    return out


def resolve(
    url: str | None = None, key: str | None = None, profile: str | None = None, *,
    timeout: float | None = None, max_retries: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ClientConfig:
    """The configuration for a client, by the precedence in this module's docstring."""
    env = os.environ if env is None else env
    named = profile or env.get("STRATA_PROFILE") or None
    path = profiles_path(env)
    profiles = load_profiles(path)
    if named and named not in profiles:
        where = f"in {path}" if profiles else f"({path} does not exist or is empty)"
        raise ConfigError(f"no profile {named!r} {where}")
    layers: list[tuple[str | None, dict[str, Any]]] = [
        (None, {k: v for k, v in {"url": url, "key": key, "timeout": timeout,
                                  "max_retries": max_retries}.items() if v is not None}),
    ]
    if named:
        layers.append((named, _profile_values(path, named, profiles[named])))
    layers.append((None, {k: v for k, v in {"url": env.get("STRATA_URL"),
                                            "key": env.get("STRATA_KEY")}.items() if v}))
    if not named and "default" in profiles:
        layers.append(("default", _profile_values(path, "default", profiles["default"])))
    values: dict[str, Any] = {}
    used: str | None = None
    for source, layer in layers:
        for k, v in layer.items():
            if k not in values:
                values[k] = v
                used = used or source
    values["url"] = str(values.get("url") or DEFAULT_URL).rstrip("/")
    if not values["url"].startswith(("http://", "https://")):
        raise ConfigError(f"the strata URL must start with http:// or https:// (got {values['url']!r})")
    if values.get("key") is not None:
        values["key"] = values["key"].strip() or None
    if values.get("timeout", DEFAULT_TIMEOUT) <= 0:
        raise ConfigError("timeout must be positive")
    if values.get("max_retries", DEFAULT_RETRIES) < 0:
        raise ConfigError("max_retries must be 0 or more")
    return ClientConfig(profile=used, **values)
