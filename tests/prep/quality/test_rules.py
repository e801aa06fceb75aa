"""Each quality rule on real sentences that pass it and real junk that fails it."""

from dataclasses import replace

import pytest

from prep.clean import CleanConfig, chinese_rules
from prep.config import override
from prep.quality.c4 import C4Config, c4
from prep.quality.fineweb import FineWebConfig, fineweb
from prep.quality.gopher_quality import GopherQualityConfig, gopher_quality
from prep.quality.gopher_repetition import GopherRepetitionConfig, gopher_repetition
from prep.quality.word_diversity import WordDiversityConfig, word_diversity

# From the Debian Administrator's Handbook (GPL-2+ / CC-BY-SA-3.0), section 12.1.1.
ENGLISH = (
    "RAID means Redundant Array of Independent Disks. The goal of this system is to prevent data loss and "
    "ensure availability in case of hard disk failure. The general principle is quite simple: data are stored "
    "on several physical disks instead of only one, with a configurable level of redundancy.\n\n"
    "Depending on this amount of redundancy, and even in the event of an unexpected disk failure, data can be "
    "losslessly reconstructed from the remaining disks. The I in RAID initially stood for inexpensive, because "
    "RAID allowed a drastic increase in data safety without requiring investing in expensive high-end disks. "
    "Probably due to image concerns, however, it is now more customarily considered to stand for independent."
)
# From the Chinese translation of the same handbook.
CHINESE = (
    "RAID 的意思是独立磁盘冗余阵列。这个系统的目标是防止硬盘故障时的数据丢失并确保可用性。"
    "一般原则相当简单：数据存储在多个物理磁盘上而不是只有一个，冗余级别可以配置。\n\n"
    "根据冗余量的不同，即使在意外的磁盘故障情况下，也可以从剩余的磁盘中无损地重建数据。"
    "RAID 中的 I 最初代表廉价，因为 RAID 允许在不需要投资昂贵的高端磁盘的情况下大幅提高数据安全性。"
    "可能是出于形象方面的考虑，现在它更习惯地被认为代表独立。"
)
MENU = "\n".join(["Home", "Download", "Documentation", "Support", "Community", "News", "Contact", "About"] * 3)


def test_gopher_quality():
    cfg = GopherQualityConfig()
    assert gopher_quality(ENGLISH, cfg, char_based=False) is None
    assert gopher_quality("Too short to be a document.", cfg, False) == "min_doc_words"
    assert gopher_quality(" ".join(["##### ####"] * 60), cfg, False) == "max_symbol_word_ratio"
    numbers = " ".join(str(1000 + i) for i in range(80)) + " the of and"
    assert gopher_quality(numbers, cfg, False) == "max_non_alpha_words_ratio"
    no_stop_words = " ".join(["install configure package system kernel module driver network"] * 8)
    assert gopher_quality(no_stop_words, cfg, False) == "min_stop_words"
    bullets = "\n".join(["- item number one in the list of items"] * 20)
    assert gopher_quality(bullets, cfg, False) == "max_bullet_lines_ratio"


def test_gopher_quality_counts_whitespace_words_so_technical_prose_passes():
    technical = ("Run apt-get install, then edit /etc/fstab (as root) and mount the volume; see mount(8). " * 8
                 + "The kernel reads the table at boot and mounts each of the file systems listed in it.")
    assert gopher_quality(technical, GopherQualityConfig(), char_based=False) is None


def test_gopher_quality_chinese_is_character_based():
    rules = chinese_rules()
    assert gopher_quality(CHINESE, rules.gopher_quality, char_based=True) is None
    assert gopher_quality(CHINESE, GopherQualityConfig(), char_based=False) is not None  # word rules misfire
    assert gopher_quality("软件包管理", rules.gopher_quality, True) == "min_doc_words"


def test_gopher_repetition():
    cfg = GopherRepetitionConfig()
    assert gopher_repetition(ENGLISH, cfg, False) is None
    spam = "\n".join(["Buy the best RAID controller today at the lowest price!"] * 10)
    assert gopher_repetition(spam, cfg, False) in ("dup_para_frac", "dup_line_frac")
    one_para = " ".join(["data can be losslessly reconstructed"] * 30)
    assert gopher_repetition(one_para, cfg, False).startswith(("top_", "dup_"))
    assert gopher_repetition(CHINESE, chinese_rules().gopher_repetition, True) is None


