"""Paragraphs shared across the corpus: the boilerplate that single-page extraction and per-site templates
both keep (cookie and consent notices, license lines, newsletter prompts, syndicated "related" blocks, the
same press release on a hundred sites). The dedup job counts, for each paragraph, the documents that hold
it, and removes a paragraph found in more than `max_documents` of them from all but the first (the
document of the smallest key: a hash of its id and text, a rule on the data alone).

The unit is a paragraph (text between blank lines), or a line, or, for text without breaks, a run of three
sentences (every run, overlapping, as datatrove's sentence dedup: a shared run is found wherever it starts).
Units are compared by a 64-bit hash of their text lowercased with its white space collapsed, or,
with `near`, folded as the dedup shingles fold it (NFKC, punctuation, width, digits: "© 2023 Foo Inc." and
"© 2024 Foo Inc." are one). A unit shorter than `min_unit_chars` is never removed (a heading, "Next").
"""

import re
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import xxhash

from prep.dedup.shingles import normalize_bytes

PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+[\"'”’)\]]*\s*|[^.!?。！？]+$")
SENTENCES_A_UNIT = 3
BLANK_LINES = re.compile(r"\n[^\S\n]*(?:\n[^\S\n]*){2,}")
UNITS_SCHEMA = pa.schema([("row", pa.int64()), ("doc_key", pa.int64()), ("key", pa.int64())])


@dataclass(frozen=True)
class ParagraphConfig:
    """Paragraphs (or lines, or runs of sentences) shared by many documents, removed from all but the first."""
    enabled: bool = False  # a step after the documents' dedup: shared units removed
    unit: Literal["paragraph", "line", "sentences"] = "paragraph"  # what is compared (sentences: runs of three)
    max_documents: int = 3  # a unit in more documents than this is removed from all but the first
    near: bool = False  # also as one: units equal once digits, punctuation and width are folded
    min_unit_chars: int = 30  # a shorter unit is never removed (a heading, a button's word)
    min_doc_chars: int = 100  # a document left with fewer characters is dropped (paragraphs:too_short)

    def __post_init__(self):
        if self.unit not in ("paragraph", "line", "sentences"):
            raise ValueError(f"paragraphs.unit must be paragraph, line or sentences, got {self.unit!r}")
        if self.max_documents < 1 or self.min_unit_chars < 1 or self.min_doc_chars < 0:
            raise ValueError("paragraphs.max_documents and min_unit_chars must be at least 1, min_doc_chars 0")


def spans(text: str, unit: str) -> list[tuple[int, int]]:
    """(start, end) of each unit of the text, in order; what lies between them is its separator."""
    if unit == "line":
        pattern = re.compile(r"[^\n]+")
        return [m.span() for m in pattern.finditer(text)]
    starts, out = 0, []
    for brk in PARAGRAPH_BREAK.finditer(text):
        out.append((starts, brk.start()))
        starts = brk.end()
    out.append((starts, len(text)))
    out = [(a, b) for a, b in out if text[a:b].strip()]
    if unit == "paragraph":
        return out
    runs = []  # every run of SENTENCES_A_UNIT sentences (fewer in a shorter paragraph), overlapping
    for a, b in out:
        sentences = [m.span() for m in SENTENCE.finditer(text, a, b) if m.group().strip()]
        for k in range(max(1, len(sentences) - SENTENCES_A_UNIT + 1)):
            group = sentences[k:k + SENTENCES_A_UNIT]
            runs.append((group[0][0], group[-1][1]))
    return runs


def unit_key(piece: str, near: bool) -> int:
    """A unit's 64-bit key, signed (Spark's long)."""
    folded = normalize_bytes(piece) if near else " ".join(piece.lower().split()).encode("utf-8")
    return xxhash.xxh64_intdigest(folded) - (1 << 63)


def doc_key(doc_id: str, text: str) -> int:
    """The order of documents for "the first": a hash of the id and the text."""
    return xxhash.xxh64_intdigest(f"{doc_id}\0{text}".encode("utf-8", "surrogatepass")) - (1 << 63)


def units_batch(batch: pa.RecordBatch, cfg: ParagraphConfig) -> pa.RecordBatch:
    """(row, id, text) in; a row per distinct unit of each document long enough to be removed: (row, its
    document's key, the unit's key)."""
    rows, docs, keys = [], [], []
    for row, doc_id, text in zip(batch["row"].to_pylist(), batch["id"].to_pylist(), batch["text"].to_pylist()):
        mine = {unit_key(text[a:b], cfg.near) for a, b in spans(text, cfg.unit) if b - a >= cfg.min_unit_chars}
        key = doc_key(doc_id, text)
        rows += [row] * len(mine)
        docs += [key] * len(mine)
        keys += sorted(mine)
    return pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(docs, pa.int64()),
                                       pa.array(keys, pa.int64())], schema=UNITS_SCHEMA)


def without(text: str, removed: set[int], cfg: ParagraphConfig) -> tuple[str, int]:
    """(the text without its units whose key is in `removed`, at most one blank line left where they were;
    how many were removed). A text without such a unit comes back as it is."""
    cut = [(a, b) for a, b in spans(text, cfg.unit)
           if b - a >= cfg.min_unit_chars and unit_key(text[a:b], cfg.near) in removed]
    if not cut:
        return text, 0
    pieces, last = [], 0
    for a, b in cut:  # in order; runs of sentences overlap: what a run removed stays removed
        pieces.append(text[last:max(a, last)])
        last = max(last, b)
    pieces.append(text[last:])
    return BLANK_LINES.sub("\n\n", "".join(pieces)).strip(), len(cut)
