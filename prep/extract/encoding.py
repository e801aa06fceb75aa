"""The text of an HTML page from its bytes: the charset the HTTP header declares, else the page's own
<meta>, else UTF-8 when the bytes are valid UTF-8, else what the bytes look like (uchardet, through
resiliparse). Valid UTF-8 first because it is what an undeclared page almost always is, and because
detection reads short or mostly-ASCII UTF-8 as a legacy code page; a legacy page is rarely valid UTF-8.

Labels are read as the WHATWG encoding standard reads them, where legacy labels name supersets
(iso-8859-1 and ascii are windows-1252, gb2312 and gbk are gb18030, shift_jis is windows-31j, euc-kr
is windows-949, big5 is big5-hkscs): a page declared Latin-1 that uses a curly quote (0x93) comes
out right. Undecodable bytes become U+FFFD, never an error.
"""

import codecs
import re

from resiliparse.parse.encoding import detect_encoding

SUPERSETS = {"iso8859-1": "cp1252", "ascii": "cp1252", "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932",
             "euc_kr": "cp949", "big5": "big5hkscs"}
META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def python_codec(label: str | None) -> str | None:
    """The Python codec for an encoding label (its WHATWG superset), or None for no such encoding."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'").lower()).name
    except (LookupError, ValueError):
        return None
    return SUPERSETS.get(name, name)


def html_codec(body: bytes, declared: str | None = None) -> str:
    """The codec of an HTML page's bytes: the declared charset when it names one, else the first <meta>
    charset within the first 4 KB, else UTF-8 when the bytes are valid UTF-8, else detection."""
    codec = python_codec(declared)
    if codec is None:
        found = META.search(body[:4096])
        codec = python_codec(found.group(1).decode("ascii")) if found else None
    if codec is None:
        try:
            body.decode("utf-8")
            return "utf-8"
        except UnicodeDecodeError:
            codec = python_codec(detect_encoding(body, max_len=16384)) or "utf-8"
    if codec.startswith("utf-16") and not body.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-8"  # a page cannot declare itself UTF-16 in ASCII bytes (WHATWG: it is UTF-8)
    return codec


def decode_html(body: bytes, declared: str | None = None) -> tuple[str, str]:
    """(the page as text, the codec that decoded it: html_codec's)."""
    codec = html_codec(body, declared)
    return str(body, codec, "replace"), codec
