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

import numpy as np

from loaders.shm_arena import Field, SharedArena, State

try:  # built by `pip install -e .` from loaders/_collate.c
    from loaders import _collate
except ImportError:  # installed without a C compiler: ShardSet collates with gather and finish instead
    _collate = None
KERNEL_BUILT = _collate is not None
BAD_ROW, STALE, CHANGED = -1, -2, -3  # collate_runs' answers that are not a count (loaders/_collate.c)
_ENTRY_FIELDS = (int(Field.STATE), int(Field.GENERATION), int(State.READY))  # plain ints: enums cost ~1 µs a call

IGNORE = -100  # PyTorch's cross-entropy ignore_index


def row_problem(tokens: np.ndarray, cu: np.ndarray, seq_len: int, vocab_size: int) -> str | None:
    """Why a packed row cannot be a batch row, or None: what every batch path refuses (the kernel too)."""
    if len(tokens) > seq_len or len(cu) < 2:
        return f"a row of {len(tokens)} tokens and {len(cu)} boundaries does not fit seq_len {seq_len}"
    if cu[0] != 0 or np.any(np.diff(cu) <= 0) or cu[-1] > len(tokens):
        return f"boundaries {cu[:8].tolist()}... do not rise from 0 to at most the row's {len(tokens)} tokens"
    if len(tokens) and tokens.max() >= vocab_size:
        return f"token id {int(tokens.max())} is not below the vocabulary size {vocab_size}"
    return None


def collate(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int, pad_id: int,
            vocab_size: int) -> dict[str, np.ndarray]:
    return finish(*gather(rows, seq_len, pad_id, vocab_size))


def gather(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int, pad_id: int,
           vocab_size: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Copies what a batch needs out of the rows (which may be shared memory that is about to be
    reused): (input_ids, real tokens per row, piece boundaries over the flattened batch). ValueError
    for a row that row_problem refuses."""
    batch = len(rows)
    input_ids = np.empty((batch, seq_len), dtype=np.int64)
    real = np.empty(batch, dtype=np.int64)
    boundaries = [np.zeros(1, dtype=np.int64)]
    for b, (tokens, cu) in enumerate(rows):
        if problem := row_problem(tokens, cu, seq_len, vocab_size):
            raise ValueError(problem)
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


def collate_runs(arena: SharedArena, runs: np.ndarray, generations: np.ndarray, shards: np.ndarray, rows: np.ndarray,
                 seq_len: int, pad_id: int, vocab_size: int, out: dict[str, np.ndarray], first_row: int = 0,
                 pieces: int = 1) -> int:
    """Rows of a batch in one compiled pass (loaders/_collate.c, the GIL released), straight out of L2,
    into `out` (empty_batch) from row `first_row` on, their boundaries after the first `pieces` of out's
    cu_seqlens. Row i is row `rows[i]` of shard `shards[i]` (int64 arrays), whose run in the arena is
    `runs[shard]` (CachedShard.run) as looked up at `generations[shard]`. Returns the boundaries written
    so far, else STALE (a shard's entry is not the one looked up: look it up again), CHANGED (it changed
    while its rows were copied: read again) or BAD_ROW (a row that does not fit its run, or one row_problem
    refuses)."""
    return _collate.collate_runs(arena.memory, arena.table, runs, generations, shards, rows, seq_len, pad_id,
                                 vocab_size, out["input_ids"], out["labels"], out["position_ids"], out["cu_seqlens"],
                                 first_row, pieces, *_ENTRY_FIELDS)


def collate_into(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int, pad_id: int, vocab_size: int,
                 out: dict[str, np.ndarray], first_row: int = 0, pieces: int = 1) -> int:
    """collate_runs' result from rows given as (tokens, cu_seqlens) views, by gather and finish: the
    first batch after a start reads its rows this way, and every batch where the kernel is not built."""
    batch = collate(rows, seq_len, pad_id, vocab_size)
    end = first_row + len(rows)
    for key in ("input_ids", "labels", "position_ids"):
        out[key][first_row:end] = batch[key]
    boundaries = batch["cu_seqlens"][1:] + first_row * seq_len
    out["cu_seqlens"][pieces:pieces + len(boundaries)] = boundaries
    return pieces + len(boundaries)


def batch_of(out: dict[str, np.ndarray], pieces: int) -> dict[str, np.ndarray]:
    """The finished batch: out with cu_seqlens cut to its `pieces` boundaries."""
    return {**out, "cu_seqlens": out["cu_seqlens"][:pieces].copy()}