def test_c4_line_and_document_rules():
    cfg = C4Config()
    text, failed = c4(ENGLISH + "\nPlease enable JavaScript to view this page.\nShare\n", cfg, False)
    assert failed is None and "JavaScript" not in text and "Share" not in text and "RAID means" in text
    assert c4("Lorem ipsum dolor sit amet. " + ENGLISH, cfg, False)[1] == "lorem_ipsum"
    assert c4("One sentence only. Two.", cfg, False)[1] == "min_num_sentences"
    assert c4(ENGLISH + " {", C4Config(filter_curly_bracket=True), False)[1] == "curly_bracket"
    assert c4(CHINESE, cfg, True)[1] is None


def test_fineweb():
    cfg = FineWebConfig()
    assert fineweb(ENGLISH, cfg, False) is None
    assert fineweb(MENU, cfg, False) == "line_punct_ratio"
    short_sentences = "\n".join(f"Line {i} ends well." for i in range(30))
    assert fineweb(short_sentences, cfg, False) == "short_line_ratio"
    assert fineweb(ENGLISH + "\n" + ENGLISH.split("\n")[0], cfg, False) == "char_dup_ratio"
    assert fineweb(CHINESE, chinese_rules().fineweb, True) is None


def test_word_diversity():
    cfg = WordDiversityConfig()
    assert word_diversity(ENGLISH, cfg, False) is None
    stuffing = " ".join(["cheap", "debian", "download", "free", "linux"] * 40)
    assert word_diversity(stuffing, cfg, False) == "min_distinct_ratio"
    # an empty text with min_words 0 has no words to divide by: it is left to the length rules
    assert word_diversity("", WordDiversityConfig(min_words=0), False) is None


def test_every_rule_can_be_switched_off():
    from prep.clean import clean_text
    from prep.config import override

    spam = "\n".join(["Buy the best RAID controller today at the lowest price, really the best!"] * 12)
    assert clean_text(spam, CleanConfig()).reason.startswith("gopher_repetition")
    off = {r: {"enabled": False} for r in ("gopher_repetition", "gopher_quality", "c4", "fineweb", "word_diversity")}
    assert clean_text(spam, override(CleanConfig(), {"en": off})).reason is None


def test_repetition_without_ngram_rules_and_with_a_bad_size():
    """No n-gram sizes: the line and paragraph checks alone; a size below 1 is refused, not read past
    the words (the n-gram kernel does not check its bounds)."""
    repeated = "\n\n".join(["the same paragraph of several words"] * 5 + ["another one here"])
    none = GopherRepetitionConfig(top_n_grams=[], dup_n_grams=[])
    assert gopher_repetition(repeated, none, False) == "dup_para_frac"
    assert gopher_repetition("one two three four five six seven " * 20, none, False) is None
    with pytest.raises(ValueError, match="n-gram sizes"):
        GopherRepetitionConfig(dup_n_grams=[(0, 0.1)])


# A page of LilyPond's learning manual as a text browser dumps it (w3m -dump): its text, then the manual's
# contents in nested lists
LILYPOND_PAGE = """3.1.5 Adding text

Text may be added to your scores. Extra formatting may be added with the markup command, and the text
is placed above or below the staff as the direction marks say.

LilyPond - Learning Manual v2.24.1

  • 1. Installing
      □ 1.1 Graphical setup under GNU/Linux
      □ 1.2 Graphical setup under Windows
      □ 1.3 Graphical setup under macOS
      □ 1.4 Command line setup
  • 2. Tutorial
      □ 2.1 Compiling a file
      □ 2.2 How to write input files
          ☆ 2.2.1 Simple notation
          ☆ 2.2.2 Working on input files
      □ 2.3 Dealing with errors
      □ 2.4 How to read the manuals
  • 3. Common notation
      □ 3.1 Single staff notation
          ☆ 3.1.1 Bar checks
          ☆ 3.1.2 Accidentals and key signatures
          ☆ 3.1.3 Ties and slurs
          ☆ 3.1.4 Articulation and dynamics
          ☆ 3.1.5 Adding text
          ☆ 3.1.6 Automatic and manual beams
          ☆ 3.1.7 Advanced rhythmic commands
      □ 3.2 Multiple notes at once
          ☆ 3.2.1 Music expressions explained
          ☆ 3.2.2 Multiple staves
          ☆ 3.2.3 Staff groups
          ☆ 3.2.4 Combining notes into chords
          ☆ 3.2.5 Single staff polyphony"""
