"""Cleaning profiles: the rule settings for a kind of text, chosen by name (`profile: docs`).

The web rules (Gopher, C4, FineWeb) were tuned on web crawls: documentation repeats its option names,
headings and examples, and code is neither sentences nor prose, so those rules reject most of both.
A profile is a base: it sets the settings below for English, Chinese and every other language, and
whatever the user sets besides wins over it. `web` is the defaults. Measured by
`python -m benchmarks.eval_profiles` and, on documentation in forms and from packages the profiles
were not tuned on, `python -m benchmarks.eval_docs_carryover` (docs/clean.md, "Profiles").
"""

from prep.config import merged, nested, plain

# Documentation (manuals, handbooks, API references): repetition allowed up to twice the web's,
# lines need not end like sentences, one sentence suffices, nothing is cut from the text (option
# names stand alone on their lines; C4's Wikipedia citation markers are not cut either: in
# documentation "[0]", "[1151]" and "[]" are code, log lines and syntax, argv[0], sshd[1151]:, "[]
# matches", and a "[3]" is a footnote's own mark), shorter documents pass (a man page of one option),
# 70% of words with a letter suffice (code examples and tables: "{", "|", "=", numbers; a menu whose
# items are parted by symbols has at most 67%, a number table none; a list's markers and a section's
# number opening a line are not words: a table of contents), and a line of no letter or digit is
# not a repeated line (the border between a text table's rows, drawn twenty times in a protocol's
# specification; a horizontal rule above and below a page's text).
_DOCS_RULES = {
    "fineweb": {"char_duplicates_ratio": 0.2, "line_punct_thr": 0.0, "new_line_ratio": 1.0, "short_line_thr": 0.8,
                "skip_layout_lines": True},
    "gopher_repetition": {"dup_line_frac": 0.5, "dup_para_frac": 0.5, "dup_line_char_frac": 0.4,
                          "dup_para_char_frac": 0.4, "skip_layout_lines": True,
                          "top_n_grams": [[2, 0.3], [3, 0.27], [4, 0.24]],
                          "dup_n_grams": [[5, 0.4], [6, 0.38], [7, 0.36], [8, 0.34], [9, 0.32], [10, 0.3]]},
    "c4": {"min_num_sentences": 1, "min_words_per_line": 0, "remove_citations": False},
    "gopher_quality": {"min_doc_words": 20, "max_avg_word_length": 15, "max_non_alpha_words_ratio": 0.7,
                       "skip_line_markers": True},
}

# Source code: none of the prose rules (sentences, stop words, words made of letters, symbols,
# bullets), repetition allowed up to about three times the web's; what still goes is what is junk in
# any file: placeholder text, keyword stuffing, lines repeated most of the way, very long "words"
# (minified or encoded data), number tables.
_CODE_RULES = {
    "fineweb": {"char_duplicates_ratio": 0.3, "line_punct_thr": 0.0, "new_line_ratio": 1.0, "short_line_thr": 0.95},
    "gopher_repetition": {"dup_line_frac": 0.5, "dup_para_frac": 0.5, "dup_line_char_frac": 0.5,
                          "dup_para_char_frac": 0.5, "top_n_grams": [[2, 0.4], [3, 0.35], [4, 0.3]],
                          "dup_n_grams": [[5, 0.6], [6, 0.58], [7, 0.56], [8, 0.54], [9, 0.52], [10, 0.5]]},
    "c4": {"min_num_sentences": 0, "min_words_per_line": 0, "filter_javascript": False, "filter_policy": False,
           "remove_citations": False},
    "gopher_quality": {"min_doc_words": 20, "min_avg_word_length": 2, "max_avg_word_length": 20,
                       "max_non_alpha_words_ratio": 0.3, "max_symbol_word_ratio": 1.0, "min_stop_words": 0,
                       "max_bullet_lines_ratio": 1.0, "max_ellipsis_lines_ratio": 1.0},
}

# Chinese documentation: the same allowances over FineWeb-2's Mandarin thresholds (prep/clean.py's
# chinese_rules), where a Han character is a word: the n-gram limits raised by the factors above
# (1.5 for the most frequent, 2.7-3 for the repeated). FineWeb's line-end rule stays on, as it is what
# removes Chinese menus (their items are not words with symbols between them), so it reads a
# hard-wrapped paragraph as one line, not as pieces that end mid-sentence (prep/quality/reflow.py);
# and a short line is as wide as a short English one, 30 columns: 15 Han characters of two columns.
_DOCS_ZH_RULES = {
    "fineweb": {"char_duplicates_ratio": 0.2, "new_line_ratio": 1.0, "short_line_thr": 0.8, "short_line_length": 15,
                "reflow": True, "skip_layout_lines": True},
    "gopher_repetition": {"dup_line_frac": 0.5, "dup_para_frac": 0.5, "dup_line_char_frac": 0.4,
                          "dup_para_char_frac": 0.4, "skip_layout_lines": True,
                          "top_n_grams": [[2, 0.384], [3, 0.302], [4, 0.257]],
                          "dup_n_grams": [[5, 0.53], [6, 0.49], [7, 0.46], [8, 0.44], [9, 0.41], [10, 0.38]]},
    "c4": {"min_num_sentences": 1, "min_words_per_line": 0, "remove_citations": False},
}

LANGUAGES = ("en", "other")
PROFILES = {"web": {}, "docs": {**{lang: _DOCS_RULES for lang in LANGUAGES}, "zh": _DOCS_ZH_RULES},
            "code": {lang: _CODE_RULES for lang in LANGUAGES}}


def _paths(mapping: dict, path=()) -> set[tuple[str, ...]]:
    found = set()
    for key, value in mapping.items():
        found |= _paths(value, (*path, key)) if isinstance(value, dict) else {(*path, key)}
    return found


def _at(data: dict, path: tuple[str, ...]):
    for key in path:
        data = data[key]
    return data


def profile_settings(name: str, defaults) -> dict:
    """The settings of profile `name` (KeyError when there is none) over a config's `defaults`: every
    setting some profile changes, so that choosing a profile undoes another's."""
    chosen = PROFILES[name]
    touched = set().union(*(_paths(p) for p in PROFILES.values()))
    base = plain(defaults)
    settings: dict = {}
    for path in sorted(touched):
        settings = merged(settings, nested(path, _at(base, path)))
    return merged(settings, chosen)
