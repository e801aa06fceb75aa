"""Batches from packed rows: labels stop at document boundaries and padding, positions restart."""

import numpy as np
import pytest

from loaders.collate import IGNORE, collate

PAD = 2


def test_labels_positions_and_boundaries():
    # row 0: pieces of 3 and 2 tokens, then padding to 8; row 1: one piece filling the row
    rows = [(np.array([10, 11, 12, 20, 21, PAD, PAD, PAD], np.uint32), np.array([0, 3, 5], np.int32)),
            (np.arange(30, 38, dtype=np.uint32), np.array([0, 8], np.int32))]
    batch = collate(rows, 8, PAD)
    assert batch["input_ids"].dtype == np.int64 and batch["input_ids"][0].tolist() == [10, 11, 12, 20, 21, 2, 2, 2]
    assert batch["labels"][0].tolist() == [11, 12, IGNORE, 21, IGNORE, IGNORE, IGNORE, IGNORE]
    assert batch["labels"][1].tolist() == list(range(31, 38)) + [IGNORE]
    assert batch["position_ids"][0].tolist() == [0, 1, 2, 0, 1, 0, 1, 2]
    assert batch["position_ids"][1].tolist() == list(range(8))
    assert batch["cu_seqlens"].dtype == np.int32 and batch["cu_seqlens"].tolist() == [0, 3, 5, 8, 16]


def test_short_rows_are_padded_to_seq_len_and_long_ones_refused():
    batch = collate([(np.array([5] * 4, np.uint32), np.array([0, 4], np.int32))], 6, PAD)
    assert batch["input_ids"].tolist() == [[5, 5, 5, 5, 2, 2]] and batch["cu_seqlens"].tolist() == [0, 4, 6]
    with pytest.raises(ValueError, match="does not fit"):
        collate([(np.zeros(9, np.uint32), np.array([0, 9], np.int32))], 8, PAD)
