"""A run as the report reads it: its folder, its stages, the settings and facts recorded beside them
(settings.yaml and run.json, written with the report by the runner), and where each stage's input is."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from prep.config import ConfigError, YamlLoader, parse_yaml
from report.config import ReportConfig
from report.layout import StageDir, read_json, stage_dirs
from report.lookup import parquet_files, parquet_files_under
from report.model import mapping
from schemas.trust import regular_file_text

SETTINGS_FILE = "settings.yaml"  # the --print-config YAML of the run: `--config OUT/settings.yaml` runs it again
RUN_FILE = "run.json"  # the job, its inputs, the version and its seconds
# in run.json (and in the pipeline's stats): the seconds of the stages a pipeline timed that write no time of
# their own (the shards: their index.json is the same for the same input), by the report's key ("shards/web")
STAGE_SECONDS = "stage_seconds"
MAX_SETTINGS_BYTES = 4 << 20


@dataclass
class Run:
    out: Path
    cfg: ReportConfig
    stages: list[StageDir]
    settings_text: str | None
    settings: dict
    info: dict

    @classmethod
    def of(cls, out: Path, cfg: ReportConfig) -> "Run":
        text = _settings_text(out / SETTINGS_FILE)
        settings = _settings(text) if text else {}
        return cls(out, cfg, stage_dirs(out), text, mapping(settings),
                   read_json(out / RUN_FILE) or {})

    @property
    def pipeline(self) -> bool:
        return not (len(self.stages) == 1 and self.stages[0].folder == self.out)

    def setting(self, stage: StageDir, *path: str, default=None):
        """A setting of the stage as it ran (the pipeline's section of it), or `default` when not recorded."""
        value = self.settings.get(stage.kind, {}) if self.pipeline else self.settings
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return default
            value = value[key]
        return value

    def input_files(self, stage: StageDir) -> list[Path]:
        """The Parquet files of the documents the stage read: the stage before it in the pipeline (of its
        source), or the inputs run.json names for a job of its own (outside the folder: only with
        cfg.read_outside)."""
        if not self.pipeline:
            inputs = self.info.get("inputs")
            if not self.cfg.read_outside or not isinstance(inputs, dict):
                return []
            return parquet_files([s for s in inputs.values() if isinstance(s, str)])
        before = {"dedup": ("quality", "clean"), "decontaminate": ("dedup",)}.get(stage.kind, ())
        for kind in before:
            folders = [s.folder for s in self.stages if s.kind == kind]
            if kind == "dedup" and folders and stage.source:
                return parquet_files_under([folders[0] / "docs" / f"source={stage.source}"])
            if folders:
                return parquet_files_under([f / "docs" for f in folders])
        return []

    def inputs_left_out(self) -> bool:
        """Whether run.json names inputs of a job of its own that are not read (cfg.read_outside is false)."""
        inputs = self.info.get("inputs")
        return not self.pipeline and not self.cfg.read_outside and isinstance(inputs, dict) and bool(inputs)


def _settings_text(path: Path) -> str | None:
    return regular_file_text(path, MAX_SETTINGS_BYTES)


def _settings(text: str):
    """The settings YAML parsed, or {} when it is not YAML (prep.config.parse_yaml: libyaml, nesting bounded, a
    repeated key refused) or holds an alias: --print-config writes none, and nested aliases are a bomb (a few
    hundred bytes that expand to gigabytes once anything walks them)."""
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=YamlLoader)):
            return {}
        return parse_yaml(text)
    except (yaml.YAMLError, ConfigError):
        return {}
