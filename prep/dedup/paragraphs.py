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

import bisect
import re
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import xxhash

from prep.dedup.shingles import normalize_bytes

PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
LINE = re.compile(r"[^\n]+")
SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+[\"'”’)\]]*\s*|[^.!?。！？]+$")
SENTENCES_A_UNIT = 3
# scope: where units are counted, all documents (0) or each source apart (its index)
UNITS_SCHEMA = pa.schema([("row", pa.int64()), ("doc_key", pa.int64()), ("key", pa.int64()), ("scope", pa.int32())])


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
        found = [m.span() for m in LINE.finditer(text)]
    else:
        starts, found = 0, []
        for brk in PARAGRAPH_BREAK.finditer(text):
            found.append((starts, brk.start()))
            starts = brk.end()
        found.append((starts, len(text)))
    # to the unit's last character: the white space after it (the text's last line break) is its separator's
    out = [(a, a + len(text[a:b].rstrip())) for a, b in found if text[a:b].strip()]
    if unit in ("line", "paragraph"):
        return out
    runs = []  # every run of SENTENCES_A_UNIT sentences (fewer in a shorter paragraph), overlapping
    for a, b in out:
        sentences = [m.span() for m in SENTENCE.finditer(text, a, b) if m.group().strip()]
        for k in range(max(1, len(sentences) - SENTENCES_A_UNIT + 1)):
            group = sentences[k:k + SENTENCES_A_UNIT]
            runs.append((group[0][0], group[-1][1]))
    return runs


def removable_units(text: str, cfg: ParagraphConfig) -> list[tuple[int, int, int]]:
    """(start, end, key) of each unit of the text that may be removed: min_unit_chars long with its white space
    collapsed (a line's indentation is no length: a brace indented 32 columns was a unit of 33), and folding to
    something (with `near`, a line of punctuation folds to nothing: "});" and "]);" were one unit). Its key is
    a 64-bit hash of the unit lowercased with its white space collapsed, or folded (`near`), signed (Spark's
    long)."""
    found = []
    for a, b in spans(text, cfg.unit):
        collapsed = " ".join(text[a:b].split())
        if len(collapsed) < cfg.min_unit_chars:
            continue
        folded = normalize_bytes(text[a:b]) if cfg.near else collapsed.lower().encode("utf-8")
        if folded:
            found.append((a, b, xxhash.xxh64_intdigest(folded) - (1 << 63)))
    return found


def doc_key(doc_id: str, text: str) -> int:
    """The order of documents for "the first": a hash of the id and the text."""
    return xxhash.xxh64_intdigest(f"{doc_id}\0{text}".encode("utf-8", "surrogatepass")) - (1 << 63)


def units_batch(batch: pa.RecordBatch, cfg: ParagraphConfig) -> pa.RecordBatch:
    """(row, id, text, scope) in; a row per distinct unit of each document that may be removed: (row, its
    document's key, the unit's key, its scope)."""
    rows, docs, keys, scopes = [], [], [], []
    for row, doc_id, text, scope in zip(batch["row"].to_pylist(), batch["id"].to_pylist(), batch["text"].to_pylist(),
                                        batch["scope"].to_pylist()):
        mine = {key for _, _, key in removable_units(text, cfg)}
        key = doc_key(doc_id, text)
        rows += [row] * len(mine)
        docs += [key] * len(mine)
        keys += sorted(mine)
        scopes += [scope] * len(mine)
    return pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(docs, pa.int64()),
                                       pa.array(keys, pa.int64()), pa.array(scopes, pa.int32())], schema=UNITS_SCHEMA)


def without(text: str, removed: set[int], cfg: ParagraphConfig, keeps: frozenset[int] = frozenset()) -> tuple[str, int]:
    """(the text without its units whose key is in `removed`, but for what units whose key is in `keeps` (those
    it is the first document of) cover: runs of sentences overlap, and a run this document keeps loses none of
    its sentences to another; how many units were removed). Only the text at a cut changes: the white space
    there is the wider of its two sides' (a blank line, a line break, a space), the next line's indentation
    kept. A text without such a unit comes back as it is."""
    found = removable_units(text, cfg)
    kept_spans = _merged([(a, b) for a, b, key in found if key in keeps])
    starts = [a for a, _ in kept_spans]
    lost = [parts for a, b, key in found if key in removed if (parts := _outside(a, b, kept_spans, starts))]
    cut = [piece for parts in lost for piece in parts]
    if not cut:
        return text, 0
    pieces, last = [], 0
    for a, b in sorted(cut):  # runs of sentences overlap: what a run removed stays removed
        pieces.append(text[last:max(a, last)])
        last = max(last, b)
    pieces.append(text[last:])
    return _stitched(pieces), len(lost)


def _outside(a: int, b: int, kept: list[tuple[int, int]], starts: list[int]) -> list[tuple[int, int]]:
    """The parts of [a, b) outside every span of `kept` (sorted, not overlapping; `starts` their starts): the
    spans a document keeps are looked up, not scanned (a document first of 2,000 units and losing 2,000 took
    2 s, the square of its units)."""
    parts, at = [], a
    for ka, kb in kept[max(0, bisect.bisect_right(starts, a) - 1):bisect.bisect_left(starts, b)]:
        if kb > at:
            if ka > at:
                parts.append((at, ka))
            at = max(at, kb)
    return parts + [(at, b)] if at < b else parts


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted and joined where they overlap."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _stitched(pieces: list[str]) -> str:
    """The kept pieces of a text between its cuts, joined: at each cut the white space is the wider of the two
    sides' (a blank line, a line break, a space; white space alone between two cuts is the cuts' one) and the
    next line keeps its indentation; after a last cut, the text's own trailing white space. Each junction
    touches its two pieces alone (the text so far copied at each cut took 20 s for 30,000 cuts)."""
    out = [pieces[0]] if pieces[0].strip() else []
    for right in (piece for piece in pieces[1:] if piece.strip()):
        inner = right[:len(right) - len(right.lstrip())]
        indent = inner.rsplit("\n", 1)[-1]  # the indentation of right's first line (or the spaces before it)
        if not out:  # the cut was the text's start
            out.append(indent + right.lstrip())
            continue
        left = out[-1].rstrip()
        outer = out[-1][len(left):]
        breaks = min(2, max(outer.count("\n"), inner.count("\n")))
        out[-1] = left
        out.append(("\n" * breaks + indent if breaks else (outer or inner)) + right.lstrip())
    if out and not pieces[-1].strip():
        out[-1] = out[-1].rstrip() + pieces[-1]
    return "".join(out)
