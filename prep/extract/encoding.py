"""The text of an HTML page from its bytes: a byte order mark's encoding, else the charset the HTTP header
declares, else the page's own <meta>, else UTF-8 when the bytes are valid UTF-8, else what the bytes look
like (uchardet, through resiliparse). Valid UTF-8 before detection because it is what an undeclared page
almost always is, and because detection reads short or mostly-ASCII UTF-8 as a legacy code page; a legacy
page is rarely valid UTF-8.

Labels are read as the WHATWG encoding standard reads them, where legacy labels name supersets
(iso-8859-1 and ascii are windows-1252, gb2312 and gbk are gb18030, shift_jis is windows-31j, euc-kr
is windows-949, big5 is big5-hkscs): a page declared Latin-1 that uses a curly quote (0x93) comes
out right. A label the standard does not have is read past as browsers read past it: Python's codec names
also cover transforms (base64, zlib, rot13), escapes and EBCDIC, and a page declaring one once failed or came
out mangled. Undecodable bytes become U+FFFD, never an error.
"""

import codecs
import re

from resiliparse.parse.encoding import detect_encoding, map_encoding_to_html5

# the WHATWG decoders of these labels read supersets of Python's codecs of the same name (the standard's own
# label map, resiliparse's, already reads iso-8859-1 and ascii as windows-1252 and gb2312 as gbk)
SUPERSETS = {"gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949", "big5": "big5hkscs"}
BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def python_codec(label: str | None) -> str | None:
    """The Python codec for an encoding label of the WHATWG Encoding Standard (its superset), or None for a
    label that names no encoding of the web: Python's own codec names include transforms (base64, rot13,
    zlib), escapes and EBCDIC, which a page or its server may declare and a browser reads past."""
    if not label:
        return None
    name = map_encoding_to_html5(label.strip().strip("\"'"), fallback_utf8=False)
    if name is None:
        return None
    name = codecs.lookup(name).name
    return SUPERSETS.get(name, name)


def html_codec(body: bytes, declared: str | None = None) -> str:
    """The codec of an HTML page's bytes: its byte order mark's, else the declared charset when it names
    one, else the first <meta> charset within the first 4 KB, else UTF-8 when the bytes are valid UTF-8,
    else detection."""
    for mark, codec in BYTE_ORDER_MARKS:
        if body.startswith(mark):
            return codec  # before any label, as browsers read a page (WHATWG)
    codec = python_codec(declared)
    if codec is None:
        found = META.search(body[:4096])
        codec = python_codec(found.group(1).decode("ascii")) if found else None
        if codec is not None and codec.startswith("utf-16"):
            return "utf-8"  # a <meta> read as ASCII cannot declare UTF-16 (WHATWG: it is UTF-8)
    if codec is None:
        try:
            body.decode("utf-8")
            return "utf-8"
        except UnicodeDecodeError:
            codec = python_codec(detect_encoding(body, max_len=16384)) or "utf-8"
    return codec


def decode_html(body: bytes, declared: str | None = None) -> tuple[str, str]:
    """(the page as text, the codec that decoded it: html_codec's)."""
    codec = html_codec(body, declared)
    return str(body, codec, "replace"), codec
