"""Pages in the encodings sites use, declared in the HTTP header, in a <meta> or not at all, come out as
the right Unicode."""

import codecs

import pytest

from prep.extract.encoding import decode_html, html_codec, python_codec
from prep.extract.html_text import html_main_text, main_text
from tests.web_fixtures import JAPANESE, Site, articles, encoded

SITE = Site("example.org", "Notes")
CHINESE = articles(1, size=3, names=("debian-handbook.zh",))[0]
TRADITIONAL = ["這是一份關於自由軟體的文件，說明如何安裝與更新套件。", "穩定版本經過充分測試，適合在伺服器上使用。"]
ENGLISH = [p.replace("'", "\u2019") for p in articles(1, size=2)[0]]  # curly quotes: 0x92 in windows-1252


PAGES = [
    ("utf-8", CHINESE), ("gbk", CHINESE), ("gb18030", CHINESE), ("gb2312", CHINESE), ("big5", TRADITIONAL),
    ("shift_jis", JAPANESE),
    ("windows-1252", ENGLISH), ("iso-8859-1", [p.replace("\u2019", "'") for p in ENGLISH]),
]
# text whose bytes hold "<li" inside characters: 殊蕁 in ISO-2022-JP is ESC $ B "<li!", 氼i in UTF-16 is "<l" "i\0"
ITEM = "An item of a list, a sentence as long as a paragraph of the article."
HIDDEN_TAG = [("iso-2022-jp", [f"{JAPANESE[0]}殊蕁。", *JAPANESE[1:]]),
              ("utf-16", [f"{ENGLISH[0]} \u6c3ci", *ENGLISH[1:]])]


@pytest.mark.parametrize("encoding, body", PAGES)
@pytest.mark.parametrize("declare", ["header", "meta", "none"])
def test_a_page_comes_out_as_its_unicode_however_its_charset_is_declared(encoding, body, declare):
    data, content_type = encoded(SITE.page("Notes", body), encoding, declare)
    declared = content_type.partition("charset=")[2] or None
    text, codec = decode_html(data, declared)
    if declare == "none" and encoding in ("iso-8859-1", "windows-1252", "gb2312", "gbk", "gb18030"):
        assert python_codec(codec) is not None  # detection: a superset may be chosen, the text must match
    assert all(paragraph in text for paragraph in body), (encoding, declare, codec)


def test_a_latin_1_declaration_reads_windows_1252_as_browsers_do():
    data = "a \u201cquoted\u201d word".encode("cp1252")
    assert decode_html(data, "iso-8859-1")[0] == "a \u201cquoted\u201d word"


def test_an_unknown_or_lying_declaration_falls_back_and_never_raises():
    data = SITE.page("Notes", CHINESE).encode("gbk")
    text, _ = decode_html(data, "no-such-charset")
    assert CHINESE[0] in text
    assert decode_html(b"\xff\xff\x00broken \x80\x81", "utf-8")[0].count("\ufffd") >= 2  # replaced, not raised


def test_a_byte_order_mark_decides_over_every_label_as_in_browsers():
    sentence = "Caf\u00e9 owners met on Tuesday and agreed to publish their report before the end of the month."
    page = f'<meta charset="windows-1252"><p>{sentence}</p>'
    for data, codec in ((codecs.BOM_UTF8 + page.encode(), "utf-8"), (page.encode("utf-16"), "utf-16-le"),
                        (codecs.BOM_UTF16_BE + page.encode("utf-16-be"), "utf-16-be")):
        for declared in (None, "windows-1252", "utf-16", "shift_jis"):
            assert html_codec(data, declared) == codec and html_main_text(data, declared) == (sentence, codec)
    # without a mark, a header's UTF-16 is read as such, a <meta>'s cannot be (it was read as ASCII: UTF-8)
    assert html_main_text(page.encode("utf-16-le"), "utf-16le") == (sentence, "utf-16-le")
    assert html_codec(f'<meta charset="utf-16"><p>{sentence}</p>'.encode()) == "utf-8"


def test_undeclared_utf_8_is_read_as_utf_8_even_where_detection_would_guess_otherwise():
    # short, with one accented letter: uchardet reads it as windows-1250 (mojibake: "cafĂ©")
    text, codec = decode_html("<p>caf\u00e9</p>".encode())
    assert codec == "utf-8" and text == "<p>caf\u00e9</p>"


@pytest.mark.parametrize("encoding, body", PAGES + HIDDEN_TAG)
def test_the_main_text_of_a_pages_bytes_is_the_main_text_of_its_unicode(encoding, body):
    # the list tags are renamed in the page's own bytes where an ASCII byte is always its character, and in
    # its decoded text where it is not (UTF-16, ISO-2022-JP): a "<li" inside characters stays as it was
    for declare in ("header", "meta", "none"):
        page = SITE.page("Notes", body).replace("</h1>", f"</h1><ul><li>{ITEM}</li></ul>")
        data, content_type = encoded(page, encoding, declare)
        declared = content_type.partition("charset=")[2] or None
        text, codec = html_main_text(data, declared)
        assert (text, codec) == (main_text(decode_html(data, declared)[0]), decode_html(data, declared)[1])
        if declare == "header":
            assert all(paragraph in text for paragraph in body) and ITEM in text.split("\n\n"), text


@pytest.mark.parametrize("label", ["base64", "hex", "rot13", "zlib", "idna", "punycode", "undefined", "unicode_escape",
                                   "utf-7", "cp037", "palmos"])
def test_a_label_that_names_no_encoding_of_the_web_is_ignored_as_browsers_ignore_it(label):
    # Python's codecs know these names (bytes-to-bytes transforms, EBCDIC, escapes), the Encoding Standard does
    # not: a header or <meta> that declares one is read past, where it once failed or mangled the page
    sentence = "Caf\u00e9 owners met on Tuesday and agreed to publish their report before the end of the month."
    for declared, page in ((label, f"<p>{sentence}</p>"), (None, f'<meta charset="{label}"><p>{sentence}</p>')):
        assert python_codec(label) is None
        assert decode_html(page.encode(), declared) == (page, "utf-8")
        assert html_main_text(page.encode(), declared) == (sentence, "utf-8")
