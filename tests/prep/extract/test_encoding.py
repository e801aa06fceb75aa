"""Pages in the encodings sites use, declared in the HTTP header, in a <meta> or not at all, come out as
the right Unicode."""

import pytest

from prep.extract.encoding import decode_html, python_codec
from tests.web_fixtures import JAPANESE, Site, articles, encoded

SITE = Site("example.org", "Notes")
CHINESE = articles(1, size=3, names=("debian-handbook.zh",))[0]
TRADITIONAL = ["這是一份關於自由軟體的文件，說明如何安裝與更新套件。", "穩定版本經過充分測試，適合在伺服器上使用。"]
ENGLISH = [p.replace("'", "\u2019") for p in articles(1, size=2)[0]]  # curly quotes: 0x92 in windows-1252


@pytest.mark.parametrize("encoding, body", [
    ("utf-8", CHINESE), ("gbk", CHINESE), ("gb18030", CHINESE), ("gb2312", CHINESE), ("big5", TRADITIONAL),
    ("shift_jis", JAPANESE),
    ("windows-1252", ENGLISH), ("iso-8859-1", [p.replace("\u2019", "'") for p in ENGLISH]),
])
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
    assert decode_html(b"\xff\xfe\x00broken \x80\x81", "utf-8")[0].count("\ufffd") >= 2  # replaced, not raised


def test_undeclared_utf_8_is_read_as_utf_8_even_where_detection_would_guess_otherwise():
    # short, with one accented letter: uchardet reads it as windows-1250 (mojibake: "cafĂ©")
    text, codec = decode_html("<p>caf\u00e9</p>".encode())
    assert codec == "utf-8" and text == "<p>caf\u00e9</p>"
