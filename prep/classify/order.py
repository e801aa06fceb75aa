"""How much better a document's order of sentences is than shuffles of its own sentences: one number, a
statistic of prep/classify/stats.py.

A document whose sentences were shuffled keeps every word, every n-gram and its layout; each cue of order
that one document shows is weak (two adjacent sentences share a word or do not), and documents differ in how
much of each they show. So each cue is scored on the document's own order and on `SHUFFLES` random orders of
the same sentences in the same layout (sentences per paragraph), and becomes a z-score: how many standard
deviations the document's order is above the shuffles'. A shuffled document is one of the shuffles, so its
z-scores are about 0 whatever its text; prose sits above. The statistic is the sum of the cues' z-scores.

The cues, each counted over positions of the layout:
- sentences next to each other share content words (weighted by how rare each is in the document), inside a
  paragraph and across the document, and a little at two and three apart;
- sentences of one paragraph share content words;
- a paragraph does not open with a word referring back ("this", "however", "这");
- a sentence ending with a colon ends a paragraph (a list or a block of code follows);
- a paragraph's first sentence is longer than the others (a topic sentence) and list items open paragraphs.

Chosen on another seed's training part of the benchmark's set (tests/labelled/classifier_set.py): alone,
against a document's own sentences shuffled, ROC AUC 0.849 for the sum, against 0.71-0.74 for the best
single cue.
"""

import functools
import re

import numpy as np

from prep.classify.text import REFERS_BACK

SHUFFLES = 60
MAX_SENTENCES = 64  # the first ones: the cost is SHUFFLES x MAX_SENTENCES²
MAX_Z = 10.0  # a cue that never varies under shuffles (all sentences alike) says nothing, not infinity
LIST_ITEM = re.compile(r"(?:[*•·‣–-]|\d{1,2}[.)]|\([a-z0-9]\))\s")


def order_against_shuffles(paragraphs: list[list[str]], contents: list[set[str]]) -> float:
    """`paragraphs`: each paragraph's sentences, lowercased; `contents`: each sentence's content words
    (prep/classify/text.py), in the same order. 0 for fewer than four sentences."""
    read, n = [], 0
    for sentences in paragraphs:
        if sentences and n < MAX_SENTENCES:
            read.append(sentences[:MAX_SENTENCES - n])
            n += len(read[-1])
    sizes = np.array([len(p) for p in read])
    sentences = [s.strip() for p in read for s in p]
    if n < 4:
        return 0.0
    shared = _similarity(contents[:n])
    paragraph = np.repeat(np.arange(len(sizes)), sizes)
    ends = np.cumsum(sizes)
    first, last = np.zeros(n, bool), np.zeros(n, bool)  # positions that open and that end a paragraph
    first[ends - sizes], last[ends - 1] = True, True
    # the cues of pairs of positions, each a weight per pair: next to each other inside a paragraph, next to
    # each other, two and three apart, in one paragraph
    at = np.arange(n)
    pair_weights = np.zeros((n, n, 4))
    pair_weights[at[:-1], at[1:], 0] = ~first[1:]
    pair_weights[at[:-1], at[1:], 1] = 1
    for apart in (2, 3):
        pair_weights[at[:-apart], at[apart:], 2] = 1 / apart
    pair_weights[..., 3] = np.triu(paragraph[:, None] == paragraph[None, :], 1)
    i, j = np.nonzero(pair_weights.any(2))
    # the cues of a sentence at a position: at a paragraph's opening, not referring back; at its end, ending
    # with a colon; at its opening, long, and a list item
    sentence_cues = np.column_stack([
        [-(REFERS_BACK.match(s) is not None) for s in sentences], [s.endswith((":", "：")) for s in sentences],
        [len(s) for s in sentences], [LIST_ITEM.match(s) is not None for s in sentences]]).astype(np.float64)
    positions = np.column_stack([first, last, first, first])
    orders = _orders(n)
    cues = np.column_stack([shared[orders[:, i], orders[:, j]] @ pair_weights[i, j],
                            (sentence_cues[orders] * positions).sum(1)])
    z = (cues[0] - cues[1:].mean(0)) / (cues[1:].std(0) + 1e-6)
    return float(np.clip(z, -MAX_Z, MAX_Z).sum())


@functools.lru_cache(maxsize=MAX_SENTENCES)
def _orders(n: int) -> np.ndarray:
    """[1 + SHUFFLES, n]: the document's order, then the shuffles: the same for every document of n sentences,
    in any process."""
    at = np.arange(n)
    orders = np.vstack([at, np.random.default_rng(n).permuted(np.tile(at, (SHUFFLES, 1)), axis=1)])
    orders.setflags(write=False)
    return orders


def _similarity(contents: list[set[str]]) -> np.ndarray:
    """[n, n]: the cosine of the sentences' content words weighted by log inverse document frequency over
    the sentences, 0 on the diagonal. Only the words of two sentences or more are multiplied out, by numpy's
    own loops: a BLAS product would start threads that spin on the cores of a task beside it. The words are
    taken in sorted order: a set's order depends on the process's string hash seed, and the order of a sum
    changes its last bits."""
    n = len(contents)
    flat = [word for words in contents for word in sorted(words)]
    vocabulary = {word: k for k, word in enumerate(dict.fromkeys(flat))}
    rows = np.repeat(np.arange(n), [len(c) for c in contents])
    columns = np.array([vocabulary[w] for w in flat], np.int64)
    counts = np.bincount(columns, minlength=len(vocabulary))
    weights = (np.log((n + 1) / np.maximum(counts, 1)) + 0.1)[columns]
    norms = np.sqrt(np.bincount(rows, weights=weights ** 2, minlength=n))
    shared_words = counts[columns] > 1
    compact = np.unique(columns[shared_words], return_inverse=True)[1]
    words = np.zeros((n, int(compact.max(initial=-1)) + 1))
    words[rows[shared_words], compact] = weights[shared_words]
    norms = np.where(norms > 0, norms, 1)
    shared = np.einsum("iw,jw->ij", words, words) / np.outer(norms, norms)
    np.fill_diagonal(shared, 0)
    return shared
