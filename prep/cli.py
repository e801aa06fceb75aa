"""The command line every tokenmill command shares: flags made from a Config dataclass, a YAML
`--config` file, `--print-config`, `--log-level`, and logging set up once.

Flags: each scalar field of the Config (of nested dataclasses too) whose name no other field shares
is `--name` (underscores as dashes), with the field's comment as its help; booleans are `--name` /
`--no-name`. Fields that share a name (`enabled` of every quality rule) are set in the YAML file,
where every field is reachable (nested dataclasses as nested mappings). Flags override the file,
and both go through `prep.config.override`, so `--threshold abc` and `threshold: abc` fail alike:
exit code 2 and one line naming the key.
"""

import argparse
import dataclasses
import inspect
import logging
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass

from prep.config import ConfigError, load_yaml, override, to_yaml

SCALARS = (int, float, str, bool)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
RESERVED = {"config", "print-config", "log-level", "help"}


@dataclass(frozen=True)
class Flag:
    name: str  # without its dashes: "num-perm"
    path: tuple[str, ...]  # the field's names from the top: ("minhash", "num_perm")
    type: type  # int, float, str or bool
    help: str  # the field's comment

    @property
    def dest(self) -> str:
        return "setting." + ".".join(self.path)


def _scalar(hint) -> type | None:
    """The scalar type of a field (`X | None` counts as X); None for lists, mappings and the like."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = options[0] if len(options) == 1 else None
    return hint if hint in SCALARS else None


def field_comments(cls) -> dict[str, str]:
    """The one-line comment after each field in the class's source (and its dataclass bases')."""
    comments = {}
    for base in reversed(cls.__mro__):
        if dataclasses.is_dataclass(base):
            try:
                comments.update(re.findall(r"^\s+(\w+)\s*:[^#\n]*#\s*(.+)$", inspect.getsource(base), re.M))
            except (OSError, TypeError):
                pass
    return comments


def flags(config_type) -> list[Flag]:
    """The flags of a Config, in field order: its scalar fields whose names are unique in it."""
    found: list[Flag] = []

    def walk(cls, path: tuple[str, ...]) -> None:
        hints, comments = typing.get_type_hints(cls), field_comments(cls)
        for field in dataclasses.fields(cls):
            hint = hints[field.name]
            if dataclasses.is_dataclass(hint):
                walk(hint, (*path, field.name))
            elif (scalar := _scalar(hint)) is not None:
                found.append(Flag(field.name.replace("_", "-"), (*path, field.name), scalar,
                                  comments.get(field.name, "")))

    walk(config_type, ())
    names = [flag.name for flag in found]
    return [flag for flag in found if names.count(flag.name) == 1 and flag.name not in RESERVED]


def _nested(path: tuple[str, ...], value) -> dict:
    for name in reversed(path):
        value = {name: value}
    return value


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit code 2, not the whole usage
        self.exit(2, f"{self.prog}: error: {message}\n")


def command_line(config_type, argv: list[str] | None, *, prog: str, description: str,
                 add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                 section_files: dict[str, str] | None = None) -> tuple[argparse.Namespace, object]:
    """(the other arguments, the Config: defaults, then --config FILE, then section files, then flags).

    `section_files` maps extra flags to the section whose YAML file they name (`clean-config` → `clean`).
    Prints the Config and exits for --print-config; sets up logging at --log-level."""
    parser = ArgumentParser(prog=prog, description=description)
    if add_arguments:
        add_arguments(parser)
    parser.add_argument("--config", metavar="FILE", help="a YAML file of settings (see --print-config)")
    for name, section in (section_files or {}).items():
        parser.add_argument(f"--{name}", metavar="FILE", help=f"a YAML file of the {section} settings")
    parser.add_argument("--print-config", action="store_true", help="print every setting and exit")
    parser.add_argument("--log-level", default="INFO", choices=LOG_LEVELS, help="default INFO")
    settings = parser.add_argument_group("settings (each also in the --config file)")
    config_flags = flags(config_type)
    for flag in config_flags:
        if flag.type is bool:
            settings.add_argument(f"--{flag.name}", dest=flag.dest, action=argparse.BooleanOptionalAction,
                                  default=None, help=flag.help)
        else:
            settings.add_argument(f"--{flag.name}", dest=flag.dest, default=None, help=flag.help,
                                  metavar={int: "N", float: "X", str: "TEXT"}[flag.type])
    args = parser.parse_args(argv)
    cfg = config_type()
    files = [(args.config, {})] if args.config else []
    files += [(path, section) for name, section in (section_files or {}).items()
              if (path := getattr(args, name.replace("-", "_")))]
    for path, section in files:
        try:
            data = load_yaml(path)
            cfg = override(cfg, {section: data} if section else data)
        except ConfigError as e:
            parser.error(f"{path}: {e}")
    for flag in config_flags:
        if (value := getattr(args, flag.dest)) is not None:
            try:
                cfg = override(cfg, _nested(flag.path, value))
            except ConfigError as e:  # "a.b: what is wrong" → "--b: what is wrong"
                parser.error(f"--{flag.name}: {str(e).removeprefix('.'.join(flag.path) + ': ')}")
    if args.print_config:
        print(to_yaml(cfg), end="")
        parser.exit(0)
    setup_logging(args.log_level)
    return args, cfg


def setup_logging(level: str = "INFO") -> None:
    """Timestamped lines on stderr for every tokenmill logger; once per process (later calls reset it)."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr, force=True)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one line per gateway call at INFO
