"""How well a tokenizer compresses held-out text, per kind of text (the tokenizer job's report).

Kinds: "zh" (Chinese/Japanese characters are at least a fifth of the letters), "code" (a high share
of programming punctuation or of indented lines), "en" (English by fastText's language id),
"other". Also the share of the tokens that are superword pieces, and the longest pieces used. Rényi
efficiency (Zouhar et al., 2023, "Tokenization and the Noiseless Channel") is the Rényi entropy
of order 2.5 of the token distribution over log |V|: higher means the vocabulary is used more
evenly, which the paper found to correlate with downstream quality better than compression.
"""

import math
import re

import numpy as np
from tokenizers import Tokenizer

from prep.cjk import HAN_KANA, char_class
from prep.langid import LanguageConfig, identify
from prep.tokenizer.encode import batch_encoder
from prep.tokenizer.pretokenize import piece_bytes
from prep.tokenizer.superwords import is_superword

KINDS = ("en", "zh", "code", "other")
RENYI_ALPHA = 2.5
LONGEST_SHOWN = 10
CJK = re.compile(f"[{char_class(HAN_KANA)}]")
LETTER = re.compile(r"[^\W\d_]")
CODE_PUNCTUATION = re.compile(r"[{}()\[\];=<>_#*&|$\\]")
CODE_LINE = re.compile(r"^(?: {4}|\t)\S.*[:;{}()\[\],]$|^\s*(?:def|class|import|from|return|#include)\b", re.M)
CODE_MIN_PUNCTUATION = 0.06  # of the non-space characters; English prose is about 0.01, Python 0.1
CODE_MIN_LINES = 0.3  # of the non-empty lines
LANGUAGE = LanguageConfig()


def text_kind(text: str) -> str:
    letters = len(LETTER.findall(text[:20_000]))
    if letters and len(CJK.findall(text[:20_000])) >= 0.2 * letters:
        return "zh"
    head = text[:20_000]
    visible = len(head) - head.count(" ") - head.count("\n")
    lines = sum(1 for line in head.splitlines() if line.strip())
    if visible and (len(CODE_PUNCTUATION.findall(head)) >= CODE_MIN_PUNCTUATION * visible
                    or (lines and len(CODE_LINE.findall(head)) >= CODE_MIN_LINES * lines)):
        return "code"
    return "en" if identify(text, LANGUAGE)[0] == "en" else "other"


def renyi_efficiency(token_counts: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA) -> float:
    counts = token_counts[token_counts > 0].astype(np.float64)
    if counts.sum() == 0:
        return 0.0
    p = counts / counts.sum()
    entropy = math.log(float(np.sum(p ** alpha))) / (1 - alpha)
    return entropy / math.log(vocab_size)


def evaluate(tokenizer: Tokenizer, texts_by_kind: dict[str, list[str]]) -> dict:
    """bytes/token and chars/token per kind and overall (corpus-weighted), Rényi efficiency, vocab used."""
    encode = batch_encoder(tokenizer.to_str())
    used = np.zeros(tokenizer.get_vocab_size(), np.int64)
    result, total = {}, {"docs": 0, "bytes": 0, "chars": 0, "tokens": 0}
    for kind in KINDS:
        texts = texts_by_kind.get(kind, [])
        if not texts:
            continue
        ids, _ = encode(texts)
        used += np.bincount(ids, minlength=len(used))
        row = {"docs": len(texts), "bytes": sum(len(t.encode()) for t in texts), "chars": sum(map(len, texts)),
               "tokens": len(ids)}
        for key in total:
            total[key] += row[key]
        result[kind] = _ratios(row)
    result["all"] = _ratios(total)
    result["renyi_efficiency"] = round(renyi_efficiency(used, tokenizer.get_vocab_size()), 4)
    result["vocab_used_share"] = round(int(np.count_nonzero(used)) / tokenizer.get_vocab_size(), 4)
    result.update(_pieces_used(tokenizer, used))
    return result


def _pieces_used(tokenizer: Tokenizer, used: np.ndarray) -> dict:
    """The share of the tokens that are superword pieces (prep/tokenizer/superwords.py), and the
    longest pieces used, as text."""
    ids = np.flatnonzero(used)
    pieces = {int(i): tokenizer.id_to_token(int(i)) for i in ids}
    superword = np.array([is_superword(pieces[int(i)]) for i in ids], bool)
    longest = sorted(ids.tolist(), key=lambda i: (-len(pieces[i]), i))[:LONGEST_SHOWN]
    return {"superword_token_share": round(float(used[ids][superword].sum() / max(used.sum(), 1)), 4),
            "longest_pieces_used": [piece_bytes(pieces[i]).decode("utf-8", errors="replace") for i in longest]}


def _ratios(row: dict) -> dict:
    tokens = max(row["tokens"], 1)
    return {**row, "bytes_per_token": round(row["bytes"] / tokens, 4),
            "chars_per_token": round(row["chars"] / tokens, 4)}


def gain(trained: dict, baseline: dict) -> dict:
    """Relative bytes/token of the trained tokenizer over the baseline, per kind: +0.03 is 3% fewer tokens' worth."""
    return {kind: round(trained[kind]["bytes_per_token"] / baseline[kind]["bytes_per_token"] - 1, 4)
            for kind in trained if isinstance(trained[kind], dict) and baseline.get(kind, {}).get("bytes_per_token")}


def table(report: dict) -> str:
    """The report's comparison as Markdown, for the console and the README."""
    trained, baseline = report["held_out"]["trained"], report["held_out"].get("bpe_same_size")
    lines = ["| text | docs | MB | bytes/token | chars/token |" + (" BPE bytes/token | gain |" if baseline else ""),
             "|---|---|---|---|---|" + ("---|---|" if baseline else "")]
    for kind in [*KINDS, "all"]:
        if kind not in trained:
            continue
        row = trained[kind]
        line = (f"| {kind} | {row['docs']} | {row['bytes'] / 1e6:.2f} | {row['bytes_per_token']:.3f} | "
                f"{row['chars_per_token']:.3f} |")
        if baseline:
            change = report["held_out"]["gain"].get(kind)
            line += f" {baseline[kind]['bytes_per_token']:.3f} | {'' if change is None else f'{change:+.1%}'} |"
        lines.append(line)
    return "\n".join(lines)
