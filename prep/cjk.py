"""The Unicode ranges tokenmill treats as CJK, defined once for quality rules, dedup and tokenizer."""

# Han (unified, extension A, compatibility, extensions B-F) and Japanese kana: scripts written
# without spaces, where a character is the natural unit.
HAN_KANA = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))
# Hangul is written with spaces between words; dedup still shingles it by character (one rule for
# Chinese, Japanese and Korean), the quality rules and the pre-tokenizer do not single it out.
HANGUL = ((0x1100, 0x11FF), (0xAC00, 0xD7AF))


def char_class(ranges) -> str:
    """The inside of a regular-expression character class, e.g. "\u4e00-\u9fff" as characters."""
    return "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges)


def in_ranges(cp: int, ranges) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)
