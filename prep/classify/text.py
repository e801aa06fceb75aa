"""A document as a classifier's n-gram model reads it: one line of space-separated tokens, the form fastText's
supervised models take (tokenmill trains and scores on it; fastText's own predict gives the same scores on it).

Lowercased; a word is a run of letters and digits, each digit (of any script) read as 0 (a number's length
says more than its value); a Han, kana or Hangul character is a word of its own, so that word n-grams over Chinese and
Japanese are character n-grams; each other non-space character is a token; a line break is "↵" and a
paragraph break "¶" (page chrome and listings are made of short lines). At most `max_tokens` tokens.

Also the pieces prep/classify/stats.py counts: paragraphs, sentences, a sentence's content words.
"""

import re

from prep.cjk import HAN_KANA, HANGUL, char_class

TEXT_FORM = "⟨tokenmill:text-1⟩"  # a model's vocabulary holds this word when it reads this form
CJK = char_class(HAN_KANA + HANGUL)
HAN = re.compile(f"[{char_class(HAN_KANA)}]")
TOKEN = re.compile(f"[{CJK}]|[^\\W_{CJK}]+|\\n[^\\S\\n]*\\n\\s*|\\n|[^\\w\\s]|_")
DIGIT = re.compile(r"\d")
PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")
# after a full stop and white space (not inside 1.2.3 or sources.list), or after a CJK one
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
CONTENT_WORD = re.compile(f"[^\\W\\d_{CJK}]{{4,}}")
# a sentence that opens with one of these refers back to what came before it
REFERS_BACK = re.compile(r"(?:it|its|he|his|she|her|they|their|this|these|that|those|however|therefore|thus|also|"
                         r"but|and|so|then|moreover|furthermore|in addition|for example|for instance|as a result|"
                         r"instead|otherwise|such|both|another|the other|here|there)\b|"
                         r"这|那|他|她|它|但|而|因此|所以|此外|另外|同时|然而|不过|于是|其")
STOP_WORDS = frozenset(
    "that this with from have were what when which their there about would these other into more some could "
    "them than then only also been such most over will your just like each many much must very where while does "
    "used using make made between through because before after under same should need both they here".split())


def model_line(text: str, max_tokens: int) -> str:
    """The document as one line of at most `max_tokens` tokens (no "\\n" in it)."""
    tokens = []
    for match in TOKEN.finditer(text.lower()):
        token = match.group()
        tokens.append(token if token[0] != "\n" else "¶" if token.count("\n") > 1 else "↵")
        if len(tokens) >= max_tokens:
            break
    return DIGIT.sub("0", " ".join(tokens))


def content_words(sentence: str) -> set[str]:
    """A lowercased sentence's content words: words of four letters or more but the commonest, cut to five
    letters (their forms one), and pairs of Han or kana characters."""
    words = {w[:5] for w in CONTENT_WORD.findall(sentence) if w not in STOP_WORDS}
    han = HAN.findall(sentence)
    return words | {a + b for a, b in zip(han, han[1:])}
