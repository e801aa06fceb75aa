"""Each quality rule on real sentences that pass it and real junk that fails it."""

import pytest

from prep.clean import CleanConfig, chinese_rules
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
