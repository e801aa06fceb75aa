"""Typed configuration: dataclasses overridden from YAML files and command-line values, with errors
that name the bad key.

Every value goes through `override`, whatever its source, so a YAML file and a flag are checked the
same way: unknown keys and values of the wrong type are errors naming the key. Numbers may be given
as text ("3e-4", which YAML 1.1 reads as a string, or a flag's value).
"""

import dataclasses
import types
import typing

import yaml


class ConfigError(ValueError):
    pass


def _number(value, hint, where: str):
    if isinstance(value, str):
        try:
            value = hint(value) if hint is int else float(value)
        except ValueError:
            kind = "an integer" if hint is int else "a number"
            raise ConfigError(f"{where}: expected {kind}, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if hint is int and value != int(value):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    return hint(value)


def _coerce(value, hint, where: str):
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # X | None
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        return _coerce(value, options[0], where)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return override(hint(), value, where)
    if hint is bool:
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if hint in (int, float):
        return _number(value, hint, where)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected text, got {value!r}")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(hint)
        if origin is tuple and args and args[-1] is not Ellipsis:  # a fixed-size tuple such as (n, limit)
            return tuple(_coerce(v, a, where) for v, a in zip(value, args))
        return origin(_coerce(v, args[0], where) for v in value) if args else origin(value)
    return value


def override(config, values: dict, where: str = ""):
    """A copy of `config` with `values` (nested dicts for nested dataclasses) applied; errors name the
    key by its path from the top (`where` is the path of `config` itself)."""
    hints = typing.get_type_hints(type(config))
    changes = {}
    for key, value in (values or {}).items():
        path = f"{where}.{key}" if where else key
        if key not in hints:
            raise ConfigError(f"{path}: unknown setting (known: {', '.join(sorted(hints))})")
        current = getattr(config, key)
        if dataclasses.is_dataclass(current) and isinstance(value, dict):
            changes[key] = override(current, value, path)
        else:
            changes[key] = _coerce(value, hints[key], path)
    try:
        return dataclasses.replace(config, **changes)
    except ValueError as e:  # a dataclass's own check of its values (__post_init__)
        raise ConfigError(f"{where}: {e}" if where else str(e)) from None


def load_yaml(path: str) -> dict:
    """A YAML file's mapping; ConfigError (without the path, which the caller adds) otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as e:
        raise ConfigError(e.strerror or str(e)) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"not YAML: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping")
    return data


def to_yaml(config) -> str:
    return yaml.safe_dump(dataclasses.asdict(config), sort_keys=False, allow_unicode=True)
