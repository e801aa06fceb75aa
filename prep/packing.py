"""Packing tokenized documents into rows of at most `seq_len` tokens, by best-fit decreasing.

As in "Fewer Truncations Improve Language Modeling" (Ding et al., 2024): a document that fits in a
row is never cut. A longer one is cut into full rows of `seq_len` tokens, in order, and its
remainder is packed like any short document. Rows are filled best-fit decreasing (each piece, longest
first, goes into the open row with the least room that still holds it), then padded only up to the
next multiple of 128, so padding is at most 127 tokens per row and zero for full rows.

Each row carries `cu_seqlens`: the cumulative boundaries of the pieces in it, from 0 to the number
of real tokens (FlashAttention's varlen convention). Everything here is deterministic: the same
documents in the same order give the same rows.
"""

import bisect
from dataclasses import dataclass

import numpy as np

from schemas.index import MAX_SEQ_LEN
from schemas.shards import ROW_MULTIPLE, round_up


@dataclass(frozen=True)
class PackConfig:
    seq_len: int = 4096  # the longest row; a multiple of ROW_MULTIPLE

    def __post_init__(self):
        # past MAX_SEQ_LEN the job did all its work and wrote an index the loader refuses
        if not 0 < self.seq_len <= MAX_SEQ_LEN or self.seq_len % ROW_MULTIPLE:
            raise ValueError(f"seq_len must be a positive multiple of {ROW_MULTIPLE} up to {MAX_SEQ_LEN:,}, got "
                             f"{self.seq_len}")


@dataclass(frozen=True)
class Piece:
    doc: int  # index of the document in the input
    start: int  # first token of the piece inside the document
    length: int


def cut(lengths: list[int], seq_len: int) -> tuple[list[list[Piece]], list[Piece]]:
    """(rows made of one full-length piece each, the remainders and short documents to pack)."""
    full, rest = [], []
    for doc, length in enumerate(lengths):
        whole = length // seq_len
        full.extend([Piece(doc, i * seq_len, seq_len)] for i in range(whole))
        if length % seq_len:
            rest.append(Piece(doc, whole * seq_len, length % seq_len))
    return full, rest


def best_fit_decreasing(pieces: list[Piece], capacity: int) -> list[list[Piece]]:
    """Bins of pieces; each piece, longest first (ties: input order), into the fullest bin it fits."""
    bins: list[list[Piece]] = []
    room: list[int] = []
    # open bins by remaining room: room value -> stack of bin indices; `rooms` holds the values present
    by_room: dict[int, list[int]] = {}
    rooms: list[int] = []
    for piece in sorted(pieces, key=lambda p: -p.length):  # sorted() is stable: ties keep input order
        at = bisect.bisect_left(rooms, piece.length)
        if at < len(rooms):
            left = rooms[at]
            index = by_room[left].pop()
            if not by_room[left]:
                del by_room[left]
                rooms.pop(at)
        else:
            index = len(bins)
            bins.append([])
            room.append(capacity)
        bins[index].append(piece)
        room[index] -= piece.length
        if room[index] > 0:
            if room[index] not in by_room:
                by_room[room[index]] = []
                bisect.insort(rooms, room[index])
            by_room[room[index]].append(index)
    return bins


def pack(lengths: list[int], cfg: PackConfig) -> list[list[Piece]]:
    """Rows as lists of pieces: full rows of long documents first (in document order), then packed rows."""
    full, rest = cut(lengths, cfg.seq_len)
    return full + best_fit_decreasing(rest, cfg.seq_len)


def materialize(rows: list[list[Piece]], docs: list[np.ndarray],
                pad_id: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(tokens, cu_seqlens) of each row: uint32 tokens padded with pad_id, int32 boundaries."""
    tokens, boundaries = [], []
    for row in rows:
        real = sum(p.length for p in row)
        out = np.full(round_up(real), pad_id, dtype=np.uint32)
        cu = np.zeros(len(row) + 1, dtype=np.int32)
        at = 0
        for i, piece in enumerate(row):
            out[at:at + piece.length] = docs[piece.doc][piece.start:piece.start + piece.length]
            at += piece.length
            cu[i + 1] = at
        tokens.append(out)
        boundaries.append(cu)
    return tokens, boundaries