# A request's layout as the X11 protocol's text edition draws it: a border between every two rows
CREATE_WINDOW = (("1", "CARD8", "major opcode"), ("1", "CARD8", "depth"), ("2", "CARD16", "request length"),
                 ("4", "WINDOW", "wid"), ("4", "WINDOW", "parent"), ("2", "INT16", "x"), ("2", "INT16", "y"),
                 ("2", "CARD16", "width"), ("2", "CARD16", "height"), ("2", "CARD16", "border-width"),
                 ("2", "", "class"), ("4", "VISUALID", "visual"), ("4", "BITMASK", "value-mask"),
                 ("4", "PIXMAP", "background-pixmap"), ("4", "CARD32", "background-pixel"),
                 ("4", "PIXMAP", "border-pixmap"), ("4", "CARD32", "border-pixel"), ("1", "BITGRAVITY", "bit-gravity"),
                 ("1", "WINGRAVITY", "win-gravity"), ("1", "", "backing-store"), ("4", "CARD32", "backing-planes"),
                 ("4", "CARD32", "backing-pixel"), ("1", "BOOL", "override-redirect"), ("1", "BOOL", "save-under"),
                 ("4", "SETofEVENT", "event-mask"), ("4", "SETofDEVICE", "do-not-propagate-mask"),
                 ("4", "COLORMAP", "colormap"), ("4", "CURSOR", "cursor"))
X11_REQUEST = "\n".join(
    ["Each request has a fixed header, and the server reads the rest as its length says:",
     "┌──────┬────────────┬────────────────────────┐"]
    + [line for size, kind, name in CREATE_WINDOW
       for line in (f"│{size:<6}│{kind:<12}│{name:<24}│", "├──────┼────────────┼────────────────────────┤")]
    + ["The window is created as a child of the parent, with the given position and size."])


def test_a_table_of_contents_and_a_tables_borders_pass_the_docs_profile_and_the_web_rules_hold_them():
    docs = override(CleanConfig(), {"profile": "docs"}).en
    contents = LILYPOND_PAGE
    assert gopher_quality(contents, docs.gopher_quality, False) is None
    assert gopher_quality(contents, GopherQualityConfig(max_non_alpha_words_ratio=0.7), False) == (
        "max_non_alpha_words_ratio")  # the numbers counted as words
    numbers = "\n".join(f"{i}. {1000 + i} {2000 + i} {3000 + i}" for i in range(40)) + "\nthe of and"
    assert gopher_quality(numbers, docs.gopher_quality, False) == "max_non_alpha_words_ratio"  # still a number table
    assert fineweb(X11_REQUEST, docs.fineweb, False) is None
    assert fineweb(X11_REQUEST, replace(docs.fineweb, skip_layout_lines=False), False) == "char_dup_ratio"
    lines_only = replace(docs.gopher_repetition, top_n_grams=[], dup_n_grams=[])  # (the borders are n-grams too)
    assert gopher_repetition(X11_REQUEST, lines_only, False) is None
    without = replace(lines_only, skip_layout_lines=False)
    assert gopher_repetition(X11_REQUEST, without, False) == "dup_line_char_frac"
    border = "├──────┼────────────┼────────────────────────┤"
    repeated_words = X11_REQUEST.replace(border, f"│{'2':<6}│{'':<12}│{'unused':<24}│")
    assert gopher_repetition(repeated_words, lines_only, False) == "dup_line_char_frac"
