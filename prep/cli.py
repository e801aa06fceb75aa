"""The command line every tokenmill command shares: flags made from a Config dataclass, a YAML
`--config` file, `--print-config`, `--log-level`, and logging set up once.

Flags: every field of the Config, nested dataclasses too, is a flag named by its path, the way its
YAML is nested: `--threshold`, `--minhash.num_perm`, `--clean.en.gopher_quality.min_doc_words`
(dashes for underscores work too: `--minhash.num-perm`). A field whose name no other field shares
also answers to its name alone (`--num-perm`), the short flags users type. The help of a flag is the
field's comment in its dataclass (on its line, or the comment lines just above it). Booleans are
`--name` (true), `--name false` or `--no-name`; lists and mappings take YAML (`--kinds '[email, ip]'`).
Flags override the file, and both go through `prep.config.override`, so `--threshold abc` and
`threshold: abc` fail alike: exit code 2 and one line naming the key.
"""

import argparse
import ast
import dataclasses
import functools
import inspect
import io
import logging
import os
import sys
import textwrap
import tokenize
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass

from prep.config import ConfigError, load_yaml, merged, nested, override, parse_yaml, to_yaml
from prep.ingest.inputs import NAMED_INPUT

SCALARS = (int, float, str, bool)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True)
class Flag:
    path: tuple[str, ...]  # the field's names from the top: ("minhash", "num_perm")
    type: object  # the field's type hint
    help: str  # the field's comment
    alias: str | None = None  # the field's name alone, dashed ("num-perm"), when no other field has it

    @property
    def name(self) -> str:
        """The flag without its dashes: the path, as in the YAML ("minhash.num_perm")."""
        return ".".join(self.path)

    @property
    def dest(self) -> str:
        return "setting." + self.name

    def option_strings(self) -> list[str]:
        names = dict.fromkeys([self.name, self.name.replace("_", "-"), *([self.alias] if self.alias else [])])
        return [f"--{name}" for name in names]


