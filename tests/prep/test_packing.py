"""Packing: every token lands exactly once, order inside a document is kept, boundaries are right,
rows are multiples of 128 and at most seq_len, and best-fit decreasing wastes little."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.packing import PackConfig, Piece, best_fit_decreasing, materialize, pack

PAD = 7


def documents(lengths):
    """Token values encode (document, position) so any misplaced token is visible."""
    return [np.arange(n, dtype=np.uint32) + 1_000_000 * (d + 1) for d, n in enumerate(lengths)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 3000), min_size=1, max_size=80), st.sampled_from([128, 256, 1024]))
def test_every_token_once_in_order_with_right_boundaries(lengths, seq_len):
    docs = documents(lengths)
    rows = pack(lengths, PackConfig(seq_len))
    tokens, cu = materialize(rows, docs, PAD)
    seen = {d: [] for d in range(len(docs))}
    for row, toks, bounds in zip(rows, tokens, cu):
        assert len(toks) % 128 == 0 and 0 < len(toks) <= seq_len
        assert bounds[0] == 0 and list(np.diff(bounds)) == [p.length for p in row]
        assert np.all(toks[bounds[-1]:] == PAD) and len(toks) - bounds[-1] < 128
        for piece, lo, hi in zip(row, bounds[:-1], bounds[1:]):
            segment = toks[lo:hi]
            assert np.all(segment // 1_000_000 == piece.doc + 1)  # one document per segment
            seen[piece.doc].append((piece.start, segment))
    for d, doc in enumerate(docs):
        # rows in order give each document's pieces in order; together they are the document
        starts = [s for s, _ in seen[d]]
        assert starts == sorted(starts)
        assert np.array_equal(np.concatenate([seg for _, seg in seen[d]]), doc)


def test_a_long_document_is_cut_into_full_rows_without_added_tokens():
    rows = pack([300, 40], PackConfig(128))
    assert [[(p.doc, p.start, p.length) for p in row] for row in rows] == [
        [(0, 0, 128)], [(0, 128, 128)], [(0, 256, 44), (1, 0, 40)]]


def test_best_fit_puts_a_piece_in_the_fullest_bin_that_holds_it():
    pieces = [Piece(0, 0, 60), Piece(1, 0, 50), Piece(2, 0, 45), Piece(3, 0, 40), Piece(4, 0, 10)]
    bins = best_fit_decreasing(pieces, 100)
    # 60 opens a bin (room 40), 50 another (room 50); 45 fits only the second (room 5); 40 fills the first
    # exactly; 10 fits nowhere and opens a third
    assert [[p.doc for p in b] for b in bins] == [[0, 3], [1, 2], [4]]


def test_padding_waste_is_small_for_many_documents():
    rng = np.random.default_rng(0)
    lengths = rng.lognormal(6, 1.2, 20_000).astype(int) + 2
    rows = pack(lengths.tolist(), PackConfig(4096))
    real = int(lengths.sum())
    padded = sum(-(-sum(p.length for p in row) // 128) * 128 for row in rows)
    assert (padded - real) / padded < 0.005


def test_seq_len_must_be_a_multiple_of_128():
    with pytest.raises(ValueError, match="multiple of 128"):
        PackConfig(1000)
