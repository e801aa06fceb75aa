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


def test_the_size_a_signature_gives_counts_a_repeated_line_once():
    """estimated_containment's set sizes (prep/dedup/lsh.py): the distinct shingles, a repeated line once, as
    datasketch counts them; within a sixth here (128 permutations: about 9% a document)."""
    from prep.dedup.lsh import estimated_size
    from prep.dedup.minhash import minhash_batch
    from tests.prep.clean_reference import sample_texts

    texts = [t for t in sample_texts() if 200 < len(t.split()) < 3000][:40]
    repeated = [t + ("\n" + t.splitlines()[0]) * 50 for t in texts]
    found = minhash_batch(texts + repeated, MinHashConfig())
    distinct = np.array([len(set(shingles(t, 5))) for t in texts])
    sizes = estimated_size(found.signatures)
    assert np.median(np.abs(sizes[:40] / distinct - 1)) < 1 / 6
    assert np.median(sizes[40:] / sizes[:40]) < 1.2 and np.median(found.shingles[40:] / found.shingles[:40]) > 1.2
    for text, row in zip(texts[:5], found.signatures[:5]):
        reference = MinHash(num_perm=128, seed=1, hashfunc=shingle_hash32, scheme="affine32")
        reference.update_batch([s.encode("utf-8") for s in shingles(text, 5)])
        assert estimated_size(row[None])[0] == pytest.approx(reference.count())


def test_estimated_containment_finds_what_is_left_of_a_document_inside_it():
    """What the DCLM recipe's copy check reads (spark_stages/train_classifier.py): the first third of a real
    manual's lines lies inside the whole (a Jaccard similarity of about a quarter); the whole does not lie
    inside the third, nor another manual inside either."""
    from prep.dedup.lsh import estimated_containment
    from prep.dedup.minhash import minhash_batch
    from tests.prep.clean_reference import sample_texts

    manuals = sorted((t for t in sample_texts() if len(t.split()) > 600 and t.isascii()), key=len)[:2]
    lines = manuals[0].splitlines()
    third = "\n".join(lines[:len(lines) // 3])
    sigs = minhash_batch([third, manuals[0], manuals[1]], MinHashConfig()).signatures
    jaccard = (sigs[0] == sigs[1]).mean()
    inside = estimated_containment(sigs[[0, 1, 2, 0]], sigs[[1, 0, 0, 2]])
    assert jaccard < 0.4 and inside[0] > 0.8
    assert inside[1] < 0.4 and inside[2] < 0.1 and inside[3] < 0.1


def test_an_arrow_column_gives_what_python_strings_give():
    """The dedup job hands its Arrow text column over as it is: the same signatures, normalized texts
    and character lengths."""
    import pyarrow as pa

    from prep.dedup.minhash import minhash_batch

    cfg = MinHashConfig()
    listed, arrow = minhash_batch(TEXTS, cfg), minhash_batch(pa.array(TEXTS), cfg)
    assert np.array_equal(listed.signatures, arrow.signatures) and listed.normalized == arrow.normalized
    assert arrow.lengths.tolist() == [len(t) for t in TEXTS]


def test_permutations_and_ngrams_past_the_bounds_are_refused():
    """Found by the review of 2026-12-07: num_perm 1e12 or ngram 1e12 failed every task with a MemoryError (a
    traceback), 65,536 permutations took 65 s to band on the driver."""
    from prep.dedup.minhash import MAX_NGRAM, MAX_NUM_PERM

    assert MinHashConfig(num_perm=MAX_NUM_PERM, ngram=MAX_NGRAM).num_perm == MAX_NUM_PERM
    for bad in ({"num_perm": MAX_NUM_PERM + 1}, {"ngram": MAX_NGRAM + 1}, {"num_perm": 10**12}):
        with pytest.raises(ValueError, match="num_perm must be from 2"):
            MinHashConfig(**bad)