def _scalar(hint) -> type | None:
    """The scalar type of a field (`X | None` counts as X); None for lists, mappings and the like."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = options[0] if len(options) == 1 else None
    return hint if hint in SCALARS else None


@functools.cache  # a class's source is read once per process
def field_comments(cls) -> dict[str, str]:
    """Each field's comment in the class's source (and its dataclass bases'): the comment on the field's
    lines, else the comment lines just above it."""
    comments: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(base):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(base))
        except (OSError, TypeError):
            continue
        lines = source.splitlines()
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        comment = {t.start[0]: t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT}
        own_line = {n for n in comment if lines[n - 1].lstrip().startswith("#")}
        for node in ast.parse(source).body[0].body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            after = [comment[n] for n in range(node.lineno, node.end_lineno + 1) if n in comment and n not in own_line]
            above, n = [], node.lineno - 1
            while n in own_line:
                above.insert(0, comment[n])
                n -= 1
            comments[node.target.id] = " ".join(after or above)
    return comments


def flags(config_type) -> list[Flag]:
    """The flags of a Config, in field order: every field that is not itself a section (a dataclass)."""
    found: list[Flag] = []

    def walk(cls, path: tuple[str, ...]) -> None:
        hints, comments = typing.get_type_hints(cls), field_comments(cls)
        for field in dataclasses.fields(cls):
            hint = hints[field.name]
            if dataclasses.is_dataclass(hint):
                walk(hint, (*path, field.name))
            else:
                found.append(Flag((*path, field.name), hint, comments.get(field.name, "")))

    walk(config_type, ())
    leaves = [flag.path[-1] for flag in found]
    return [dataclasses.replace(flag, alias=flag.path[-1].replace("_", "-")) if len(flag.path) > 1
            and leaves.count(flag.path[-1]) == 1 else flag for flag in found]


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit code 2, not the whole usage
        self.exit(2, f"{self.prog}: error: {message}\n")


def command_line(config_type, argv: list[str] | None, *, prog: str, description: str,
                 add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                 section_files: dict[str, str] | None = None,
                 per_source: str | None = None,
                 mapping_flags: dict[str, tuple[str, ...]] | None = None) -> tuple[argparse.Namespace, object]:
    """(the other arguments, the Config: defaults, then --config FILE, then section files, then flags,
    merged into one mapping and applied at once, so that a profile's settings come first and what the
    user wrote wins over them wherever they wrote it).

    `section_files` maps extra flags to the section whose YAML file they name (`clean-config` → `clean`).
    `per_source`: the path of the Config's per-source settings (a dataclass with EXTRA, e.g. "sources"):
    a section file given as NAME=FILE then sets that source's section, and `--sources.NAME.clean.KEY
    VALUE` sets one of its settings. `mapping_flags` maps extra repeatable flags to a mapping setting
    each `--FLAG NAME=VALUE` adds to (`benchmark` → `benchmarks`). Prints the Config and exits for
    --print-config; sets up logging."""
    epilog = f"--{per_source}.NAME.SECTION.KEY VALUE sets a setting of source NAME alone." if per_source else None
    parser = ArgumentParser(prog=prog, description=description, epilog=epilog)
    if add_arguments:
        add_arguments(parser)
    parser.add_argument("--config", metavar="FILE", help="a YAML file of settings (see --print-config)")
    for name, section in (section_files or {}).items():
        one_source = " (NAME=FILE: source NAME's)" if per_source else ""
        parser.add_argument(f"--{name}", metavar="FILE", help=f"a YAML file of the {section} settings{one_source}")
    for name, path in (mapping_flags or {}).items():
        parser.add_argument(f"--{name}", action="append", default=[], metavar="NAME=VALUE",
                            help=f"adds NAME: VALUE to {'.'.join(path)} (repeatable)")
    parser.add_argument("--print-config", action="store_true", help="print every setting and exit")
    parser.add_argument("--log-level", default="INFO", choices=LOG_LEVELS, help="default INFO")
    settings = parser.add_argument_group("settings (each also in the --config file, by the same path)")
    config_flags = flags(config_type)
    for flag in config_flags:
        _add_flag(settings, flag, taken=set(parser._option_string_actions))
    args, rest = parser.parse_known_args(argv)
    # Each file and flag is tried in turn so that an error can name the one it comes from; a check
    # across settings may fail half way (--steps before --warmup-steps), so only an error the whole
    # configuration still has is reported, under the name of the file or flag it first showed at.
    values, so_far, seen = {}, config_type(), {}
    for path, where in _section_files(args, section_files or {}, per_source):
        try:
            values = merged(values, nested(where, load_yaml(path)))
        except ConfigError as e:
            parser.error(f"{path}: {e}")
        try:
            so_far = override(config_type(), values)
        except ConfigError as e:
            seen.setdefault(str(e), f"{path}: {e}")
    for flag in config_flags:
        if (value := getattr(args, flag.dest)) is not None:
            try:
                one = nested(flag.path, _flag_value(flag, value))
            except ConfigError as e:
                parser.error(f"--{flag.name}: {str(e).removeprefix(flag.name + ': ')}")
            try:
                so_far = override(so_far, one)
            except ConfigError as e:  # "a.b: what is wrong" → "--a.b: what is wrong"
                seen.setdefault(str(e), f"--{flag.name}: {str(e).removeprefix(flag.name + ': ')}")
            values = merged(values, one)
    for path, value in _source_flags(parser, rest, per_source):
        values = merged(values, nested(path, value))
    for name, path in (mapping_flags or {}).items():
        seen_names = set()
        for given in getattr(args, name.replace("-", "_")):
            if not (named := NAMED_INPUT.fullmatch(given)):
                parser.error(f"--{name} {given}: expected NAME=VALUE")
            if named.group(1) in seen_names:  # the last had won: `--benchmark b=X --benchmark b=Y` never read X
                parser.error(f"--{name} {named.group(1)}=... is given twice: give each name once (a flag may replace "
                             "a YAML file's entry)")
            seen_names.add(named.group(1))
            values = merged(values, nested((*path, named.group(1)), named.group(2)))
    try:
        cfg = override(config_type(), values)
    except ConfigError as e:
        parser.error(seen.get(str(e), str(e)))
    if args.print_config:
        print(to_yaml(cfg), end="")
        parser.exit(0)
    setup_logging(args.log_level)
    return args, cfg


def _section_files(args, section_files: dict[str, str], per_source: str | None) -> list[tuple[str, tuple]]:
    """(YAML file, the path of the settings it holds) for --config and each section file given."""
    files = [(args.config, ())] if args.config else []
    for name, section in section_files.items():
        given = getattr(args, name.replace("-", "_"))
        if not given:
            continue
        named = NAMED_INPUT.fullmatch(given)  # NAME=FILE, named as --input names sources
        if per_source and named and not os.path.exists(given):
            files.append((named.group(2), (*per_source.split("."), named.group(1), section)))
        else:
            files.append((given, (section,)))
    return files


def _source_flags(parser, rest: list[str], per_source: str | None):
    """(path, value) of each `--PER_SOURCE.NAME.SECTION.KEY VALUE` left by the declared flags; any other
    leftover is an error."""
    prefix = f"--{per_source}." if per_source else None
    i = 0
    while i < len(rest):
        option = rest[i]
        path = option[len(prefix):].split(".") if prefix and option.startswith(prefix) else []
        if len(path) < 3 or i + 1 >= len(rest) or rest[i + 1].startswith("--"):
            parser.error(f"unrecognized arguments: {' '.join(rest[i:])}")
        yield (*per_source.split("."), *path), rest[i + 1]
        i += 2


def _add_flag(group, flag: Flag, taken: set[str]) -> None:
    """A flag's option strings (those another argument has are left to it), its --no- form for a boolean."""
    names = [name for name in flag.option_strings() if name not in taken]
    scalar, help_text = _scalar(flag.type), flag.help.replace("%", "%%")  # argparse formats help with %
    if scalar is bool:
        group.add_argument(*names, dest=flag.dest, nargs="?", const="true", default=None, metavar="true|false",
                           help=help_text)
        negated = [f"--no-{name[2:]}" for name in names if f"--no-{name[2:]}" not in taken]
        group.add_argument(*negated, dest=flag.dest, action="store_const", const="false", help=argparse.SUPPRESS)
    else:
        metavar = {int: "N", float: "X", str: "TEXT"}.get(scalar, "YAML")
        group.add_argument(*names, dest=flag.dest, default=None, metavar=metavar, help=help_text)


def _flag_value(flag: Flag, value: str):
    """A flag's text as the YAML file would give it: scalars as they are (override types them), lists and
    mappings parsed as YAML."""
    if _scalar(flag.type) is not None:
        return value
    try:
        return parse_yaml(value)
    except ConfigError as e:
        raise ConfigError(f"{flag.name}: {e}") from None


def setup_logging(level: str = "INFO") -> None:
    """Timestamped lines on stderr for every tokenmill logger; once per process (later calls reset it)."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr, force=True)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one line per gateway call at INFO
