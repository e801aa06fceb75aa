"""Benchmark accuracy during training: multiple-choice items scored by the log-likelihood of each choice,
as lm-evaluation-harness scores its multiple_choice tasks.

`eval.benchmarks: {NAME: PATH}` (trainer/mc_items.py reads MMLU's, C-Eval's and CMMLU's layouts). Every
`eval.every` steps, and after the last, each benchmark's fixed subset (the first `eval.items` items by a
hash of each: the same items in the same order every time) is scored. A choice's log-likelihood is the
sum of log p(token) over its tokens after the context, the pair encoded as lm-eval encodes it (the
context and context + continuation encoded whole, the continuation being the tokens past the context's,
<|bos|> first as in the shards). The item is right when the choice of highest log-likelihood is the answer:
- `acc`: by the total log-likelihood (lm-eval's acc);
- `acc_norm`: by the log-likelihood per character of the choice (lm-eval's acc_norm);
- `acc_per_token`: by the log-likelihood per token of the choice;
each with its standard error over items (lm-eval's: the sample standard deviation over the square root
of the count). `style: cloze` asks "Question: ...\\nAnswer:" and scores each choice's text (the cloze form
small models are measured with early in training); `letters` lists the choices as "A. ..." and scores the
letters (lm-eval's mmlu). Rank r scores sequences r, r + world, ...; every rank runs the same number of
forward passes (FSDP gathers on each).
"""

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
import torch.distributed as dist

from loaders.collate import IGNORE
from prep.ingest.inputs import name_problem
from prep.tokenizer.base import from_json
from trainer.mc_items import LETTERS, Item

STYLES = ("cloze", "letters")
ROW_MULTIPLE = 128  # rows padded to a multiple of this (flex_attention's block size)


@dataclass(frozen=True)
class BenchmarksConfig:
    """Benchmark accuracy during training."""
    # NAME: PATH of multiple-choice items (files, folders or globs; also --benchmark NAME=PATH)
    benchmarks: dict[str, str] = field(default_factory=dict)
    every: int = 100  # steps between evaluations (0: none), and one after the last step
    items: int = 500  # items per benchmark: the first by a hash of each, the same ones in the same order
    batch_rows: int = 16  # sequences (an item's choice each) per forward pass on each rank
    style: Literal["cloze", "letters"] = "cloze"  # cloze: each choice's text after "Answer:"; letters: MMLU's
    tokenizer: str = ""  # the shards' tokenizer (default: OUT/tokenizer/ beside OUT/shards, or SHARDS/)

    def __post_init__(self):
        if self.every < 0 or self.items < 1 or self.batch_rows < 1 or self.style not in STYLES:
            raise ValueError(f"need every >= 0, items >= 1, batch_rows >= 1 and style in {', '.join(STYLES)}")
        for name in self.benchmarks:  # as --benchmark NAME=PATH holds them (a YAML file's had passed unchecked)
            if problem := name_problem(str(name), reserved=()):
                raise ValueError(f"benchmark {name!r}: {problem}")


def prompt(item: Item, style: str) -> tuple[str, list[str]]:
    """(the context, each choice's continuation without the space before it)."""
    if style == "letters":
        listed = "".join(f"\n{LETTERS[i]}. {choice.strip()}" for i, choice in enumerate(item.choices))
        return f"{item.question.strip()}{listed}\nAnswer:", list(LETTERS[:len(item.choices)])
    return f"Question: {item.question.strip()}\nAnswer:", [choice.strip() for choice in item.choices]


# Characters of a context kept per token a sequence keeps (its last seq_len + 1), at the least: the encoding
# of a long context no longer grows with it (26 choices of 19,000 characters in the `letters` style encoded
# 494,000 characters for each choice, twice; 500 such items: half an hour on every rank before the first
# step). A token of text covers a few characters (4 on average for the 128K tokenizer).
CONTEXT_CHARS_PER_TOKEN = 32


