"""Multiple-choice benchmark items, read from files made elsewhere: within bounds, each record checked.

A benchmark is given as files, folders or globs (comma-separated) of JSON Lines (.jsonl, .jsonl.gz,
.jsonl.zst), JSON (.json: a list of records), CSV with a header (.csv) or Parquet. A record is an item in
any of the layouts the common benchmarks ship in:
- MMLU (Hugging Face's cais/mmlu): `question`, `choices` (a list), `answer` (the right choice's index);
- C-Eval: `question`, `A`, `B`, `C`, `D`, `answer` (a letter);
- CMMLU: `Question`, `A` ... `D`, `Answer` (a letter).
The answer is a letter (A is the first choice) or an index, as a number or digits. A record that is not
an item (no question, fewer than two choices, no answer, an answer out of range, over the size limits) is
counted by reason and left out. A file over MAX_FILE_BYTES is refused by name.
"""

import codecs
import csv
import glob
import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

from prep.ingest.readers import parquet_rows
from prep.ingest.streams import StreamDamaged, decompressed_chunks, split_lines
from schemas.trust import TooLarge, bounded_json, is_regular_file, not_regular_why, open_regular_file, valid_unicode

SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".csv", ".parquet")
MAX_FILE_BYTES = 256 << 20  # MMLU's test set is 7 MB as Parquet, 10 MB as JSON Lines
MAX_RECORD_BYTES = 1 << 20
# A .json file is parsed whole, on every rank: 24 bytes of Python objects a byte of `[{},{},...]` at worst
# (32 MB took 771 MB); JSON Lines, CSV and Parquet are read a record at a time
MAX_JSON_BYTES = 16 << 20
MAX_RECORDS = 1_000_000  # a benchmark's records (MMLU's test set: 14,042), every one kept until the subset is drawn
PARQUET_BATCH_BYTES = 64 << 20  # values read at a time (parquet_rows)
MAX_TEXT_CHARS = 20_000  # a question or a choice; MMLU's longest question is about 4,700 characters
MAX_CHOICES = 26  # one per letter
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class ItemsError(ValueError):
    """A benchmark file cannot be read: one line naming it."""


@dataclass(frozen=True)
class Item:
    question: str
    choices: tuple[str, ...]
    answer: int  # the index of the right choice

    @property
    def key(self) -> str:
        """A hash of the question and its choices: the item's place in the fixed subset."""
        return hashlib.sha256(json.dumps([self.question, self.choices], ensure_ascii=False).encode()).hexdigest()


def benchmark_files(spec: str) -> list[str]:
    """The files of a benchmark (files, folders and globs, comma-separated), sorted; ItemsError for a part
    that names none."""
    found: set[str] = set()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        paths = sorted(glob.glob(part, recursive=True)) if glob.has_magic(part) else [part]
        matched = []
        for path in paths:
            if os.path.isdir(path):
                matched += [os.path.join(d, f) for d, _, files in os.walk(path) for f in files]
            elif os.path.lexists(path):
                matched.append(path)
        matched = [os.path.abspath(p) for p in matched if p.endswith(SUFFIXES)]
        if strange := [p for p in matched if not is_regular_file(p)]:  # a FIFO's open waited forever
            raise ItemsError(f"{strange[0]}: {not_regular_why(strange[0])}")
        if not matched:
            raise ItemsError(f"{part}: no benchmark file ({', '.join(SUFFIXES)})")
        found.update(matched)
    if not found:
        raise ItemsError("no benchmark file given")
    return sorted(found)


def _text(value) -> str | None:
    if isinstance(value, str):
        return value if value.strip() and len(value) <= MAX_TEXT_CHARS else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _blank(value) -> bool:
    return value is None or isinstance(value, str) and not value.strip()


def _answer(value, choices: int) -> int | None:
    if isinstance(value, str):
        value = value.strip()
        if len(value) == 1 and value.upper() in LETTERS:
            value = LETTERS.index(value.upper())
        elif value.isascii() and value.isdigit() and len(value) < 3:
            value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < choices:
        return value
    return None


def item_of(record) -> Item | str:
    """The item a record holds, or why it holds none."""
    if not isinstance(record, dict):
        return "not a record"
    question = _text(record.get("question", record.get("Question")))
    if question is None:
        return "no question (or over the size limit)"
    raw = record.get("choices")
    if raw is None:  # C-Eval, CMMLU: a column per letter, from A on without a gap (else "C" names D's text)
        present = [letter for letter in LETTERS if letter in record]
        if present != list(LETTERS[:len(present)]):
            return "choice columns not A, B, C, ... in a row"
        raw = [record[letter] for letter in present]
        while raw and _blank(raw[-1]):  # a file of 4- and 5-choice items: the 4-choice rows leave E empty
            raw.pop()
    if not isinstance(raw, list | tuple) or not 2 <= len(raw) <= MAX_CHOICES:
        return "not 2 to 26 choices"
    choices = tuple(_text(c) for c in raw)
    if None in choices:
        return "a choice that is not text (or over the size limit)"
    answer = _answer(record.get("answer", record.get("Answer")), len(choices))
    if answer is None:
        return "no answer (a letter or an index of a choice)"
    if not valid_unicode(question, *choices):  # an item is keyed and tokenized as UTF-8
        return "an unpaired surrogate (not valid Unicode)"
    return Item(question, choices, answer)


