"""The hybrid tokenizer's second stage: a Unigram language model over a BPE seed vocabulary, fit by
hard EM and pruned in rounds to the target size.

The data is a table of (pre-token, count) — pre-tokens spelled in byte symbols — so the E-step is a
sum over chunks of that table: locally here, one Spark task per partition in jobs/train_tokenizer.py.
Each E-step segments every pre-token with the current model by Viterbi (compiled, with the
`tokenizers` Unigram model's rules: prep/tokenizer/lattice.py) and counts the pieces; the M-step
turns counts into log-probabilities. Pruning drops the pieces whose removal costs the least: a
piece's count times the score it loses when each use is replaced by the best segmentation of the
piece without it (SentencePiece's criterion).

Measured refinements (benchmarks/experiment_hybrid_tokenizer.py, README):
  - a length penalty: every piece's score is its log-probability minus `length_penalty`, a prior
    for fewer tokens. Training and encoding both use it, so the model is still a plain Unigram;
  - required characters: the characters that cover `character_coverage` of the text (SentencePiece's
    default 99.95%) are never pruned. Without them the pruning drops single Chinese characters whose
    training uses sit inside longer pieces, and held-out Chinese falls back to bytes.
"""

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer, models

from prep.tokenizer.base import finish, new_tokenizer, special_tokens
from prep.tokenizer.lattice import best_without_themselves, expected_counts, trie
from prep.tokenizer.pretokenize import byte_alphabet, pre_tokenizer, to_symbols

log = logging.getLogger(__name__)
SMOOTHING = 0.1  # added to every count in the M-step, so an unused piece has a finite score
SPECIAL_SCORE = -1e6  # specials sit in the model only to fix their ids; Viterbi never picks them
MAX_LENGTH_PENALTY = 1_000.0  # a special's text in 16 pieces of -1,020 each stays far above SPECIAL_SCORE
MAX_SHRINK = 0.99  # a pruning round keeps at most this share (from twice the target: 69 rounds)


@dataclass(frozen=True)
class UnigramConfig:
    seed_factor: float = 2.0  # the BPE seed has this many times the target's pieces
    shrink: float = 0.9  # each pruning round keeps this share (0.75 in SentencePiece; 0.9 measured better)
    em_iterations: int = 2  # E+M steps before each pruning round and after the last
    length_penalty: float = 10.0  # subtracted from every log-probability: a prior for fewer tokens
    character_coverage: float = 0.9995  # share of the text's characters that must stay whole pieces
    max_required_share: float = 0.1  # never let required characters take more of the target than this

    def __post_init__(self):
        # shrink 1 (or 75, meant as a percent) pruned nothing: the training ran E-steps for ever; 0.9999 pruned
        # a piece a round (1,026 rounds for 1,024 pieces, each two passes over the corpus)
        if not (self.seed_factor >= 1 and 0 < self.shrink <= MAX_SHRINK and self.em_iterations >= 1
                and 0 < self.character_coverage <= 1 and 0 <= self.max_required_share <= 1):
            raise ValueError(f"unigram: seed_factor must be at least 1, shrink in (0, {MAX_SHRINK}], em_iterations at "
                             f"least 1, character_coverage in (0, 1] and max_required_share in [0, 1], got "
                             f"{self.seed_factor}, {self.shrink}, {self.em_iterations}, {self.character_coverage}, "
                             f"{self.max_required_share}")
        # a piece costs its log-probability (some -20) less the penalty; past MAX_LENGTH_PENALTY per piece, the
        # special tokens' SPECIAL_SCORE became cheaper than spelling their text in pieces (a penalty of 1e6 put
        # the eos id inside a document quoting "<|eos|>")
        if not 0 <= self.length_penalty <= MAX_LENGTH_PENALTY:
            raise ValueError(f"unigram: length_penalty must be from 0 to {MAX_LENGTH_PENALTY}, got "
                             f"{self.length_penalty}")


# (piece frequencies, total tokens) of one E-step over the whole table, for given pieces and scores
EStep = Callable[[list[str], np.ndarray], tuple[np.ndarray, float]]


