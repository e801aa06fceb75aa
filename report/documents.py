"""Documents as the report shows them: an excerpt of bounded length around what is marked, and a few
fields, each cut to a bounded length. The text stays text: report/html.py escapes it when written."""

import itertools
import json
import re

from report.config import ReportConfig
from report.model import Document, Mark

MAX_MARKS = 50  # PII replacements marked in a document, at most
SHOWN_FIELDS = ("lang", "source", "url", "error", "file", "line", "offset")  # a reason is said by its group


def clipped(value, limit: int) -> str:
    """A field's value as a string of at most `limit` characters (an ellipsis says it was cut)."""
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def excerpt(text: str, marks: list[Mark], chars: int) -> tuple[str, list[Mark], str]:
    """(at most `chars` characters of `text`, from before its first mark; the marks moved into it; a note
    saying which characters they are when not all)."""
    if len(text) <= chars:
        return text, marks, ""
    first = min((m.start for m in marks), default=0)
    start = max(0, min(first - chars // 4, len(text) - chars))
    line = text.rfind("\n", max(0, start - chars // 8), start + 1)  # from a line's start, when one is near
    start = line + 1 if line >= 0 else start
    end = start + chars
    moved = [Mark(max(m.start, start) - start, min(m.end, end) - start, m.kind, m.title) for m in marks
             if m.end > start and m.start < end]
    return text[start:end], moved, f"characters {start:,}-{end:,} of {len(text):,}"


def document(row: dict, cfg: ReportConfig, fields: tuple[str, ...] = SHOWN_FIELDS, marks: list[Mark] = (),
             extra: dict[str, str] | None = None) -> Document:
    """A document from an output's row (id, text and any of `fields`), its marks kept in the excerpt."""
    text = row.get("text") or ""
    shown, moved, note = excerpt(text, sorted(marks, key=lambda m: m.start), cfg.example_chars)
    values = {name: clipped(row[name], cfg.field_chars) for name in fields if row.get(name) not in (None, "")}
    values.update(_scores(row))
    # a span's kind and score come from a matches/ file from elsewhere: a 1 MB kind made a page of 60 MB
    values.update({name: clipped(value, cfg.field_chars) for name, value in (extra or {}).items()})
    return Document(clipped(row.get("id"), cfg.field_chars), shown, values, moved, note)


def _scores(row: dict) -> dict[str, str]:
    """A classifier's score and bucket columns (issue 47's score_NAME, bucket_NAME, label_NAME)."""
    found = {}
    for name, value in row.items():
        if value is None or not name.startswith(("score_", "bucket_", "label_")):
            continue
        found[name] = f"{value:.3f}" if isinstance(value, float) else clipped(value, 60)
    return found


def replacement_marks(text: str, replacements: list[str]) -> list[Mark]:
    """Where the PII replacements stand in a cleaned text: what redaction put there (or the same string
    written by the author: the report cannot tell them apart)."""
    marks: list[Mark] = []
    for replacement in filter(None, replacements):  # the first MAX_MARKS found, not all made first (a million)
        found = itertools.islice(re.finditer(re.escape(replacement), text), MAX_MARKS - len(marks))
        marks += [Mark(m.start(), m.end(), "pii", "PII replaced") for m in found]
    return marks


def raw_text(raw: bytes | None, limit: int) -> str:
    """A quarantined record's bytes as text: decoded where they are UTF-8, the rest replaced."""
    return (raw or b"")[: limit * 4].decode("utf-8", "replace")[:limit]


def metadata_fields(row: dict, cfg: ReportConfig, names: tuple[str, ...] = ("url",)) -> dict[str, str]:
    """A few of the input's own fields, carried in `metadata` (JSON) by the clean job."""
    raw = row.get("metadata")
    if not raw or len(raw) > 100_000:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: clipped(data[name], cfg.field_chars) for name in names if isinstance(data.get(name), str)}
