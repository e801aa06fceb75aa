"""Typed configuration: dataclasses overridden from YAML files and command-line values, with errors
that name the bad key.

Every value goes through `override`, whatever its source, so a YAML file and a flag are checked the
same way: unknown keys and values of the wrong type are errors naming the key. Numbers may be given
as text ("3e-4", which YAML 1.1 reads as a string, or a flag's value).

Two hooks a Config dataclass may declare as class attributes:
- `PROFILES`, a function giving the settings of a named profile: a mapping with `profile: NAME` is the
  profile's settings first, then the mapping's own (what the user wrote wins over the profile);
- `EXTRA`, the name of a `dict[str, dict]` field: keys of its mapping that are not fields go into
  that dict (per-source settings: `sources: {code: {clean: {profile: code}}}`), and to_yaml writes
  them back where they were.
"""

import dataclasses
import math
import sys
import types
import typing

import yaml


class ConfigError(ValueError):
    pass


MAX_INT = 2**63 - 1  # what Arrow, numpy and the compiled kernels hold: 1e30 for a count overflowed in every task


def check_ranges(cfg, shares: tuple[str, ...] = (), **minimums: float) -> None:
    """ValueError naming the first setting of `cfg` out of its range: each of `shares` in [0, 1], each of
    `minimums` at least its value. For a config's __post_init__: a sign slipped (max_word_length -1) or a share
    out of range (language min_score 7) had rejected every document of a language, and the run succeeded."""
    for name in shares:
        if not 0 <= getattr(cfg, name) <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {getattr(cfg, name)}")
    for name, low in minimums.items():
        if getattr(cfg, name) < low:
            raise ValueError(f"{name} must be at least {low}, got {getattr(cfg, name)}")


def _number(value, hint, where: str):
    """A setting's number, finite (a NaN threshold makes every comparison false: a filter removed nothing) and,
    for an integer, within an int64."""
    if isinstance(value, str):
        try:  # "1e3" for an integer as YAML's 1.0e+3 is: a float, then held to being whole below
            value = int(value) if hint is int and value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            kind = "an integer" if hint is int else "a number"
            raise ConfigError(f"{where}: expected {kind}, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value) or hint is float and abs(value) > sys.float_info.max:
        raise ConfigError(f"{where}: expected a finite number, got {value!r:.30}")
    if hint is float:
        return float(value)
    if value != int(value):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if abs(int(value)) > MAX_INT:
        raise ConfigError(f"{where}: expected an integer of at most 2**63 - 1 either way, got {value!r:.30}")
    return int(value)


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
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        key_hint, value_hint = typing.get_args(hint) or (str, object)
        if value_hint is object:
            return dict(value)
        return {str(k): _coerce(v, value_hint, f"{where}.{k}") for k, v in value.items()}
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(hint)
        if origin is tuple and args and args[-1] is not Ellipsis:  # a fixed-size tuple such as (n, limit)
            if len(value) != len(args):  # zip would cut [2, 0.2, 9] to (2, 0.2) and pad nothing
                raise ConfigError(f"{where}: expected {len(args)} values, got {value!r:.60}")
            return tuple(_coerce(v, a, where) for v, a in zip(value, args))
        return origin(_coerce(v, args[0], where) for v in value) if args else origin(value)
    return value


def nested(path: tuple[str, ...], value) -> dict:
    """{path[0]: {path[1]: ... value}}."""
    for key in reversed(path):
        value = {key: value}
    return value


def merged(base: dict, more: dict) -> dict:
    """`more` over `base`, mappings merged key by key."""
    out = dict(base)
    for key, value in more.items():
        out[key] = merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def override(config, values: dict, where: str = ""):
    """A copy of `config` with `values` (nested dicts for nested dataclasses) applied; errors name the
    key by its path from the top (`where` is the path of `config` itself)."""
    values = dict(values or {})
    profiles = getattr(type(config), "PROFILES", None)
    if profiles is not None and "profile" in values:
        name = values.pop("profile")
        here = f"{where}.profile" if where else "profile"
        try:
            settings = profiles(name)
        except (KeyError, TypeError):
            raise ConfigError(f"{here}: unknown profile {name!r}") from None
        config = override(dataclasses.replace(config, profile=name), settings, where)
    fields = {f.name for f in dataclasses.fields(config)}  # a class constant (PROFILES) is no setting
    hints = {name: hint for name, hint in typing.get_type_hints(type(config)).items() if name in fields}
    extra_field = getattr(type(config), "EXTRA", None)
    changes = {}
    for key, value in values.items():
        path = f"{where}.{key}" if where else key
        if key not in hints and extra_field is not None:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: expected a mapping of settings, got {value!r}")
            extra = changes.setdefault(extra_field, dict(getattr(config, extra_field)))
            extra[key] = merged(extra.get(key, {}), value)
            continue
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


class YamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML's safe subset, parsed by libyaml where PyYAML has it (its wheels do): it refuses nesting past
    1,000 levels at once, where the pure-Python parser took 62 s over a 40 KB file of 20,000 nested
    brackets; and a key given twice in one mapping is an error (the second had silently won: `steps: 5`
    then `steps: 500` trained 500)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults`: merged keys may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class says so
                    break
                if repeated:
                    raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                            key_node.start_mark)
        return super().construct_mapping(node, deep)


def parse_yaml(text):
    """YAML text (or a text stream) as data; ConfigError saying why it is not YAML. Numbers YAML cannot hold
    as Python does (an integer of over 4,300 digits) and text of bytes that are not UTF-8 are errors too."""
    try:
        return yaml.load(text, Loader=YamlLoader)  # noqa: S506 (a safe loader: _Loader extends SafeLoader's)
    except yaml.YAMLError as e:
        raise ConfigError(f"not YAML: {e}") from None
    except (ValueError, OverflowError, RecursionError) as e:  # UnicodeDecodeError is a ValueError; a 13th month
        raise ConfigError(f"not YAML that can be read: {e}") from None


MAX_CONFIG_BYTES = 16 << 20  # a config of 64k banned words is 1 MB; 180 MB of YAML had taken 6.5 GB and minutes


def load_yaml(path: str) -> dict:
    """A YAML file's mapping; ConfigError (without the path, which the caller adds) otherwise. Read as a stream
    (`--config <(...)` is a pipe), to MAX_CONFIG_BYTES."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(e.strerror or str(e)) from e
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"over {MAX_CONFIG_BYTES} bytes, more than any configuration holds")
    data = parse_yaml(data) or {}
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping")
    return data


def plain(config):
    """A Config as plain data (dataclasses.asdict), an EXTRA field's entries written beside the fields."""
    if isinstance(config, (list, tuple)):
        return [plain(item) for item in config]
    if isinstance(config, dict):
        return {key: plain(value) for key, value in config.items()}
    if not dataclasses.is_dataclass(config):
        return config
    data = {f.name: plain(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if (extra := getattr(type(config), "EXTRA", None)) is not None:
        data.update(data.pop(extra))
    return data


def to_yaml(config) -> str:
    return yaml.safe_dump(plain(config), sort_keys=False, allow_unicode=True)
