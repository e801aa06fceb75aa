"""What the stages' gatherers share: an output streamed into a sample and distributions, reasons with
their examples, the distributions as plots, the note on what share was read."""

from pathlib import Path

import pyarrow as pa

from report.config import ReportConfig
from report.documents import clipped, raw_text
from report.model import Bars, Document, Histogram, Note, Reason, Section, Table, finite, whole
from report.sample import OTHER_VALUES, Distributions, Smallest, length_labels, score_labels
from report.scan import Plan, scanned, schema_names

DOCUMENT_COLUMNS = ["id", "text", "lang", "source", "metadata"]
CLASSIFIER_PREFIXES = ("score_", "bucket_", "label_")


def classifier_columns(folder: Path) -> list[str]:
    """The classifier columns an output has (issue 47's score_NAME, bucket_NAME, label_NAME)."""
    return [name for name in schema_names(folder) if name.startswith(CLASSIFIER_PREFIXES)]


def stream(folder: Path, columns: list[str], cfg: ReportConfig, sample: Smallest | None,
           dist: Distributions | None, key: str | None = None) -> Plan:
    """Reads `columns` of an output within cfg.read_bytes into `sample` (by the column `key`) and `dist`."""
    chosen, tables = scanned(folder, columns, cfg.read_bytes, cfg.max_files)
    for table in tables:
        if sample is not None:
            sample.offer(table, table.column(key).to_pylist() if key and key in table.column_names else None)
        if dist is not None:
            dist.add(table)
    return chosen


MAX_DAMAGED_NAMED = 10  # damaged files of an output named one by one; the rest counted


def read_note(plan: Plan, what: str) -> list[Note]:
    """A note when examples and distributions come from part of an output, and one per damaged file passed
    over (the first MAX_DAMAGED_NAMED: 20,000 empty part files from elsewhere made 6.8 MB of notes)."""
    notes = [Note(f"{clipped(name, 200)} is damaged ({clipped(why, 200)}): passed over, its rows are not shown")
             for name, why in plan.damaged[:MAX_DAMAGED_NAMED]]
    if len(plan.damaged) > MAX_DAMAGED_NAMED:
        notes.append(Note(f"{others(len(plan.damaged) - MAX_DAMAGED_NAMED, 'damaged files')} of {what}: passed "
                          "over as well"))
    if plan.whole:
        return notes
    return notes + [Note(f"{what}: examples and distributions from {plan.rows_read:,} of {plan.rows:,} rows "
                         f"({100 * plan.share:.1f}%), whole row groups taken by a hash of their file and position "
                         "(report.read_bytes); the counts are the job's, over everything.")]


def outside_note(what: str) -> Note:
    """What to say where text outside the run's folder was not read (ReportConfig.read_outside)."""
    return Note(f"{what} is outside this folder, in the files its run.json or settings.yaml name: not read "
                "(--read-outside true reads them, for a folder you trust).")


def others(count: int, what: str) -> str:
    """The line that counts what a list leaves out past report.max_reasons."""
    return f"{count:,} other {what}"


def capped(rows: list[list], cfg: ReportConfig, what: str) -> list[list]:
    """A table's first cfg.max_reasons rows, and one counting the rest: a file from elsewhere can hold a row's
    entry a million times (300,000 benchmarks made a page of 33 MB)."""
    if len(rows) <= cfg.max_reasons:
        return rows
    return rows[:cfg.max_reasons] + [[others(len(rows) - cfg.max_reasons, what), *[None] * (len(rows[0]) - 1)]]


def _counts(counts) -> list[tuple[str, int]]:
    """The counts of a stats.json from elsewhere that are counts: integers from 0 to an int64's (a count of 401
    digits raised OverflowError where the bars were drawn), of a mapping (a list there hid the stage)."""
    items = counts.items() if isinstance(counts, dict) else ()
    return [(str(k), v) for k, v in items if whole(v) is not None]


def reason_table(counts: dict, total: int, what: str, cfg: ReportConfig) -> list:
    """Reasons whose records are not written (nothing to show but their count): a bar chart and a table."""
    counted = _ordered(counts)
    shown = [(clipped(k, cfg.field_chars), v) for k, v in counted[:cfg.max_reasons]]  # a 48 MB reason: 50 MB
    if len(counted) > len(shown):
        shown.append((others(len(counted) - len(shown), "reasons"), sum(v for _, v in counted[cfg.max_reasons:])))
    if not shown:
        return []
    return [Bars(f"{what}, by reason", dict(shown), what.lower()),
            Table("", ["reason", what.lower(), "share"], [[k, v, f"{100 * v / total:.2f}%" if total else None]
                                                          for k, v in shown])]


def _ordered(counts) -> list[tuple[str, int]]:
    """The reasons of a stats.json's counts, the most counted first, ties by name."""
    return sorted(_counts(counts), key=lambda kv: (-kv[1], kv[0]))


def reason_sample(counts, cfg: ReportConfig, make) -> Smallest:
    """The sample of examples for the reasons `reasons` lists (the largest cfg.max_reasons of `counts`)."""
    return Smallest(cfg.examples_per_reason, make, keys={name for name, _ in _ordered(counts)[:cfg.max_reasons]})


