"""A compiled encoder that reproduces a tokenmill tokenizer.json exactly, ids for ids.

`tokenizer.json` stays the artifact and the reference; this reads it and encodes whole batches of
documents in one numba pass, with no Python object per token:

- pre-tokenization: the three Split stages of prep/tokenizer/pretokenize.py (digit groups, CJK runs,
  then Llama 3's pattern, or runs of newlines for superword tokenizers) as one scanner over code
  points, each stage cutting inside the pieces of the one before, exactly as `tokenizers` applies
  them. The character classes (\\p{L}, \\p{N}, \\s) come from the tokenizers library's own regex
  engine, a batch's new code points at a time: its Unicode tables need not be Python's.
  Case-insensitive contractions match what that engine matches ('s also as 'ſ);
- the model, over each pre-token's UTF-8 bytes (ByteLevel maps bytes to symbols one to one):
  Unigram by Viterbi with the `tokenizers` rules (scores added in the same order, ties kept by the
  first candidate met: the earliest start); BPE by applying the lowest-ranked merge, leftmost first,
  until none applies.

Scores are read through `Tokenizer.from_str(...).to_str()`: the Rust JSON parser reads some floats
one ulp away from Python's, and the Viterbi must add the very numbers the Rust model adds.
Tokenizers of any other shape are refused (`UnsupportedTokenizer`); callers fall back to `tokenizers`.
"""

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from tokenizers import Regex, Tokenizer, pre_tokenizers

from prep.compiled import code_points_of, kernel, put_utf8
from prep.tokenizer.pretokenize import (
    BYTE_SYMBOLS,
    CJK_RUN,
    DIGITS,
    LLAMA3,
    NEWLINES,
    from_symbols,
    is_byte_symbols,
)

LETTER, NUMBER, SPACE, CJK, KNOWN = 1, 2, 4, 8, 128
EMPTY = -1


class UnsupportedTokenizer(ValueError):
    """A tokenizer.json this encoder does not reproduce (not one tokenmill trains)."""


class UnencodableText(ValueError):
    """Text holding a byte that no piece of the vocabulary covers (a vocabulary without every byte, and
    no unknown token or byte fallback): `tokenizers` raises here too; nothing is invented for it."""


class CharClasses:
    """Class bits of every code point met so far, from the tokenizers library's regex engine."""

    PATTERNS = ((LETTER, r"\p{L}"), (NUMBER, r"\p{N}"), (SPACE, r"\s"), (CJK, CJK_RUN))

    def __init__(self):
        self.bits = np.zeros(0x110000, np.uint8)
        self._removers = [(flag, pre_tokenizers.Split(Regex(p), behavior="removed")) for flag, p in self.PATTERNS]
        self.cover(np.arange(128, dtype=np.uint32))

    def cover(self, code_points: np.ndarray) -> None:
        new = np.unique(code_points[self.bits[code_points] == 0])
        if not len(new):
            return
        text = "".join(map(chr, new.tolist()))
        bits = np.full(len(new), KNOWN, np.uint8)
        for flag, remover in self._removers:
            inside = np.ones(len(new), bool)  # what the class's pattern does not remove is outside it
            for _, (start, end) in remover.pre_tokenize_str(text):
                inside[start:end] = False
            bits[inside] |= flag
        self.bits[new] = bits


CLASSES = CharClasses()


