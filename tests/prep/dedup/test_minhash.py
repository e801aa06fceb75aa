import numpy as np
import pytest
from datasketch import MinHash

from prep.dedup.minhash import MinHashConfig, shingle_hash32, signatures
from prep.dedup.shingles import shingles
from tests.prep.quality.test_rules import CHINESE, ENGLISH

TEXTS = [ENGLISH, CHINESE, "mixed 中文 and English text 混合 here", "short", "", ENGLISH * 30, "𠀀𠀁 rare han",
         "ﬁ ½ İ ﾊﾞ ㎏ x²", "\t\n  ", "x"]


@pytest.mark.parametrize("cfg", [MinHashConfig(), MinHashConfig(num_perm=64, ngram=3, seed=7)])
def test_signature_equals_datasketch_minhash_of_the_same_shingles_and_seed(cfg):
    """The scheme (affine32) and the hash function are pinned, so datasketch reproduces every value."""
    ours = signatures(TEXTS, cfg)
    for text, signature in zip(TEXTS, ours):
        reference = MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=shingle_hash32, scheme="affine32")
        reference.update_batch([s.encode("utf-8") for s in shingles(text, cfg.ngram)])
        assert np.array_equal(reference.hashvalues, signature)


def test_signature_does_not_depend_on_the_batch():
    cfg = MinHashConfig()
    alone = np.vstack([signatures([t], cfg) for t in TEXTS])
    assert np.array_equal(alone, signatures(TEXTS, cfg))


def test_estimated_similarity_tracks_jaccard():
    cfg = MinHashConfig()
    base = ENGLISH.split()
    edited = " ".join(base[:-8] + ["completely", "different", "ending", "here", "now", "for", "this", "test"])
    a, b, c = signatures([ENGLISH, edited, CHINESE], cfg)
    assert (a == b).mean() > 0.6 and (a == c).mean() < 0.1


def test_an_arrow_column_gives_what_python_strings_give():
    """The dedup job hands its Arrow text column over as it is: the same signatures, normalized texts
    and character lengths."""
    import pyarrow as pa

    from prep.dedup.minhash import minhash_batch

    cfg = MinHashConfig()
    listed, arrow = minhash_batch(TEXTS, cfg), minhash_batch(pa.array(TEXTS), cfg)
    assert np.array_equal(listed.signatures, arrow.signatures) and listed.normalized == arrow.normalized
    assert arrow.lengths.tolist() == [len(t) for t in TEXTS]