def count_pre_tokens(texts: Iterable[str], superwords: bool = False) -> Counter:
    splitter = pre_tokenizer(superwords)
    counts = Counter()
    for text in texts:
        counts.update(piece for piece, _ in splitter.pre_tokenize_str(text))
    return counts


def count_characters(texts: Iterable[str]) -> Counter:
    counts = Counter()
    for text in texts:
        counts.update(text)
    return counts


def required_characters(char_counts: dict[str, int], coverage: float, limit: int) -> list[str]:
    """The most frequent characters covering `coverage` of all, at most `limit`, in byte symbols."""
    total, covered, required = sum(char_counts.values()), 0, []
    for char, count in sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered >= coverage * total or len(required) >= limit:
            break
        covered += count
        required.append(to_symbols(char))
    return required


def unigram_model(pieces: list[str], scores) -> models.Unigram:
    return models.Unigram([(p, float(s)) for p, s in zip(pieces, scores)], None, False)


def m_step(freq: np.ndarray, cfg: UnigramConfig) -> np.ndarray:
    logp = np.log((freq + SMOOTHING) / (freq.sum() + SMOOTHING * len(freq)))
    return logp - cfg.length_penalty


def removal_loss(pieces: list[str], scores: np.ndarray, freq: np.ndarray, protected: set[str]) -> np.ndarray:
    """What the corpus score loses if each piece goes; unused pieces lose nothing, protected ones all."""
    is_protected = np.fromiter((p in protected for p in pieces), bool, len(pieces))
    best = best_without_themselves(trie(pieces, scores), pieces, (freq > 0) & ~is_protected)
    loss = np.where(freq > 0, freq * (scores - best), 0.0)
    loss[is_protected] = np.inf
    return loss


def fit(seed: list[str], required: list[str], target: int, e_step: EStep, cfg: UnigramConfig,
        superwords: list[str] = (), superword_share: float = 0.0) -> tuple[list[str], np.ndarray, list[dict]]:
    """Pieces and scores of the fitted model, at most `target` of them; and the rounds' history.
    `superwords` join the seed, and every pruning round keeps at most `superword_share` of what it
    keeps in them: the final vocabulary holds at most that share of superwords."""
    protected = set(byte_alphabet()) | set(required)
    pieces = list(dict.fromkeys([*byte_alphabet(), *required, *seed, *superwords]))  # every byte first
    only_superwords = set(superwords) - set(seed) - protected
    is_superword = np.fromiter((p in only_superwords for p in pieces), bool, len(pieces))
    scores = np.zeros(len(pieces))
    history = []
    while True:
        for _ in range(cfg.em_iterations):
            freq, tokens = e_step(pieces, scores)
            scores = m_step(freq, cfg)
        history.append({"pieces": len(pieces), "superwords": int(is_superword.sum()), "tokens": tokens})
        log.info("unigram: round %d, %d pieces (%d superwords; target %d), %.0f tokens on the training table",
                 len(history), len(pieces), is_superword.sum(), target, tokens)
        if len(pieces) <= target:
            return pieces, scores, history
        size = max(target, int(len(pieces) * cfg.shrink))
        ranked = np.argsort(-removal_loss(pieces, scores, freq, protected), kind="stable")
        quota = int(superword_share * size)
        ranked = ranked[~is_superword[ranked] | (np.cumsum(is_superword[ranked]) <= quota)]
        keep = np.sort(ranked[:size])
        pieces, scores, is_superword = [pieces[i] for i in keep], scores[keep], is_superword[keep]


def unigram_tokenizer(pieces: list[str], scores, vocab_size: int, superwords: bool = False) -> Tokenizer:
    """The final `tokenizers` Unigram with tokenmill's pre-tokenizer, byte-level decoder and specials."""
    specials = special_tokens()
    model = unigram_model(specials + pieces, [SPECIAL_SCORE] * len(specials) + list(scores))
    return finish(new_tokenizer(model, superwords), vocab_size)


def local_e_step(counts: Counter) -> EStep:
    """The E-step over an in-memory table (tests, experiments); the job runs it on Spark."""
    words, weights = list(counts), np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    return lambda pieces, scores: expected_counts(trie(pieces, scores), words, weights)