def pre_token_starts(tokenizer_json: str) -> Callable[[str, int], int | None]:
    """For a tokenizer file's JSON: where its first pre-token of a text at or after a place begins (None past
    the last, or for a tokenizer with a normalizer, whose pre-tokens' places are of other text). The model
    encodes each pre-token apart, so a text cut there gives every token after the cut as the whole text
    does. The tokenizer is built at the first call: most contexts are never cut."""
    built = []

    def start_from(text: str, at: int) -> int | None:
        if not built:
            tokenizer = from_json(tokenizer_json)
            built.append(tokenizer.pre_tokenizer if tokenizer.normalizer is None else None)
        if built[0] is None:
            return None
        starts = [start for _, (start, _) in built[0].pre_tokenize_str(text)]
        found = bisect.bisect_left(starts, at)
        return starts[found] if found < len(starts) else None

    return start_from


def encode_pairs(encode, bos: int, pairs: list[tuple[str, str]], seq_len: int,
                 start_from: Callable[[str, int], int | None] | None = None) -> list[tuple[np.ndarray, int]]:
    """Each (context, continuation) as (tokens, how many of them are the continuation's), lm-eval's way:
    the continuation's tokens are those of context + continuation past the context's own; at most
    seq_len + 1 tokens, the context cut from the left. With `start_from` (pre_token_starts), a context's
    text is cut first, at the first pre-token CONTEXT_CHARS_PER_TOKEN characters per kept token from its
    end, and encoded whole again when what is left gives fewer tokens than are kept: the same tokens as
    lm-eval's (tested)."""
    keep = CONTEXT_CHARS_PER_TOKEN * (seq_len + 1)
    cut = {}
    for context in dict.fromkeys(c for c, _ in pairs):  # (an item's choices share their context)
        at = start_from(context, len(context) - keep) if start_from and len(context) > keep else None
        cut[context] = context[at:] if at else context
    found = _encoded(encode, bos, [(cut[c], continuation) for c, continuation in pairs], seq_len)
    short = [i for i, (c, _) in enumerate(pairs) if cut[c] is not c and found[i][2] <= seq_len]
    for i, again in zip(short, _encoded(encode, bos, [pairs[i] for i in short], seq_len)):
        found[i] = again
    return [(tokens, n) for tokens, n, _ in found]


def _encoded(encode, bos: int, pairs: list[tuple[str, str]], seq_len: int) -> list[tuple[np.ndarray, int, int]]:
    """encode_pairs of the texts as given, each distinct context encoded once; with each pair's tokens before
    the cut to seq_len + 1 (<|bos|> not counted)."""
    contexts = list(dict.fromkeys(c for c, _ in pairs))
    ids, offsets = encode(contexts + [c + " " + continuation for c, continuation in pairs])
    at = {context: k for k, context in enumerate(contexts)}
    found = []
    for i, (context, _) in enumerate(pairs):
        k = at[context]
        context_length = int(offsets[k + 1] - offsets[k])
        whole = ids[offsets[len(contexts) + i]:offsets[len(contexts) + i + 1]]
        tokens = np.concatenate([[bos], whole]).astype(np.int64)[-(seq_len + 1):]
        found.append((tokens, min(len(whole) - context_length, len(tokens) - 1), len(whole)))
    return found