class Unreadable(str):
    """Why a record of a file could not be read (a type of its own: a JSON line may well hold a string)."""


def _records(path: str) -> Iterator[object]:
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise ItemsError(f"{path}: over {MAX_FILE_BYTES} bytes, the most a benchmark file may hold")
    if path.endswith(".parquet"):
        for row in parquet_rows(path, 1024, PARQUET_BATCH_BYTES, MAX_RECORD_BYTES):
            yield Unreadable(row) if isinstance(row, str) else row
    elif path.endswith(".csv"):
        # a field as long as a record may be (csv's own limit, 131,072 characters, refused the whole file)
        csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))
        with open_regular_file(path) as f:
            text = f.read(MAX_FILE_BYTES).decode("utf-8-sig")
        yield from csv.DictReader(io.StringIO(text, newline=""))
    elif path.endswith(".json"):
        with open_regular_file(path) as f:
            data = bounded_json(f.read(MAX_JSON_BYTES + 1).removeprefix(codecs.BOM_UTF8), MAX_JSON_BYTES)
        yield from data if isinstance(data, list) else [data]
    else:
        for line in split_lines(_bounded(decompressed_chunks(path), path), MAX_RECORD_BYTES):
            # a byte order mark opening the file is no part of its first record (the decontaminate job reads it so)
            data = line.data.removeprefix(codecs.BOM_UTF8) if line.number == 1 else line.data
            if line.too_long:
                yield Unreadable("record over the size limit")
            elif data.strip():
                try:
                    yield bounded_json(data, MAX_RECORD_BYTES)
                except (UnicodeDecodeError, ValueError, RecursionError):
                    yield Unreadable("malformed JSON")


def _bounded(chunks: Iterator[bytes], path: str) -> Iterator[bytes]:
    """The chunks of a file as decompressed, up to MAX_FILE_BYTES in all: the limit holds for a compressed
    file too (1.7 MB of gzip held the 281 MB a plain file is refused for; every rank reads it at start)."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_FILE_BYTES:
            raise ItemsError(f"{path}: over {MAX_FILE_BYTES} bytes decompressed, the most a benchmark file may hold")
        yield chunk


def read_items(name: str, spec: str) -> tuple[list[Item], dict[str, int]]:
    """(every item of a benchmark's files, the records left out by reason); ItemsError when a file cannot
    be read or no record is an item."""
    items, skipped, records = [], {}, 0
    for path in benchmark_files(spec):
        try:
            for record in _records(path):
                records += 1
                if records > MAX_RECORDS:  # (635,199 small items from 1.5 MB of gzip took 251 MB)
                    raise ItemsError(f"benchmark {name}: over {MAX_RECORDS} records, more than a benchmark holds")
                found = record if isinstance(record, Unreadable) else item_of(record)
                if isinstance(found, str):
                    skipped[found] = skipped.get(found, 0) + 1
                else:
                    items.append(found)
        except (OSError, StreamDamaged, TooLarge, ValueError, csv.Error, RecursionError) as e:
            if isinstance(e, ItemsError):
                raise
            raise ItemsError(f"benchmark {name}: {path} cannot be read: {e}") from None
        except Exception as e:  # pyarrow's errors on a damaged Parquet file
            raise ItemsError(f"benchmark {name}: {path} cannot be read: {type(e).__name__}: {e}") from None
    items = _distinct(items, skipped)
    if not items:
        reasons = ", ".join(f"{why} ({n})" for why, n in skipped.items()) or "no records"
        raise ItemsError(f"benchmark {name}: no multiple-choice item in {spec}: {reasons}")
    return items, skipped


REPEATED = "a repeat of an item before it"
CONFLICTING = "its question and choices are another item's with another answer"


def _distinct(items: list[Item], skipped: dict[str, int]) -> list[Item]:
    """Each item once, in order; an item whose question and choices come again with another answer is left
    out with every copy (which answer is right cannot be told: the last copy's had silently won). Both
    counted in `skipped`."""
    answers: dict[str, set[int]] = {}
    for item in items:
        answers.setdefault(item.key, set()).add(item.answer)
    kept, seen = [], set()
    for item in items:
        why = CONFLICTING if len(answers[item.key]) > 1 else REPEATED if item.key in seen else None
        if why:
            skipped[why] = skipped.get(why, 0) + 1
        else:
            kept.append(item)
        seen.add(item.key)
    return kept


def fixed_subset(items: list[Item], count: int) -> list[Item]:
    """The first `count` distinct items by their key: the same subset in the same order whatever the files'
    order, and mixed across subjects (files sorted by subject would give the first subjects alone)."""
    unique = {item.key: item for item in items}
    return [unique[key] for key in sorted(unique)[:count]]
