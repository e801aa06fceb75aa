"""Strings that break careless tokenizers."""

import random

from prep.tokenizer.base import BOS, EOS


def fuzz_strings(seed=0):
    rng = random.Random(seed)
    planes = [(0x20, 0x7E), (0xA0, 0x2FF), (0x300, 0x36F), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF),
              (0x10000, 0x1FFFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F), (0xF0000, 0xFFFFD), (0x0, 0x1F)]
    for _ in range(200):
        lo, hi = rng.choice(planes)
        yield "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 60)))
    yield "👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumbs"  # emoji ZWJ and modifier sequences
    yield "e\u0301\u0302\u0303 combining marks and \u200b zero width"
    yield "\x00\x01\x07\x1b[31m control characters \x7f\x85"
    yield " " * 100_000
    yield "a line of one megabyte " * 45_000
    yield "mixed 中文 English 日本語 한국어 עברית العربية 123456789"
    yield f"text with {BOS} and {EOS} and <|pad|> and <|reserved_3|> spelled out"


# Pieces of text where pre-tokenizers and byte-level models go wrong: case-folded contractions,
# digit groups beside CJK runs and Hangul, CR/LF runs inside spaces, combining marks, astral planes.
ALPHABET = (["'s", "'S", "'ſ", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'m", "'t", "'x", "'"]
            + list("abcXYZ019٣५〇一中文日本語カタカナひらがな・ー한국어éñßİıſﬁ½²㎏ﾊﾞ")
            + [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\x85", "\x0b"]
            + list("!?.,;:-_=+*/\\|@#$%^&()[]{}<>\"`~") + ["...", "—", "«»", "€", "👍🏽", "\u0301", "\u200d", "𠀀",
                                                           "\U000e0041", "\U0010ffff", "<|eos|>", "12345678"])


def hostile_strings(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(count)]