class HashTable:
    """int64 keys to int64 values, open addressing in NumPy arrays (read by the kernels)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        size = 1 << max(4, int(2 * len(keys)).bit_length())
        self.keys = np.full(size, EMPTY, np.int64)
        self.values = np.zeros(size, np.int64)
        _fill(self.keys, self.values, keys.astype(np.int64), values.astype(np.int64))


@dataclass
class UnigramModel:
    children: HashTable  # (node << 8 | byte) → child node; the root is node 0
    token: np.ndarray  # int32 per node: the piece id ending there, or -1
    score: np.ndarray  # float64 per node: that piece's score
    longest: int  # bytes of the longest piece


@dataclass
class BpeModel:
    byte_ids: np.ndarray  # int32 [256]: the id of each single byte
    merges: HashTable  # (left << 32 | right) → rank << 32 | new id


def unigram_trie(vocab) -> UnigramModel:
    """The trie of a Unigram vocabulary: (piece, score) pairs, ids in their order. Built a depth at a time
    over all pieces at once, in arrays as large as the pieces' bytes (keyed by every prefix's bytes, a
    3 MB file of long pieces took 2.6 GB). Pieces not spelled in byte symbols are left out: a pre-token
    reaches the model in byte symbols, so `tokenizers` never matches them either."""
    vocab = list(vocab)
    ids = [i for i, (piece, _) in enumerate(vocab) if is_byte_symbols(piece)]
    raw = [from_symbols(vocab[i][0]) for i in ids]
    lengths = np.fromiter(map(len, raw), np.int64, len(raw))
    order = np.argsort(-lengths, kind="stable")  # longest first: those at least d long are a prefix of it
    sorted_lengths = lengths[order]
    flat = np.frombuffer(b"".join(raw[i] for i in order), np.uint8)
    starts = np.cumsum(sorted_lengths) - sorted_lengths
    node = np.zeros(len(raw), np.int64)  # each piece's node at the depth reached (its prefix); 0 the root
    keys, values, nodes = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], 1
    for depth in range(1, int(sorted_lengths[0]) + 1 if len(raw) else 1):
        deep = int(np.searchsorted(-sorted_lengths, -depth, side="right"))
        key = node[:deep] << 8 | flat[starts[:deep] + depth - 1]
        unique, child = np.unique(key, return_inverse=True)
        node[:deep] = nodes + child
        keys.append(unique)
        values.append(nodes + np.arange(len(unique), dtype=np.int64))
        nodes += len(unique)
    end = np.empty(len(raw), np.int64)
    end[order] = node
    # of equal pieces the last wins, as in the tokenizers vocabulary map
    last = len(end) - 1 - np.unique(end[::-1], return_index=True)[1]
    token, score = np.full(nodes, -1, np.int32), np.zeros(nodes, np.float64)
    token[end[last]] = np.array(ids, np.int32)[last]
    score[end[last]] = np.array([float(vocab[i][1]) for i in ids], np.float64)[last]
    return UnigramModel(HashTable(np.concatenate(keys), np.concatenate(values)), token, score,
                        int(sorted_lengths[0]) if len(raw) else 0)


def _bpe(model: dict) -> BpeModel:
    vocab = model["vocab"]
    byte_ids = np.array([vocab.get(symbol, -1) for symbol in BYTE_SYMBOLS], np.int32)  # -1: refused when met
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    left = np.array([vocab[a] for a, _ in merges], np.int64)
    right = np.array([vocab[b] for _, b in merges], np.int64)
    new = np.array([vocab[a + b] for a, b in merges], np.int64)
    return BpeModel(byte_ids, HashTable(left << 32 | right, np.arange(len(merges), dtype=np.int64) << 32 | new))


def _check_shape(config: dict) -> bool:
    """Refuses what this encoder does not reproduce; True for the superword pre-tokenizer."""
    stages = (config.get("pre_tokenizer") or {}).get("pretokenizers") or []
    found = [(s.get("type"), (s.get("pattern") or {}).get("Regex")) for s in stages[:3]]
    superwords = found[2:] == [("Split", NEWLINES)]
    expected = [("Split", DIGITS), ("Split", CJK_RUN), ("Split", NEWLINES if superwords else LLAMA3)]
    model = config["model"]
    problems = []
    if config.get("normalizer") is not None:
        problems.append("a normalizer")
    if found != expected or len(stages) != 4 or stages[3].get("type") != "ByteLevel" or stages[3].get("use_regex"):
        problems.append("another pre-tokenizer")
    if any(s.get("behavior") != "Isolated" or s.get("invert") for s in stages[:3]):
        problems.append("another split behavior")
    if model["type"] not in ("Unigram", "BPE"):
        problems.append(f"a {model['type']} model")
    elif model["type"] == "Unigram" and (model.get("byte_fallback") or model.get("unk_id") is not None):
        problems.append("an unknown token or byte fallback")
    elif model["type"] == "BPE" and (model.get("dropout") or model.get("continuing_subword_prefix")
                                     or model.get("end_of_word_suffix") or model.get("ignore_merges")
                                     or model.get("unk_token") or model.get("byte_fallback")):
        problems.append("BPE options tokenmill does not use")
    if not all(t.get("special") for t in config.get("added_tokens") or []):
        problems.append("added tokens matched in text")
    if problems:
        raise UnsupportedTokenizer(f"not a tokenmill tokenizer ({', '.join(problems)})")
    return superwords


class Encoder:
    """encode_batch(texts) → (int32 ids of every text, one after another; int64 offsets [len + 1])."""

    def __init__(self, tokenizer_json: str, config: dict | None = None):
        """`config`: the file as the library reads it, json.loads(Tokenizer.from_str(tokenizer_json).to_str()),
        where the caller has it (the numbers the Rust model uses)."""
        if config is None:
            config = json.loads(Tokenizer.from_str(tokenizer_json).to_str())
        self.superwords = _check_shape(config)
        model = config["model"]
        self.unigram = unigram_trie(model["vocab"]) if model["type"] == "Unigram" else None
        self.bpe = _bpe(model) if model["type"] == "BPE" else None

    def encode_batch(self, texts: "list[str] | pa.StringArray") -> tuple[np.ndarray, np.ndarray]:
        code_points, starts = code_points_of(texts)
        CLASSES.cover(code_points)
        ids = np.empty(4 * len(code_points), np.int32)  # at most one id per UTF-8 byte
        offsets = np.zeros(len(texts) + 1, np.int64)
        if self.unigram is not None:
            m = self.unigram
            document, byte = _encode_unigram(code_points, starts, CLASSES.bits, self.superwords, m.children.keys,
                                             m.children.values, m.token, m.score, m.longest, ids, offsets)
        else:
            m = self.bpe
            document, byte = _encode_bpe(code_points, starts, CLASSES.bits, self.superwords, m.byte_ids,
                                         m.merges.keys, m.merges.values, ids, offsets)
        if document >= 0:
            text = texts[document] if isinstance(texts, list) else texts[document].as_py()
            raise UnencodableText(f"byte 0x{byte:02x} of document {document} of the batch ({text[:60]!r}...) is "
                                  "covered by no piece of the vocabulary, which has no unknown token or byte fallback")
        return ids[:offsets[-1]].copy(), offsets


# --- hashing ------------------------------------------------------------------------------------

@kernel
def _slot(key, size):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h ^ (h >> np.uint64(29))) & np.uint64(size - 1))


@kernel
def _fill(table_keys, table_values, keys, values):
    size = len(table_keys)
    for i in range(len(keys)):
        s = _slot(keys[i], size)
        while table_keys[s] != EMPTY and table_keys[s] != keys[i]:
            s = (s + 1) & (size - 1)
        table_keys[s] = keys[i]
        table_values[s] = values[i]


@kernel
def _get(table_keys, table_values, key):
    """The value of `key`, or -1."""
    size = len(table_keys)
    s = _slot(key, size)
    while True:
        k = table_keys[s]
        if k == key:
            return table_values[s]
        if k == EMPTY:
            return -1
        s = (s + 1) & (size - 1)


@kernel
def _longest(offsets):
    """The longest span offsets[i]..offsets[i + 1]: what per-text scratch buffers are sized for."""
    longest = 0
    for i in range(len(offsets) - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return longest


# --- pre-tokenization -------------------------------------------------------------------------------

@kernel
def _is_crlf(c):
    return c == 13 or c == 10


@kernel
def _contraction(cp, p, b):
    """Length of a contraction ('s 't 're 've 'm 'll 'd, any case; 's also as 'ſ) at p, or 0."""
    if cp[p] != 39 or p + 1 >= b:
        return 0
    c = cp[p + 1] | 32 if cp[p + 1] < 128 else cp[p + 1]
    if c == 115 or c == 116 or c == 109 or c == 100 or c == 0x17F:  # s t m d ſ
        return 2
    if p + 2 < b:
        d = cp[p + 2] | 32 if cp[p + 2] < 128 else cp[p + 2]
        if (c == 114 or c == 118) and d == 101:  # re ve
            return 3
        if c == 108 and d == 108:  # ll
            return 3
    return 0


@kernel
def _llama3_match(cp, bits, p, b):
    """End of the Llama 3 pattern's match at p in the piece [.., b): its alternatives in order."""
    n = _contraction(cp, p, b)
    if n:
        return p + n
    c = bits[cp[p]]
    # [^\r\n\p{L}\p{N}]?\p{L}+
    q = p
    if not c & LETTER and not c & NUMBER and not _is_crlf(cp[p]) and p + 1 < b and bits[cp[p + 1]] & LETTER:
        q = p + 1
    if bits[cp[q]] & LETTER:
        while q < b and bits[cp[q]] & LETTER:
            q += 1
        return q
    # \p{N}{1,3}
    if c & NUMBER:
        q = p
        while q < b and q < p + 3 and bits[cp[q]] & NUMBER:
            q += 1
        return q
    #  ?[^\s\p{L}\p{N}]+[\r\n]*
    q = p + 1 if cp[p] == 32 and p + 1 < b else p
    if not bits[cp[q]] & (SPACE | LETTER | NUMBER):
        while q < b and not bits[cp[q]] & (SPACE | LETTER | NUMBER):
            q += 1
        while q < b and _is_crlf(cp[q]):
            q += 1
        return q
    # \s*[\r\n]+ : up to the last CR or LF of the whitespace run
    end = p
    while end < b and bits[cp[end]] & SPACE:
        end += 1
    last = -1
    for k in range(p, end):
        if _is_crlf(cp[k]):
            last = k
    if last >= 0:
        return last + 1
    # \s+(?!\S), else \s+
    if end < b and end - 1 > p:
        return end - 1
    return max(end, p + 1)  # (every character matched above already; never an empty match)


@kernel
def _line_match(cp, p, b):
    """End of the piece at p for the superword stage 3: a run of CR/LF, or a run of anything else."""
    newline = _is_crlf(cp[p])
    q = p + 1
    while q < b and _is_crlf(cp[q]) == newline:
        q += 1
    return q


@kernel
def _pre_tokens(cp, bits, lo, hi, bounds, lines):
    """Fills bounds with the ends of the pre-tokens of cp[lo:hi] (the first starts at lo); returns
    how many. Stage 1: \\p{N}{1,3} isolated; stage 2 inside each piece: CJK runs isolated; stage 3
    inside each piece: Llama 3's pattern, or with `lines` (superwords) runs of CR/LF isolated."""
    count = 0
    i = lo
    while i < hi:  # stage 1
        j = i
        if bits[cp[i]] & NUMBER:
            while j < hi and j < i + 3 and bits[cp[j]] & NUMBER:
                j += 1
        else:
            while j < hi and not bits[cp[j]] & NUMBER:
                j += 1
        k = i
        while k < j:  # stage 2
            cjk = bits[cp[k]] & CJK
            m = k
            while m < j and (bits[cp[m]] & CJK) == cjk:
                m += 1
            p = k
            while p < m:  # stage 3
                p = _line_match(cp, p, m) if lines else _llama3_match(cp, bits, p, m)
                bounds[count] = p
                count += 1
            k = m
        i = j
    return count


@kernel
def _utf8(cp, lo, hi, out):
    """Writes cp[lo:hi] as UTF-8 into out; returns the bytes written."""
    n = 0
    for i in range(lo, hi):
        n = put_utf8(cp[i], out, n)
    return n


# --- models ------------------------------------------------------------------------------------------

@kernel
def _viterbi(data, length, keys, values, token, score, longest, best, start, piece, ids, n):
    """The Unigram segmentation of data[:length] appended to ids from n; returns the new n, or -1 - r
    when no segmentation exists: no piece starts at byte r, the last one any segmentation reaches."""
    for e in range(length + 1):
        start[e] = -1
    best[0] = 0.0
    for s in range(length):
        if s > 0 and start[s] < 0:
            continue
        node = 0
        for e in range(s, min(length, s + longest)):
            node = _get(keys, values, node << 8 | data[e])
            if node < 0:
                break
            t = token[node]
            if t >= 0:
                candidate = score[node] + best[s]
                if start[e + 1] < 0 or candidate > best[e + 1]:
                    best[e + 1], start[e + 1], piece[e + 1] = candidate, s, t
    if length > 0 and start[length] < 0:
        r = length - 1
        while r > 0 and start[r] < 0:
            r -= 1
        return -1 - r
    first = n
    e = length
    while e > 0:
        ids[n] = piece[e]
        n += 1
        e = start[e]
    ids[first:n] = ids[first:n][::-1].copy()
    return n


@kernel
def _encode_unigram(cp, starts, bits, lines, keys, values, token, score, longest, ids, offsets):
    longest_text = _longest(starts)
    bounds = np.empty(longest_text + 1, np.int64)
    data = np.empty(4 * longest_text + 4, np.uint8)
    best = np.empty(4 * longest_text + 5, np.float64)
    start = np.empty(4 * longest_text + 5, np.int64)
    piece = np.empty(4 * longest_text + 5, np.int32)
    n = 0
    for d in range(len(starts) - 1):
        offsets[d] = n
        lo = starts[d]
        for k in range(_pre_tokens(cp, bits, lo, starts[d + 1], bounds, lines)):
            length = _utf8(cp, lo, bounds[k], data)
            n = _viterbi(data, length, keys, values, token, score, longest, best, start, piece, ids, n)
            if n < 0:
                return d, np.int64(data[-1 - n])
            lo = bounds[k]
    offsets[len(starts) - 1] = n
    return -1, np.int64(0)


@kernel
def _heap_push(heap, size, key, value):
    """A binary min-heap of (key, value) pairs in heap[:size] (column 0 keys, column 1 values)."""
    i = size
    heap[i, 0], heap[i, 1] = key, value
    while i > 0:
        parent = (i - 1) // 2
        if heap[parent, 0] <= heap[i, 0]:
            break
        heap[parent, 0], heap[i, 0] = heap[i, 0], heap[parent, 0]
        heap[parent, 1], heap[i, 1] = heap[i, 1], heap[parent, 1]
        i = parent
    return size + 1


@kernel
def _heap_pop(heap, size):
    """Removes the smallest pair to heap[size - 1] (read it there); returns the new size."""
    size -= 1
    heap[0, 0], heap[size, 0] = heap[size, 0], heap[0, 0]
    heap[0, 1], heap[size, 1] = heap[size, 1], heap[0, 1]
    i = 0
    while True:
        left, smallest = 2 * i + 1, i
        if left < size and heap[left, 0] < heap[smallest, 0]:
            smallest = left
        if left + 1 < size and heap[left + 1, 0] < heap[smallest, 0]:
            smallest = left + 1
        if smallest == i:
            return size
        heap[smallest, 0], heap[i, 0] = heap[i, 0], heap[smallest, 0]
        heap[smallest, 1], heap[i, 1] = heap[i, 1], heap[smallest, 1]
        i = smallest


@kernel
def _push_pair(heap, size, symbols, at, right, keys, values):
    """Queues the merge of the pair (at, right), if there is one: key rank << 32 | position."""
    found = _get(keys, values, np.int64(symbols[at]) << 32 | symbols[right])
    if found < 0:
        return size
    return _heap_push(heap, size, (found >> 32) << 32 | at, found & 0xFFFFFFFF)


@kernel
def _merge(symbols, length, keys, values, prev, next_, heap):
    """BPE as tokenizers applies it (Word::merge_all): the lowest-ranked pair first, the leftmost of
    equal ones; a queued pair that changed meanwhile is skipped. Compacts the symbols left into
    symbols[:n] and returns n."""
    size = 0
    for i in range(length):
        prev[i], next_[i] = i - 1, i + 1 if i + 1 < length else -1
    for i in range(length - 1):
        size = _push_pair(heap, size, symbols, i, i + 1, keys, values)
    while size > 0:
        size = _heap_pop(heap, size)
        at, new_id = heap[size, 0] & 0xFFFFFFFF, heap[size, 1]
        right = next_[at]
        if prev[at] == -2 or right < 0:  # merged into its left neighbour, or last
            continue
        found = _get(keys, values, np.int64(symbols[at]) << 32 | symbols[right])
        if found < 0 or (found & 0xFFFFFFFF) != new_id:  # the pair changed since it was queued
            continue
        symbols[at] = new_id
        next_[at] = next_[right]
        prev[right] = -2
        if next_[at] >= 0:
            prev[next_[at]] = at
        if prev[at] >= 0:
            size = _push_pair(heap, size, symbols, prev[at], at, keys, values)
        if next_[at] >= 0:
            size = _push_pair(heap, size, symbols, at, next_[at], keys, values)
    n, i = 0, 0
    while i >= 0:
        symbols[n] = symbols[i]
        n += 1
        i = next_[i]
    return n


@kernel
def _encode_bpe(cp, starts, bits, lines, byte_ids, keys, values, ids, offsets):
    longest_text = _longest(starts)
    bounds = np.empty(longest_text + 1, np.int64)
    data = np.empty(4 * longest_text + 4, np.uint8)
    symbols = np.empty(4 * longest_text + 4, np.int64)
    prev = np.empty(4 * longest_text + 4, np.int64)
    next_ = np.empty(4 * longest_text + 4, np.int64)
    heap = np.empty((12 * longest_text + 12, 2), np.int64)  # the first pairs, then two per merge
    n = 0
    for d in range(len(starts) - 1):
        offsets[d] = n
        lo = starts[d]
        for k in range(_pre_tokens(cp, bits, lo, starts[d + 1], bounds, lines)):
            length = _utf8(cp, lo, bounds[k], data)
            for i in range(length):
                symbols[i] = byte_ids[data[i]]
                if symbols[i] < 0:
                    return d, np.int64(data[i])
            length = _merge(symbols, length, keys, values, prev, next_, heap)
            ids[n:n + length] = symbols[:length]
            n += length
            lo = bounds[k]
    offsets[len(starts) - 1] = n
    return -1, np.int64(0)
