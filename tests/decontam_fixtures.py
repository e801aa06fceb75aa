"""Benchmark items and documents of the embedded sample with items planted in them, the ways
contamination happens: verbatim, re-wrapped to short lines, case and punctuation changed, a 60%
contiguous part, one word in eight edited; and near misses (a 10-word run, scattered words) that must
not be flagged. Words are the units decontamination matches: for Chinese, characters."""

import random
import re

from tests.shard_fixtures import sample_texts

FOUND = ("verbatim", "rewrapped", "case_punctuation", "part_60", "edit_1_in_8")
NEAR_MISSES = ("run_10", "scattered")
CJK_CHAR = re.compile(r"[\u3400-\u9fff]")


def paragraphs(files, low: int, high: int, chinese: bool = False) -> list[str]:
    """Paragraphs of the sample's files of low to high words (characters for Chinese), in order, unique."""
    found = []
    for text in sample_texts(files):
        for p in re.split(r"\n\s*\n", text):
            p = " ".join(p.split())
            size = len(CJK_CHAR.findall(p)) if chinese else len(p.split())
            if low <= size <= high and p not in found:
                found.append(p)
    return found


def english_items(count: int | None = None) -> list[str]:
    return paragraphs(["debian-faq.en"], 20, 80)[:count]


def chinese_items(count: int | None = None) -> list[str]:
    return [p for p in paragraphs(["debian-faq.zh"], 25, 120, chinese=True) if len(CJK_CHAR.findall(p)) > 0.6 * len(p)
            ][:count]


def hosts(chinese: bool = False, count: int | None = None) -> list[str]:
    """Long documents (3,000 characters or more; Chinese ones mostly in Chinese) of the handbook, to plant items in."""
    texts = sample_texts(["debian-handbook.zh" if chinese else "debian-handbook.en"])
    return [t for t in texts if len(t) >= 3000 and (not chinese or len(CJK_CHAR.findall(t)) > 0.2 * len(t))][:count]


def _words(item: str, chinese: bool) -> list[str]:
    return list(item) if chinese else item.split()


def _join(words: list[str], chinese: bool) -> str:
    return "".join(words) if chinese else " ".join(words)


def edited(item: str, chinese: bool, rng: random.Random, fillers: list[str]) -> str:
    """One word in eight (a random one of each eight) replaced by another word."""
    words = _words(item, chinese)
    units = [i for i, w in enumerate(words) if (CJK_CHAR.match(w) if chinese else w.strip())]
    for block in range(0, len(units), 8):
        i = units[rng.randrange(block, min(block + 8, len(units)))]
        words[i] = rng.choice([f for f in fillers if f != words[i]])
    return _join(words, chinese)


def planted(kind: str, item: str, host: str, rng: random.Random, chinese: bool = False) -> tuple[str, str]:
    """(the document: `host` with `item` planted the way `kind` says, between two of its paragraphs near the
    middle; the planted text)."""
    words = _words(item, chinese)
    fillers = [w for w in _words(host, chinese) if (CJK_CHAR.match(w) if chinese else w.isalpha())]
    if kind == "verbatim":
        text = item
    elif kind == "rewrapped":
        if chinese:  # a line break after every seventh Chinese character
            text = re.sub(r"((?:[\u3400-\u9fff][^\u3400-\u9fff]*){7})", "\\1\n", item)
        else:
            text = "\n".join(" ".join(words[i:i + 5]) for i in range(0, len(words), 5))
    elif kind == "case_punctuation":
        swap = str.maketrans({"，": ",", "。": ".", "、": ";", "：": ":", ".": "!", ",": " ;", "(": "[", ")": "]",
                              "?": "??", "'": '"'})
        text = item.translate(swap).upper() if not chinese else item.translate(swap)
    elif kind == "part_60":
        size = int(0.6 * len(words))
        start = rng.randrange(0, len(words) - size + 1)
        text = _join(words[start:start + size], chinese)
    elif kind == "edit_1_in_8":
        text = edited(item, chinese, rng, fillers)
    elif kind == "run_10":  # ten units in a row (as matching counts them: a URL is many), as normalized text
        from prep.dedup.shingles import units

        normalized = units(item)
        start = rng.randrange(0, len(normalized) - 10)
        text = _join(normalized[start:start + 10], chinese)
    elif kind == "scattered":  # every third word of the item, each between words of other text
        text = _join([w for i, w in enumerate(words) if i % 3 == 0 for w in (w, *rng.sample(fillers, 4))], chinese)
    else:
        raise ValueError(kind)
    breaks = [m.end() for m in re.finditer(r"\n\s*\n", host)] or [len(host) // 2]
    at = min(breaks, key=lambda b: abs(b - len(host) // 2))
    return host[:at] + text + "\n\n" + host[at:], text
