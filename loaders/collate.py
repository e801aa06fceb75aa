"""Turning packed rows into a training batch (NumPy; the loader makes tensors of these).

For rows of `tokens` (length a multiple of 128, at most seq_len) with their `cu_seqlens`:
  input_ids     int64 [B, seq_len]  the tokens, padded with pad_id to seq_len
  labels        int64 [B, seq_len]  the next token inside the same document piece, else -100: no loss
                                    across a document boundary, at the end of a piece, or on padding
  position_ids  int64 [B, seq_len]  restart at 0 at each document piece (padding counts on from 0 too)
  cu_seqlens    int32 [n + 1]       boundaries over the flattened batch (FlashAttention varlen): every
                                    piece, and each row's padding as a piece of its own; ends at B * seq_len
"""

import numpy as np

IGNORE = -100  # PyTorch's cross-entropy ignore_index


def collate(rows: list[tuple[np.ndarray, np.ndarray]], seq_len: int, pad_id: int) -> dict[str, np.ndarray]:
    batch = len(rows)
    input_ids = np.full((batch, seq_len), pad_id, dtype=np.int64)
    labels = np.full((batch, seq_len), IGNORE, dtype=np.int64)
    position_ids = np.zeros((batch, seq_len), dtype=np.int64)
    boundaries = [np.zeros(1, dtype=np.int64)]
    for b, (tokens, cu) in enumerate(rows):
        if len(tokens) > seq_len:
            raise ValueError(f"a row of {len(tokens)} tokens does not fit seq_len {seq_len}")
        cu = np.asarray(cu, dtype=np.int64)
        real = int(cu[-1])
        input_ids[b, :len(tokens)] = tokens
        starts, lengths = cu[:-1], np.diff(cu)
        # position inside its piece, for every real token
        position_ids[b, :real] = np.arange(real) - np.repeat(starts, lengths)
        position_ids[b, real:] = np.arange(seq_len - real)
        labels[b, :real - 1] = input_ids[b, 1:real]
        labels[b, cu[1:] - 1] = IGNORE  # the last token of each piece has no next token in it
        row_bounds = cu[1:] if real == seq_len else np.append(cu[1:], seq_len)
        boundaries.append(b * seq_len + row_bounds)
    return {"input_ids": input_ids, "labels": labels, "position_ids": position_ids,
            "cu_seqlens": np.concatenate(boundaries).astype(np.int32)}
