"""What a bag of word n-grams cannot see in a document, as numbers: its layout, how its sentences hold
together, how much it repeats itself, what it is made of. A classifier's second stage (prep/classify/mlp.py)
reads them beside the n-gram model's score.

Word salad drawn from a text's own vocabulary and prose shuffled together from other texts have the n-grams
of prose (fastText with word bigrams tells them from it at ROC AUC 0.89 and 0.49 on the benchmark's
validation part) and not its coherence: a sentence of prose shares content words with the ones before it.
Listings, templates and spam repeat themselves in ways prose does not. A document's own sentences shuffled
keep every word and n-gram; what changes is what a sentence's place says: a parenthesis or a quotation that
spans two sentences is left open in one paragraph and closed in another, the lowercase word after an
abbreviation's full stop ("e.g. the") follows a sentence's end, and a sentence that opens with a word
referring back ("this", "however", "这") is as likely to open a paragraph as to follow a sentence of it; and
the document's order scores no better than shuffles of its sentences (prep/classify/order.py).
Each number but the last is a pass of a few regular expressions over the text; the last, which compares the
document with shuffles of its sentences, costs about as much as all the others together.
"""

import math
import re

import numpy as np

from prep.classify.order import order_against_shuffles
from prep.classify.text import HAN, PARAGRAPH, REFERS_BACK, SENTENCE_END, content_words

WORD = re.compile(r"[^\W\d_]+|\d+")
FUNCTION_WORDS = frozenset(
    "the of and to a in is that for it as with on be by this are or from at an not can you which".split()
) | frozenset("的了是在和有也就都而及与着或一")
PUNCTUATION = re.compile(r"[^\w\s]|_")  # neither str.isalnum nor str.isspace: \w is isalnum and "_"
SENTENCE_MARKS = frozenset(".!?。！？:;")
PAIRED = {")": "(", "）": "（", "”": "“", "」": "「", "》": "《", "]": "[", "』": "『"}  # closing: opening
PAIR_MARK = re.compile("[" + re.escape("".join(PAIRED) + "".join(PAIRED.values()) + '"') + "]")
# a sentence's end, then a lowercase word, after a word of three letters or more (_lowercase_after_a_sentence):
# a sentence split at an abbreviation's full stop, its two halves apart
LOWER_AFTER_END = re.compile(r"[.!?]\s+[a-z]")
WORD_BEFORE = re.compile(r"\w{3,}$")
ABBREVIATIONS = frozenset("etc approx inc ltd mrs vol eds fig nos".split())
NAMES = ("log_chars", "log_paragraphs", "log_lines", "log_line_chars", "lines_ending_a_sentence", "log_sentences",
         "log_sentence_words", "sentence_length_spread", "sentences_sharing_with_the_last",
         "content_seen_before", "repeated_sentences", "repeated_trigrams", "distinct_words", "digits", "punctuation",
         "capitals", "han", "mean_word_chars", "function_words", "short_lines", "unbalanced_paragraphs",
         "lowercase_after_a_sentence", "referring_back_inside_not_first", "order_against_shuffles")
MAX_CHARS = 20_000  # read from a document's start: the numbers settle long before


def document_stats(texts: list[str]) -> np.ndarray:
    """float32 [texts, len(NAMES)]."""
    return np.array([_stats(text[:MAX_CHARS]) for text in texts], np.float32).reshape(len(texts), len(NAMES))


def _stats(text: str) -> list[float]:
    lowered = text.lower()
    paragraphs = [p for p in PARAGRAPH.split(lowered) if p.strip()]
    lines = [line for line in text.split("\n") if line.strip()]
    split = [[s for s in SENTENCE_END.split(p) if s.strip()] for p in paragraphs]
    sentences = [s for p in split for s in p]
    han = len(HAN.findall(text))
    chinese = han >= 0.3 * max(1, len(text))
    words = WORD.findall(lowered)
    tokens = list(re.sub(r"\s", "", lowered)) if chinese else words
    lengths = np.array([len(s) if chinese else len(s.split()) for s in sentences] or [0], np.float64)
    contents = [content_words(s) for s in sentences]
    seen, before = set(), []
    for words_of in contents:
        if seen:
            before.append(len(words_of & seen) / max(1, len(words_of)))
        seen |= words_of
    adjacent = [bool(contents[i] & contents[i - 1]) for i in range(1, len(contents))]
    trigrams = [" ".join(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
    chars = max(1, len(text))
    return [math.log1p(len(text)), math.log1p(len(paragraphs)), math.log1p(len(lines)),
            math.log1p(sum(len(line) for line in lines) / max(1, len(lines))),
            sum(line.rstrip()[-1:] in SENTENCE_MARKS for line in lines) / max(1, len(lines)),
            math.log1p(len(sentences)), math.log1p(lengths.mean()), float(lengths.std() / (lengths.mean() + 1e-9)),
            float(np.mean(adjacent)) if adjacent else 0.5, float(np.mean(before)) if before else 0.5,
            1 - len({" ".join(s.split()) for s in sentences}) / max(1, len(sentences)),
            1 - len(set(trigrams)) / max(1, len(trigrams)), len(set(tokens[:1000])) / max(1, len(tokens[:1000])),
            sum(map(str.isdigit, text)) / chars, len(PUNCTUATION.findall(text)) / chars,
            sum(map(str.isupper, text)) / chars, han / chars,
            sum(len(w) for w in words) / max(1, len(words)),
            sum(t in FUNCTION_WORDS for t in tokens) / max(1, len(tokens)),
            sum(len(line) < 30 for line in lines) / max(1, len(lines)),
            sum(map(_unbalanced, paragraphs)) / max(1, len(paragraphs)),
            _lowercase_after_a_sentence(text) * 1000 / chars,
            _referring_back(split), order_against_shuffles(split, contents)]


def _lowercase_after_a_sentence(text: str) -> int:
    """How often a word of three letters or more, not an abbreviation, ends a sentence and a lowercase word
    follows."""
    count = 0
    for found in LOWER_AFTER_END.finditer(text):
        word = WORD_BEFORE.search(text, max(0, found.start() - 40), found.start())
        count += word is not None and word.group().lower() not in ABBREVIATIONS
    return count


def _unbalanced(paragraph: str) -> bool:
    """Whether a paragraph leaves a parenthesis, bracket or quotation open, or closes one it did not open."""
    open_marks, straight = [], 0
    for mark in PAIR_MARK.findall(paragraph):
        if mark == '"':
            straight += 1
        elif mark in PAIRED:
            if not open_marks or open_marks.pop() != PAIRED[mark]:
                return True
        else:
            open_marks.append(mark)
    return bool(open_marks) or straight % 2 == 1


def _referring_back(split: list[list[str]]) -> float:
    """The share of sentences inside paragraphs (not their first) that open with a word referring back, less
    that share of the paragraphs' first sentences (of paragraphs of two sentences or more): about 0 for shuffled
    sentences, which open a paragraph as often as they follow one."""
    first, inside = [], []
    for sentences in split:
        if len(sentences) > 1:
            refers = [REFERS_BACK.match(s.lstrip()) is not None for s in sentences]
            first.append(refers[0])
            inside += refers[1:]
    return float(np.mean(inside) - np.mean(first)) if first else 0.0