def accuracy(lls: list[np.ndarray], answers: list[int], lengths: list[np.ndarray]) -> tuple[float, float]:
    """The share of items whose choice of highest ll / length is the answer, and its standard error."""
    right = np.array([int(np.argmax(ll / length)) == answer for ll, answer, length in zip(lls, answers, lengths)],
                     np.float64)
    n = len(right)
    error = float(np.std(right, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return float(right.mean()), error


class Benchmarks:
    def __init__(self, cfg: BenchmarksConfig, items: dict[str, list[Item]], tokenizer_file, seq_len: int,
                 rank: int, world: int, device: torch.device):
        self.cfg, self.rank, self.world, self.device, self.seq_len = cfg, rank, world, device, seq_len
        self.pad = tokenizer_file.pad_id
        self.items = items
        self.sequences, self.owners = [], []  # every (benchmark, item, choice)'s tokens, and which they are
        encode = tokenizer_file.encoder()
        start_from = pre_token_starts(tokenizer_file.json)
        for name, chosen in items.items():
            for i, item in enumerate(chosen):
                context, continuations = prompt(item, cfg.style)
                pairs = encode_pairs(encode, tokenizer_file.bos_id, [(context, c) for c in continuations], seq_len,
                                     start_from)
                self.sequences += pairs
                self.owners += [(name, i, len(c)) for c in continuations]

    def evaluate(self, model) -> dict[str, dict]:
        """Every rank together: each benchmark's accuracies with their standard errors."""
        scores = self._scores(model)
        figures = {}
        for name, chosen in self.items.items():
            mine = [k for k, (owner, _, _) in enumerate(self.owners) if owner == name]
            lls, tokens, chars, at = [], [], [], 0
            for item in chosen:
                rows = mine[at:at + len(item.choices)]
                at += len(item.choices)
                lls.append(scores[rows, 0])
                tokens.append(np.maximum(scores[rows, 1], 1))
                chars.append(np.array([max(self.owners[k][2], 1) for k in rows], np.float64))
            answers = [item.answer for item in chosen]
            result = {"items": len(chosen), "chance": float(np.mean([1 / len(i.choices) for i in chosen]))}
            for measure, lengths in (("acc", [np.ones_like(t) for t in tokens]), ("acc_norm", chars),
                                     ("acc_per_token", tokens)):
                result[measure], result[f"{measure}_se"] = accuracy(lls, answers, lengths)
            figures[name] = result
        return figures

    def _scores(self, model) -> np.ndarray:
        """[sequences, 2]: each sequence's log-likelihood of its continuation and its tokens, from every rank."""
        mine = list(range(self.rank, len(self.sequences), self.world))
        passes = math.ceil(math.ceil(len(self.sequences) / self.world) / self.cfg.batch_rows)
        found = []
        with torch.no_grad():
            for p in range(passes):  # a rank out of sequences runs a pass on one it then drops: FSDP's gathers
                chunk = mine[p * self.cfg.batch_rows:(p + 1) * self.cfg.batch_rows]
                batch = self._batch([self.sequences[k] for k in chunk or [0]])
                nats = model(*batch[:3], labels=batch[3]).double().cpu().numpy()
                found += [(k, -nats[j], self.sequences[k][1]) for j, k in enumerate(chunk)]
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, found)
        scores = np.zeros((len(self.sequences), 2))
        for k, ll, tokens in (entry for part in everyone for entry in part):
            scores[k] = (ll, tokens)
        return scores

    def _batch(self, sequences: list[tuple[np.ndarray, int]]) -> tuple[torch.Tensor, ...]:
        """input_ids, position_ids, cu_seqlens (a document per row) and labels (the continuations' only)."""
        longest = max(len(tokens) - 1 for tokens, _ in sequences)
        width = min(self.seq_len, -(-longest // ROW_MULTIPLE) * ROW_MULTIPLE)
        inputs = np.full((len(sequences), width), self.pad, np.int64)
        labels = np.full((len(sequences), width), IGNORE, np.int64)
        for row, (tokens, continuation) in enumerate(sequences):
            n = len(tokens) - 1
            inputs[row, :n] = tokens[:-1]
            labels[row, n - continuation:n] = tokens[n - continuation + 1:]
        positions = np.broadcast_to(np.arange(width), inputs.shape)
        cu_seqlens = np.arange(len(sequences) + 1, dtype=np.int32) * width
        return tuple(torch.as_tensor(np.ascontiguousarray(a), device=self.device)
                     for a in (inputs, positions, cu_seqlens, labels))
