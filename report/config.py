"""What a report reads and shows: every cap that keeps its reads and its size bounded, whatever the corpus."""

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ReportConfig:
    """The report's bounds. Counts come from stats.json (exact, the whole corpus); examples and
    distributions from what is read of the outputs: all of it when it fits `read_bytes`, else row groups
    taken by a hash of their file and position, and the report says which share it read."""
    read_bytes: int = 256 << 20  # Parquet bytes (the columns read, uncompressed) read per output at most
    max_files: int = 20_000  # Parquet files of one output whose footers are read, at most (taken by a hash past it)
    examples_per_reason: int = 4  # documents shown per reason (those of the smallest id hash)
    max_reasons: int = 60  # reasons listed per stage, the largest first; the rest counted together
    example_chars: int = 1_500  # characters of a document shown (what is marked in it is centred)
    field_chars: int = 200  # characters of an id, file, URL, error or other field shown
    kept_examples: int = 4  # documents a stage kept, shown as a sample
    template_sites: int = 4  # extract: sites whose template lines are shown (those of the smallest host hash)
    template_lines: int = 20  # extract: template lines shown per site, those cut from the most pages first
    largest_clusters: int = 5  # dedup: the largest clusters shown
    sampled_clusters: int = 5  # dedup: clusters shown beside them, by a hash of their head's id
    cluster_members: int = 4  # dedup: members shown per cluster beside its survivor
    match_items: int = 30  # decontamination: benchmark items whose matches are shown
    spans_per_item: int = 3  # decontamination: matched spans shown per item
    lookup_bytes: int = 256 << 20  # Parquet bytes read to find the text of documents another output names
    benchmark_bytes: int = 64 << 20  # bytes of benchmark files read to show the items matched
    compare_documents: int = 200_000  # documents (by id hash) whose fate two runs are compared on
    compare_examples: int = 4  # documents shown side by side per change of fate
    settings_chars: int = 20_000  # characters of the settings (--print-config YAML) shown
    # read the files outside the folder that its run.json and settings.yaml name (the run's inputs, its benchmark
    # files), for a folder you trust: a folder from elsewhere names them, and their text would go into the page
    read_outside: bool = False

    def __post_init__(self):
        for setting in fields(self):
            value = getattr(self, setting.name)
            if setting.type is bool:
                if not isinstance(value, bool):
                    raise ValueError(f"{setting.name} must be true or false, got {value!r}")
            elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{setting.name} must be a whole number of 0 or more, got {value!r}")
