"""Turning packed rows into a training batch (NumPy; the loader makes tensors of these).

For rows of `tokens` (length a multiple of 128, at most seq_len) with their `cu_seqlens`:
  input_ids     int64 [B, seq_len]  the tokens, padded with pad_id to seq_len
  labels        int64 [B, seq_len]  the next token inside the same document piece, else -100: no loss
                                    across a document boundary, at the end of a piece, or on padding
  position_ids  int64 [B, seq_len]  restart at 0 at each document piece (padding counts on from 0 too)
  cu_seqlens    int32 [n + 1]       boundaries over the flattened batch (FlashAttention varlen): every
                                    piece, and each row's padding as a piece of its own; ends at B * seq_len
"""

import functools

import numba
import numpy as np

from loaders.shm_arena import ArenaWords

IGNORE = -100  # PyTorch's cross-entropy ignore_index


def collate(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int, pad_id: int) -> dict[str, np.ndarray]:
    return finish(*gather(rows, seq_len, pad_id))


def gather(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int,
           pad_id: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Copies what a batch needs out of the rows (which may be shared memory that is about to be
    reused): (input_ids, real tokens per row, piece boundaries over the flattened batch)."""
    batch = len(rows)
    input_ids = np.empty((batch, seq_len), dtype=np.int64)
    real = np.empty(batch, dtype=np.int64)
    boundaries = [np.zeros(1, dtype=np.int64)]
    for b, (tokens, cu) in enumerate(rows):
        if len(tokens) > seq_len or len(cu) < 2:
            raise ValueError(f"a row of {len(tokens)} tokens and {len(cu)} boundaries does not fit seq_len {seq_len}")
        input_ids[b, :len(tokens)] = tokens
        input_ids[b, len(tokens):] = pad_id
        real[b] = cu[-1]
        boundaries.append(b * seq_len + cu[1:])
        if real[b] < seq_len:  # the row's padding is a piece of its own
            boundaries.append(np.array([(b + 1) * seq_len]))
    return input_ids, real, boundaries


def finish(input_ids: np.ndarray, real: np.ndarray, boundaries: list[np.ndarray]) -> dict[str, np.ndarray]:
    batch, seq_len = input_ids.shape
    cu_seqlens = np.concatenate(boundaries)
    lengths = np.diff(cu_seqlens)
    if cu_seqlens[-1] != batch * seq_len or np.any(lengths <= 0):
        raise ValueError(f"row boundaries {cu_seqlens[:8].tolist()}... do not rise to {batch * seq_len}")
    # Over the flattened batch every token belongs to one piece: the label is the next token,
    # except at each piece's last token and on padding.
    labels = np.empty((batch, seq_len), dtype=np.int64)
    flat = labels.reshape(-1)
    flat[:-1] = input_ids.reshape(-1)[1:]
    flat[cu_seqlens[1:] - 1] = IGNORE
    for b in np.nonzero(real < seq_len)[0]:
        labels[b, real[b]:] = IGNORE
    position_ids = np.subtract(_arange(batch * seq_len), np.repeat(cu_seqlens[:-1], lengths)).reshape(batch, seq_len)
    return {"input_ids": input_ids, "labels": labels, "position_ids": position_ids,
            "cu_seqlens": cu_seqlens.astype(np.int32)}


@functools.lru_cache(maxsize=4)
def _arange(n: int) -> np.ndarray:
    """0..n-1, made once per batch shape (read only)."""
    values = np.arange(n, dtype=np.int64)
    values.flags.writeable = False
    return values


def empty_batch(batch: int, seq_len: int) -> dict[str, np.ndarray]:
    """The arrays a batch is collated into, row block by row block (collate_runs' `out`): cu_seqlens
    has room for the most pieces a batch can have and starts at 0."""
    out = {"input_ids": np.empty((batch, seq_len), np.int64), "labels": np.empty((batch, seq_len), np.int64),
           "position_ids": np.empty((batch, seq_len), np.int64),
           "cu_seqlens": np.empty(batch * seq_len + 1, np.int32), "sample_index": np.empty(batch, np.int64)}
    out["cu_seqlens"][0] = 0
    return out


def collate_runs(words, runs: np.ndarray, rows: np.ndarray, seq_len: int, pad_id: int, out: dict[str, np.ndarray],
                 first_row: int = 0, pieces: int = 1) -> int:
    """Rows of a batch in one compiled pass, straight out of L2, into `out` (empty_batch) from row
    `first_row` on, their boundaries after the first `pieces` of out's cu_seqlens: `runs` gives, per
    row, the (base, rows, tokens, cu) of its shard's run in the arena (`words`: SharedArena.words) and
    `rows` the row in that shard. Returns the boundaries written so far, or -1 when an offset read
    points outside its run (the shard was evicted and rewritten meanwhile; the caller checks and reads
    again)."""
    return _collate_kernel(words.int64, words.uint32, words.int32, runs, rows, seq_len, pad_id, out["input_ids"],
                           out["labels"], out["position_ids"], out["cu_seqlens"], first_row, pieces)


@functools.cache
def load_kernel() -> None:
    """Loads the compiled pass now (from numba's cache, else compiling it) with the argument types of
    every real call: a fresh process's first load takes ~0.3 s, better spent while L3 decompresses
    the first shuffle block than after it, on the way to the second batch."""
    words = ArenaWords(np.zeros(2, np.int64), np.zeros(4, np.uint32), np.zeros(4, np.int32))
    collate_runs(words, np.zeros((0, 4), np.int64), np.zeros(0, np.int64), 1, 0, empty_batch(1, 1))


def batch_of(out: dict[str, np.ndarray], pieces: int) -> dict[str, np.ndarray]:
    """The finished batch: out with cu_seqlens cut to its `pieces` boundaries."""
    return {**out, "cu_seqlens": out["cu_seqlens"][:pieces].copy()}


@numba.njit(cache=True, nogil=True)
def _collate_kernel(words64, words32u, words32i, runs, rows, seq_len, pad_id, input_ids, labels, position_ids,
                    cu_seqlens, first_row, count):
    """gather + finish for every row: tokens widened to int64, padding, labels, positions and the
    boundaries over the flattened batch. Every index is checked against its run first: a run being
    rewritten under us gives -1, never a read outside it."""
    for i_row in range(len(rows)):
        b = first_row + i_row
        base, nrows, ntokens, ncu = runs[i_row, 0], runs[i_row, 1], runs[i_row, 2], runs[i_row, 3]
        r = rows[i_row]
        token_offsets = base // 8  # int64[nrows + 1], then cu_offsets int64[nrows + 1]
        cu_offsets = token_offsets + nrows + 1
        tokens_at = (base + 16 * (nrows + 1)) // 4  # uint32[ntokens], then cu_seqlens int32[ncu]
        cu_at = tokens_at + ntokens
        if r < 0 or r >= nrows:
            return -1
        t0, t1 = words64[token_offsets + r], words64[token_offsets + r + 1]
        c0, c1 = words64[cu_offsets + r], words64[cu_offsets + r + 1]
        if not (0 <= t0 <= t1 <= ntokens and t1 - t0 <= seq_len and 0 <= c0 and c0 + 2 <= c1 <= ncu):
            return -1
        if words32i[cu_at + c0] != 0:
            return -1
        length = t1 - t0
        # Whole-row loops over 1-D views, each simple enough for LLVM to vectorize: widen the tokens,
        # shift them for the labels, count positions up; then the few boundary fixes.
        src = words32u[tokens_at + t0:tokens_at + t1]
        ids, lab, pos = input_ids[b], labels[b], position_ids[b]
        for i in range(length):
            ids[i] = src[i]
        for i in range(length, seq_len):
            ids[i] = pad_id
        for i in range(length - 1):
            lab[i] = src[i + 1]
        start = 0
        for k in range(c0 + 1, c1):  # the row's document pieces
            end = words32i[cu_at + k]
            if end <= start or end > length:
                return -1
            for i in range(start, end):
                pos[i] = i - start
            lab[end - 1] = IGNORE  # no label across a document boundary
            cu_seqlens[count] = b * seq_len + end
            count += 1
            start = end
        if start < seq_len:  # the padding, a piece of its own
            for i in range(start, seq_len):
                lab[i] = IGNORE
                pos[i] = i - start
            cu_seqlens[count] = b * seq_len + seq_len
            count += 1
    return count
