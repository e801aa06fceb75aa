"""The shared command line: flags from a Config's fields, a YAML file under them, one typed path for both,
errors that name the key, --print-config."""

from dataclasses import dataclass, field

import pytest
import yaml

from prep.cli import command_line, flags


@dataclass(frozen=True)
class Inner:
    num_perm: int = 128  # signature length
    enabled: bool = True  # a name two sections share: only its path


@dataclass(frozen=True)
class Other:
    # a comment above the field,
    # on two lines
    enabled: bool = False


@dataclass(frozen=True)
class Settings:
    threshold: float = 0.8  # Jaccard similarity of duplicates
    name: str | None = None  # optional text
    verify: bool = True  # check the candidates
    inner: Inner = field(default_factory=Inner)
    other: Other = field(default_factory=Other)
    tags: tuple[str, ...] = ("a",)  # a list: YAML on the command line

    def __post_init__(self):
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")


def parse(argv, **kw):
    return command_line(Settings, argv, prog="test", description="test", **kw)[1]


def test_every_field_is_a_flag_named_by_its_path_with_its_comment_and_unique_names_are_aliases():
    by_name = {f.name: f for f in flags(Settings)}
    assert list(by_name) == ["threshold", "name", "verify", "inner.num_perm", "inner.enabled", "other.enabled", "tags"]
    assert by_name["inner.num_perm"].option_strings() == ["--inner.num_perm", "--inner.num-perm", "--num-perm"]
    assert by_name["inner.enabled"].option_strings() == ["--inner.enabled"]  # "enabled" is two fields' name
    assert by_name["inner.num_perm"].help == "signature length"
    assert by_name["other.enabled"].help == "a comment above the field, on two lines"


def test_booleans_lists_and_section_flags(capsys):
    cfg = parse(["--inner.enabled", "false", "--other.enabled", "--tags", "[x, y]", "--no-verify"])
    assert cfg == Settings(verify=False, inner=Inner(enabled=False), other=Other(True), tags=("x", "y"))
    assert parse(["--inner.num-perm", "7"]).inner.num_perm == 7
    assert parse(["--inner.num-perm", "1e3"]).inner.num_perm == 1000  # as YAML's 1.0e+3 in a file is
    with pytest.raises(SystemExit):
        parse(["--inner.num-perm", "1.5e0"])
    assert "--inner.num_perm: expected an integer, got 1.5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["--tags", "[unclosed"])
    assert "--tags: not YAML" in capsys.readouterr().err


def test_file_then_flags_typed_alike(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("threshold: 3e-1\ninner: {num_perm: 64, enabled: false}\nother: {enabled: true}\n")
    cfg = parse(["--config", str(config), "--num-perm", "32", "--no-verify", "--name", "x"])
    assert cfg == Settings(threshold=0.3, name="x", verify=False, inner=Inner(32, False), other=Other(True))


@pytest.mark.parametrize("argv,message", [
    (["--threshold", "abc"], "--threshold: expected a number, got 'abc'"),
    (["--threshold", "nan"], "--threshold: expected a finite number, got nan"),
    (["--num-perm", "99999999999999999999"], "--inner.num_perm: expected an integer of at most 2**63 - 1"),
    (["--num-perm", "1.5"], "--inner.num_perm: expected an integer"),
    (["--threshold", "2"], "threshold must be in (0, 1]"),
])
def test_a_bad_flag_is_one_line_and_exit_code_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        parse(argv)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and message in error and error.count("\n") == 1


@pytest.mark.parametrize("text,message", [
    ("inner: {num_prem: 3}\n", "c.yaml: inner.num_prem: unknown setting"),
    ("verify: maybe\n", "c.yaml: verify: expected true or false"),
    ("- a list\n", "the top level must be a mapping"),
    # found by review: a threshold of NaN made every comparison false (a filter then removed nothing), inf
    # overflowed a timer in every task, and a float of 1e30 for a count overflowed compiled code after Spark
    # started; .inf for an integer was a traceback
    ("threshold: .nan\n", "c.yaml: threshold: expected a finite number, got nan"),
    ("threshold: -.inf\n", "c.yaml: threshold: expected a finite number, got -inf"),
    ("inner: {num_perm: .inf}\n", "c.yaml: inner.num_perm: expected a finite number, got inf"),
    ("inner: {num_perm: 1.0e+30}\n", "c.yaml: inner.num_perm: expected an integer of at most 2**63 - 1"),
    ("inner: {num_perm: -10000000000000000000}\n", "c.yaml: inner.num_perm: expected an integer of at most"),
    ("inner: {num_perm: " + "9" * 400 + "}\n", "c.yaml: inner.num_perm: expected an integer of at most"),
    ("threshold: " + "9" * 400 + "\n", "c.yaml: threshold: expected a finite number"),
    # found by review (2026-12-07): a key given twice had the second silently win; an integer of 5,000
    # digits and bytes that are not UTF-8 were tracebacks; 20,000 nested brackets (40 KB) parsed for a minute
    ("threshold: 0.5\nthreshold: 0.9\n", "c.yaml: not YAML: the key 'threshold' is given twice"),
    ("inner: {num_perm: 3, num_perm: 4}\n", "c.yaml: not YAML: the key 'num_perm' is given twice"),
    ("threshold: " + "9" * 5000 + "\n", "c.yaml: not YAML that can be read: Exceeds the limit"),
    (b"name: caf\xe9\n", "c.yaml: not YAML"),
    ("tags: " + "[" * 20_000 + "]" * 20_000 + "\n", "exceeded maximum nesting depth"),
    # found by review (2026-12-07): 180 MB of YAML took 6.5 GB and minutes
    ("tags: [" + "x, " * 6_000_000 + "x]\n", "c.yaml: over 16777216 bytes"),
])
def test_a_bad_file_names_the_key(tmp_path, capsys, text, message):
    config = tmp_path / "c.yaml"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SystemExit) as exit_:
        parse(["--config", str(config)])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_config_from_a_pipe_is_read():
    import os
    import threading

    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, b"threshold: 0.25\n"), os.close(write_end)))
    writer.start()
    try:
        assert parse(["--config", f"/dev/fd/{read_end}"]).threshold == 0.25  # as --config <(...) gives it
    finally:
        writer.join()
        os.close(read_end)


