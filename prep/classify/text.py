"""A document as a classifier reads it: one line of space-separated tokens, the form fastText's supervised
models take (tokenmill trains and scores on it; fastText's own predict gives the same scores on it).

Lowercased; a word is a run of letters and digits, each digit read as 0 (a number's length says more than
its value); a Han, kana or Hangul character is a word of its own, so that word n-grams over Chinese and
Japanese are character n-grams; each other non-space character is a token; a line break is "↵" and a
paragraph break "¶" (page chrome and listings are made of short lines). At most `max_tokens` tokens.

Then what word n-grams cannot see, as tokens of their own after the text (three times over: a few among
a thousand would weigh little in the mean of the rows): how each sentence holds to the ones before it,
by the content words (of four letters or more, cut to five; Han character pairs) it shares with the two
before it (⟨a0⟩ to ⟨a3⟩) and the share of them the text had already used (⟨p0⟩ to ⟨p3⟩), and the first
word of each paragraph (⟨q:however⟩; of the text, ⟨d:it⟩). Prose keeps to its subject; word salad made
of the same vocabulary, and prose shuffled together from other texts, do not: without these, fastText's
word bigrams tell shuffled prose from prose no better than chance (docs/classifiers.md).
"""

import re

from prep.cjk import HAN_KANA, HANGUL, char_class

TEXT_FORM = "⟨tokenmill:text-1⟩"  # a model's vocabulary holds this word when it reads this form
CJK = char_class(HAN_KANA + HANGUL)
HAN = re.compile(f"[{char_class(HAN_KANA)}]")
TOKEN = re.compile(f"[{CJK}]|[^\\W_{CJK}]+|\\n[^\\S\\n]*\\n\\s*|\\n|[^\\w\\s]|_")
DIGITS = str.maketrans("0123456789", "0000000000")
PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
CONTENT_WORD = re.compile(f"[^\\W\\d_{CJK}]{{4,}}")
FIRST_WORD = re.compile(f"[{char_class(HAN_KANA)}]{{1,2}}|[^\\W\\d_]+")
FEATURE_COPIES = 3
STOP_WORDS = frozenset(
    "that this with from have were what when which their there about would these other into more some could "
    "them than then only also been such most over will your just like each many much must very where while does "
    "used using make made between through because before after under same should need both they here".split())


def model_line(text: str, max_tokens: int) -> str:
    """The document as one line of at most `max_tokens` tokens of its text, then its coherence tokens."""
    lowered = text.lower()
    tokens = []
    for match in TOKEN.finditer(lowered):
        token = match.group()
        tokens.append(token if token[0] != "\n" else "¶" if token.count("\n") > 1 else "↵")
        if len(tokens) >= max_tokens:
            break
    features = " ".join(coherence_tokens(lowered))
    return " ".join(tokens).translate(DIGITS) + (" " + " ".join([features] * FEATURE_COPIES) if features else "")


def coherence_tokens(lowered: str) -> list[str]:
    """The ⟨a⟩ and ⟨p⟩ tokens of each sentence after the first, the ⟨q⟩ (⟨d⟩) token of each paragraph."""
    out, seen, before, last = [], set(), set(), set()
    for k, paragraph in enumerate(p for p in PARAGRAPH.split(lowered) if p.strip()):
        if first := FIRST_WORD.search(paragraph):
            out.append(f"⟨{'d' if k == 0 else 'q'}:{first.group()}⟩")
        for sentence in SENTENCE_END.split(paragraph):
            if not sentence.strip():
                continue
            words = _content(sentence)
            if seen:
                shared = len(words & seen) / max(1, len(words))
                out.append(f"⟨a{min(3, len(words & (last | before)))}⟩")
                out.append(f"⟨p{0 if not shared else 1 if shared < 0.25 else 2 if shared < 0.5 else 3}⟩")
            seen |= words
            before, last = last, words
    return out


def _content(sentence: str) -> set[str]:
    words = {w[:5] for w in CONTENT_WORD.findall(sentence) if w not in STOP_WORDS}
    han = HAN.findall(sentence)
    return words | {a + b for a, b in zip(han, han[1:])}