def reasons(counts: dict, total: int, sample: Smallest | None, cfg: ReportConfig) -> list[Reason]:
    """Every reason (the largest cfg.max_reasons, the rest as one) with its share of `total` and examples."""
    ordered = _ordered(counts)
    shown = [Reason(clipped(name, cfg.field_chars), n, n / total if total else 0.0, sample.get(name) if sample else [])
             for name, n in ordered[:cfg.max_reasons]]  # a reason's name clipped: a 48 MB one made 50 MB of report
    rest = ordered[cfg.max_reasons:]
    if rest:
        n = sum(v for _, v in rest)
        shown.append(Reason(others(len(rest), "reasons"), n, n / total if total else 0.0,
                            note="not listed (report.max_reasons)"))
    return shown


def distributions(series: dict[str, Distributions]) -> list:
    """Document lengths, languages and classifier scores of each series (kept, removed) side by side."""
    series = {name: d for name, d in series.items() if d.rows}
    if not series:
        return []
    blocks: list = [Histogram("Document length (characters)", length_labels(),
                              {name: d.lengths.tolist() for name, d in series.items()})]
    # the most counted first, ties by name: a set's own order is the process's string hash seed's
    languages = sorted({lang for d in series.values() for lang in d.languages},
                       key=lambda lang: (-sum(d.languages[lang] for d in series.values()), lang))
    if languages:
        rows = listed(languages, [d.languages for d in series.values()], 20)
        blocks.append(Table("Languages (documents read)", ["language", *series], rows))
    for column in sorted({c for d in series.values() for c in d.scores}):
        blocks.append(Histogram(f"Classifier score {column}", score_labels(),
                                {name: d.scores[column].tolist() for name, d in series.items() if column in d.scores},
                                note="the probability of the classifier's label; bins of 0.05"))
    for column in sorted({c for d in series.values() for c in d.buckets}):
        values = sorted({v for d in series.values() for v in d.buckets.get(column, {})}, key=_number_first)
        rows = listed(values, [d.buckets.get(column, {}) for d in series.values()], 100)
        blocks.append(Table(f"Documents by {column}", ["bucket", *series], rows))
    return blocks


def listed(values: list[str], counts: list[dict], limit: int) -> list[list]:
    """A row per value of the first `limit`, its count in each series, and the rest (with the values counted
    as OTHER_VALUES) summed in one row."""
    named = [v for v in values if v != OTHER_VALUES]
    rows = [[v, *(c.get(v, 0) for c in counts)] for v in named[:limit]]
    if rest := named[limit:] + [OTHER_VALUES] * (len(named) < len(values)):
        rows.append([OTHER_VALUES, *(sum(c.get(v, 0) for v in rest) for c in counts)])
    return rows


def _number_first(value: str):
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def seconds(value) -> float | None:
    """A stage's seconds: a finite number, or the sum of its steps' (dedup)."""
    if isinstance(value, dict):
        steps = [finite(v) for v in value.values()]
        return finite(sum(v for v in steps if v is not None))
    return finite(value)


def count(stats: dict, key: str) -> int | None:
    return whole(stats.get(key))


def bars_of(values, title: str, unit: str = "", note: str = "") -> Bars:
    """Bars of the finite numbers of a mapping from elsewhere (anything else, left out)."""
    numbers = {str(k): finite(v) for k, v in values.items()} if isinstance(values, dict) else {}
    return Bars(title, {k: v for k, v in numbers.items() if v is not None}, unit, note)


def quarantine(folder: Path, cfg: ReportConfig, quarantined: int | None) -> Section:
    """Quarantined records: the error, where they were (file and line or byte offset), their bytes as text;
    sampled by a hash of their place."""
    def shown(row: dict) -> Document:
        where = {key: clipped(row.get(key), cfg.field_chars) for key in ("error", "file", "line", "offset")}
        return Document(clipped(row["id"], cfg.field_chars), raw_text(row.get("raw"), cfg.example_chars),
                        {k: v for k, v in where.items() if v})

    sample = Smallest(cfg.examples_per_reason * 2, shown)
    chosen, tables = scanned(folder, ["error", "file", "line", "offset", "raw", "id"], cfg.read_bytes, cfg.max_files)
    for table in tables:
        sample.offer(_placed(table))
    counted = f" ({quarantined:,} records)" if whole(quarantined) is not None else ""
    return Section(f"Quarantined{counted}", [*read_note(chosen, "quarantine"), *sample.get()])


def _placed(table: pa.Table) -> pa.Table:
    """The table with an `id` for every record: its own, else its file and line (or byte offset)."""
    place = table.column("line") if "line" in table.column_names else table.column("offset")
    own = table.column("id").to_pylist() if "id" in table.column_names else [None] * table.num_rows
    ids = [i if i else f"{f}:{p}" for i, f, p in zip(own, table.column("file").to_pylist(), place.to_pylist())]
    names = [n for n in table.column_names if n != "id"]
    return table.select(names).append_column("id", pa.array(ids, pa.string()))