def test_a_yaml_merge_key_may_be_overridden_and_a_flag_value_is_checked_alike(tmp_path, capsys):
    """`<<: *defaults` then a key of its own is no repeated key; a flag's YAML is read as a file's."""
    config = tmp_path / "c.yaml"
    config.write_text("base: &b {num_perm: 3, enabled: false}\ninner:\n  <<: *b\n  num_perm: 4\n")
    with pytest.raises(SystemExit):  # "base" is no setting: the file is read (no YAML error) and checked
        parse(["--config", str(config)])
    assert "base: unknown setting" in capsys.readouterr().err
    config.write_text("inner:\n  <<: {num_perm: 3, enabled: true}\n  num_perm: 4\n")
    assert parse(["--config", str(config)]).inner == Inner(num_perm=4, enabled=True)
    with pytest.raises(SystemExit):
        parse(["--tags", "{a: 1, a: 2}"])
    assert "--tags: not YAML: the key 'a' is given twice" in capsys.readouterr().err


def test_print_config_prints_what_would_run_and_a_section_file_sets_a_section(tmp_path, capsys):
    section = tmp_path / "inner.yaml"
    section.write_text("num_perm: 16\n")
    with pytest.raises(SystemExit) as exit_:
        parse(["--inner-config", str(section), "--threshold", "0.5", "--print-config"],
              section_files={"inner-config": "inner"})
    printed = yaml.safe_load(capsys.readouterr().out)
    assert exit_.value.code == 0 and printed["threshold"] == 0.5 and printed["inner"]["num_perm"] == 16


def test_a_check_across_settings_judges_the_whole_configuration(capsys):
    from trainer.loop import TrainConfig

    def parsed(argv):
        return command_line(TrainConfig, argv, prog="jobs.train", description="")[1]

    cfg = parsed(["--steps", "12", "--warmup-steps", "4"])  # steps alone would be below the default warmup
    assert (cfg.steps, cfg.warmup_steps) == (12, 4)
    with pytest.raises(SystemExit) as exit_:
        parsed(["--steps", "10", "--warmup-steps", "20"])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and "--steps: warmup_steps (20) must be below steps (10)" in error
    with pytest.raises(SystemExit):
        parsed(["--steps", "10", "--warmup-steps", "5", "--lr", "-1"])  # fixed on the way; another error
    assert "lr must be positive" in capsys.readouterr().err


def test_a_class_constant_is_no_setting():
    """Found by a newcomer's run through the docs (2026-12-08): `PROFILES: x` in the clean job's --config (a
    constant of its settings' class) was taken as a setting, and the run ended in a TypeError traceback."""
    from prep.clean import CleanConfig
    from prep.config import ConfigError, override

    with pytest.raises(ConfigError, match=r"^PROFILES: unknown setting \(known: (?!PROFILES)") as error:
        override(CleanConfig(), {"PROFILES": "x"})
    assert "PROFILES" not in str(error.value).split("known:")[1]
