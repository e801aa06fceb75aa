"""Benchmark items read from the files a benchmark is given as: JSON Lines (plain, .gz, .zst), Parquet,
or .txt (a file is one item), one item per record.

An item's text is its `text` field, or the fields `text_fields` (or the benchmark's own, `by_benchmark`)
names joined by line breaks (a list
of strings, as a question's choices, joined the same way; numbers written out); its id is the `id`
field (`id_field`), else the record's position, FILE:LINE as the readers name documents. A record that
cannot be an item (malformed JSON, a named field missing or not text) is counted by reason, never
matched; a benchmark with no item at all is an error (InputError), since it would remove nothing.
"""

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from prep.ingest.inputs import InputError, InputFile, expand_inputs, is_warc
from prep.ingest.parquet_pages import PageHeaderError
from prep.ingest.readers import UTF8_BOM, parquet_rows
from prep.ingest.streams import StreamDamaged, decompressed_chunks, split_lines
from schemas.trust import keys_once, valid_unicode

MAX_ITEM_BYTES = 10_000_000
MAX_ID_CHARS = 1000
# The benchmarks are held whole on the driver, all of them at once: at most MAX_ITEMS items of MAX_BENCHMARK_CHARS
# characters together (Held). The index costs about 13 bytes a character and 800 an item while it is built: a
# 271 KB .jsonl.gz of 3,990,000 tiny items took 3.3 GB, and the bounds had been per benchmark (the same file as
# two benchmarks, 6.3 GB); MMLU is 14,000 items, 7 MB
MAX_ITEMS = 4_000_000
MAX_BENCHMARK_CHARS = 1 << 28
# records that are no item (malformed, without the text field), all benchmarks together: each costs the
# driver ~5 us, and 10 M lines of {} (30 MB) took 100 s before Spark started, to end with one item
MAX_SKIPPED = 1_000_000
PARQUET_BATCH_BYTES = 64 << 20  # values read at a time (parquet_rows)
COPY = "the same text as an earlier item"  # why a record is skipped: only its first copy is an item


@dataclass(frozen=True)
class ItemsConfig:
    """How a benchmark's records become items."""
    text_fields: list[str] = field(default_factory=list)  # fields joined into an item's text (default: text)
    id_field: str = "id"  # an item's id (a record without one: its position, FILE:LINE)
    # NAME: [fields]: a benchmark's own text_fields (benchmarks of different shapes in one run)
    by_benchmark: dict[str, list[str]] = field(default_factory=dict)

    def fields_of(self, benchmark: str) -> list[str]:
        return self.by_benchmark.get(benchmark) or self.text_fields or ["text"]


@dataclass
class Held:
    """What the benchmarks read so far hold, against MAX_ITEMS, MAX_BENCHMARK_CHARS and MAX_SKIPPED."""
    items: int = 0
    chars: int = 0
    skipped: int = 0


@dataclass
class Benchmark:
    name: str
    items: list[tuple[str, str]]  # (id, text)
    skipped: dict[str, int]  # records that are not items, by reason


