"""prep/dedup/paragraphs.py without Spark: which units may be removed, and what a cut changes (only the text
at the cut). The cases were found by review (/tmp/review_paragraphs): code lost its indentation where a shared
license comment was cut, an indented brace was a unit of 33 characters, lines of punctuation were one unit
under `near`, and a run of sentences a document kept lost sentences to an overlapping run it did not."""

from prep.dedup.paragraphs import ParagraphConfig, removable_units, without

LICENSE = "# Licensed under the Apache License, Version 2.0; you may not use this file except in compliance."
CODE = "def clamp(value, low, high):\n    if value < low:\n\n\n\n        return low\n    return min(value, high)\n"


def keys_of(text: str, cfg: ParagraphConfig) -> dict[str, int]:
    return {text[a:b]: key for a, b, key in removable_units(text, cfg)}


def test_a_cut_changes_the_text_at_the_cut_alone():
    cfg = ParagraphConfig(enabled=True)
    text = f"{LICENSE}\n\n{CODE}"
    license_key = keys_of(text, cfg)[LICENSE]
    assert without(text, {license_key}, cfg) == (CODE, 1)  # the blank lines and indentation inside kept
    middle = f"First paragraph of the page, long enough to count.\n\n{LICENSE}\n\n    indented next paragraph\n"
    assert without(middle, {license_key}, cfg)[0] == (
        "First paragraph of the page, long enough to count.\n\n    indented next paragraph\n")
    assert without(f"{CODE}\n{LICENSE}\n", {license_key}, cfg)[0] == CODE  # at the end: the text's own last break
    assert without(LICENSE, {license_key}, cfg) == ("", 1)


def test_a_cut_line_leaves_a_line_break_not_a_blank_line():
    cfg = ParagraphConfig(enabled=True, unit="line")
    text = f"int main(void) {{\n{LICENSE}\n{LICENSE}\n    return 0;\n}}\n"
    key = keys_of(text, cfg)[LICENSE]
    assert without(text, {key}, cfg) == ("int main(void) {\n    return 0;\n}\n", 2)


def test_indentation_is_no_length_and_punctuation_folds_to_no_unit():
    brace = " " * 32 + "}"
    assert not removable_units(f"{brace}\n{' ' * 40}\nint x;\n", ParagraphConfig(enabled=True, unit="line"))
    closing = "\n".join(["});", "]);", "}}", "));", ")];"])
    near = ParagraphConfig(enabled=True, unit="line", near=True, min_unit_chars=2)
    assert not removable_units(closing, near)
    assert len(removable_units(closing, ParagraphConfig(enabled=True, unit="line", min_unit_chars=2))) == 5
    crlf, lf = "A line that ends the Windows way.\r\n", "A line that ends the Windows way.\n"
    line = ParagraphConfig(enabled=True, unit="line")
    assert [k for _, _, k in removable_units(crlf, line)] == [k for _, _, k in removable_units(lf, line)]


def test_a_run_of_sentences_the_document_keeps_loses_none_of_its_sentences():
    cfg = ParagraphConfig(enabled=True, unit="sentences", min_unit_chars=10)
    text = ("The river rose overnight. The bridge was closed at dawn. Crews began clearing the banks. "
            "Schools stayed open all day.")
    found = removable_units(text, cfg)
    first, second = found[0][2], found[1][2]  # sentences 1-3, and 2-4
    assert without(text, {second}, cfg, keeps=frozenset({first})) == (
        "The river rose overnight. The bridge was closed at dawn. Crews began clearing the banks.", 1)
    assert without(text, {second}, cfg)[0] == "The river rose overnight."
    assert without(text, {first}, cfg, keeps=frozenset({first})) == (text, 0)


def test_a_document_of_sixty_thousand_units_half_of_them_cut():
    """A larger case than the review planted: a document first of 30,000 units and losing 30,000 others (the
    kept spans had been scanned for each cut and the text so far copied at each: 20 s, now linear)."""
    cfg = ParagraphConfig(enabled=True)
    paragraphs = [f"Paragraph number {i} of a very long page says something." for i in range(60_000)]
    text = "\n\n".join(paragraphs) + "\n"
    keys = [key for _, _, key in removable_units(text, cfg)]
    out, removed = without(text, set(keys[1::2]), cfg, frozenset(keys[::2]))
    assert removed == 30_000 and out == "\n\n".join(paragraphs[::2]) + "\n"
