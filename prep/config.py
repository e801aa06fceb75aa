"""Overriding typed config dataclasses from YAML, with errors that name the bad key."""

import dataclasses
import typing

import yaml


class ConfigError(ValueError):
    pass


def _coerce(value, hint, where: str):
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return override(hint(), value, where)
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if hint in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(hint)
        if origin is tuple and args and args[-1] is not Ellipsis:  # a fixed-size tuple such as (n, limit)
            return tuple(_coerce(v, a, where) for v, a in zip(value, args))
        return origin(_coerce(v, args[0], where) for v in value) if args else origin(value)
    return value


def override(config, values: dict, where: str = "config"):
    """A copy of `config` with `values` (nested dicts for nested dataclasses) applied."""
    hints = typing.get_type_hints(type(config))
    changes = {}
    for key, value in (values or {}).items():
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise ConfigError(f"{where}.{key}: unknown setting (known: {known})")
        current = getattr(config, key)
        if dataclasses.is_dataclass(current) and isinstance(value, dict):
            changes[key] = override(current, value, f"{where}.{key}")
        else:
            changes[key] = _coerce(value, hints[key], f"{where}.{key}")
    return dataclasses.replace(config, **changes)


def load_yaml(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


def to_yaml(config) -> str:
    return yaml.safe_dump(dataclasses.asdict(config), sort_keys=False, allow_unicode=True)