def _text_of(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
        return "\n".join(str(v) for v in value)
    return None


def item_of(record, position: str, fields: list[str], id_field: str) -> tuple[str, str] | str:
    """(id, text) of one record, or why it is not an item."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    parts = []
    for name in fields:
        if name not in record or record[name] is None:
            return f"missing field {name!r}"
        if (text := _text_of(record[name])) is None:
            return f"field {name!r} is not text"
        parts.append(text)
    raw_id = record.get(id_field)
    item_id = position if raw_id is None else raw_id if isinstance(raw_id, str) else json.dumps(raw_id, default=str)
    if len(item_id) > MAX_ID_CHARS:  # every match carries it: a 9 MB id made a 17 KB document a 1.8 GB batch
        return f"id over {MAX_ID_CHARS} characters"
    text = "\n".join(parts)
    if 4 * len(text) > MAX_ITEM_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_ITEM_BYTES:
        return f"record over {MAX_ITEM_BYTES} bytes"  # the fields' text together (a list of choices too)
    if not valid_unicode(text, item_id):  # an item is matched as code points and shown in reports as UTF-8
        return "an unpaired surrogate (not valid Unicode)"
    return item_id, text


class NotARecord(str):
    """Why a line is not a record (a str of its own: a JSON line may well be a string)."""


def _text_bytes(record: dict) -> int:
    """The UTF-8 bytes of a record's text values (encoded only where 4 bytes a character could pass the limit)."""
    texts = [v for v in record.values() if isinstance(v, str)]
    if 4 * sum(map(len, texts)) <= MAX_ITEM_BYTES:
        return 0
    return sum(len(v.encode("utf-8", "replace")) for v in texts)


def _records(file: InputFile) -> Iterator[tuple[object, str]]:
    """(record, or NotARecord saying why, position) of every record of a file."""
    if file.path.endswith(".parquet"):
        for row, record in enumerate(parquet_rows(file.path, 1024, PARQUET_BATCH_BYTES, MAX_ITEM_BYTES), 1):
            if isinstance(record, dict) and _text_bytes(record) > MAX_ITEM_BYTES:
                record = f"record over {MAX_ITEM_BYTES} bytes"
            yield NotARecord(record) if isinstance(record, str) else record, f"{file.relative}:{row}"
    elif file.path.endswith(".txt"):
        with open(file.path, "rb") as f:
            data = f.read(MAX_ITEM_BYTES + 1)
        yield ({"text": data.decode("utf-8", "replace")} if len(data) <= MAX_ITEM_BYTES else
               NotARecord(f"record over {MAX_ITEM_BYTES} bytes")), file.relative
    else:
        for line in split_lines(decompressed_chunks(file.path), MAX_ITEM_BYTES):
            if line.too_long:
                yield NotARecord(f"record over {MAX_ITEM_BYTES} bytes"), f"{file.relative}:{line.number}"
            elif line.data.strip():
                # a byte order mark (Windows editors, pandas' utf-8-sig) had made the first item malformed JSON:
                # never matched, while the report said every item was found
                data = line.data[len(UTF8_BOM):] if line.number == 1 and line.data.startswith(UTF8_BOM) else line.data
                try:
                    yield (json.loads(data.decode("utf-8"), object_pairs_hook=keys_once),  # RepeatedKey: skipped
                           f"{file.relative}:{line.number}")
                except (UnicodeDecodeError, ValueError, RecursionError) as e:
                    yield NotARecord(f"malformed JSON: {type(e).__name__}"), f"{file.relative}:{line.number}"


def read_benchmark(name: str, spec: str, cfg: ItemsConfig, held: Held | None = None) -> Benchmark:
    """Every item of the files `spec` names (files, folders or globs, comma-separated). `held`: what the
    benchmarks read before this one hold (their bounds are for all of them together)."""
    files = expand_inputs(spec)
    if warc := [f.relative for f in files if is_warc(f.path)]:
        raise InputError(f"benchmark {name}: {warc[0]} is a WARC file, not benchmark items")
    benchmark, held, texts = Benchmark(name, [], {}), held or Held(), set()
    for file in files:
        try:
            for record, position in _records(file):
                found = record if isinstance(record, NotARecord) else item_of(record, position, cfg.fields_of(name),
                                                                              cfg.id_field)
                if not isinstance(found, str):
                    # an item listed twice (MMLU repeats questions) is one item: each copy had been a match of its
                    # own in every document quoting it (100,000 copies: 2 M rows of matches from 20 documents)
                    text_key = hashlib.blake2b(found[1].encode("utf-8"), digest_size=16).digest()
                    found = COPY if text_key in texts else found
                    texts.add(text_key)
                if isinstance(found, str):
                    benchmark.skipped[found] = benchmark.skipped.get(found, 0) + 1
                    held.skipped += 1
                    if held.skipped > MAX_SKIPPED:
                        raise InputError(f"benchmark {name}: over {MAX_SKIPPED:,} records that are no item (at "
                                         f"{position}; {_reasons(benchmark.skipped)}): not benchmark items")
                    continue
                benchmark.items.append(found)
                held.items, held.chars = held.items + 1, held.chars + len(found[0]) + len(found[1])
                if held.items > MAX_ITEMS or held.chars > MAX_BENCHMARK_CHARS:
                    raise InputError(f"benchmark {name}: the benchmarks hold over {MAX_ITEMS:,} items or "
                                     f"{MAX_BENCHMARK_CHARS:,} characters together (at {position}): more than "
                                     "tokenmill holds whole")
        except (StreamDamaged, OSError, pa.ArrowException, PageHeaderError) as e:
            raise InputError(f"benchmark {name}: {file.relative} cannot be read: {e}") from None
    if not benchmark.items:
        raise InputError(f"benchmark {name}: no item in {spec}: {_reasons(benchmark.skipped)} (an item's text is "
                         f"the fields {', '.join(cfg.fields_of(name))}: set items.text_fields, or "
                         f"items.by_benchmark.{name})")
    return benchmark


def _reasons(skipped: dict[str, int], named: int = 5) -> str:
    """The first `named` reasons records were skipped for, with their counts."""
    shown = [f"{reason} ({n})" for reason, n in list(skipped.items())[:named]]
    return ", ".join(shown + ([f"{len(skipped) - named} more"] if len(skipped) > named else [])) or "no records"
