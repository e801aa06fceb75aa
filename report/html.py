"""HTML out of text: every string escaped, control characters shown as symbols, and a page whose Content
Security Policy lets no script but the report's own run (by its hash) and fetches nothing: a document that
held markup shows as text, and would run nothing if escaping ever failed.

Untrusted text goes into element content only, never into an attribute, a URL, a style or a script."""

import base64
import hashlib
import html
import itertools
import re
import reprlib

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CELL_CHARS = 4_000  # characters of a table cell's text at most: a stats.json value from elsewhere held 20 MB

# a value that is not a string (a list or mapping of a stats.json from elsewhere) shown to a bounded depth and
# length: a list nested 980 deep raised RecursionError in str() and no report was written
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 3, 20, 20, 200, 200


def plain(value) -> str:
    """Any value as a string: a string as it is, anything else bounded in depth and length."""
    return "" if value is None else value if isinstance(value, str) else _SHOWN.repr(value)


def text(value) -> str:
    """Any value as escaped HTML text; C0 controls (but tab and newlines) as their visible symbols."""
    s = plain(value)
    s = CONTROL.sub(lambda m: chr(0x2400 + ord(m.group()) if ord(m.group()) < 0x20 else 0x2421), s)
    return html.escape(s, quote=True)


def number(value) -> str:
    """A cell's value: integers with thousands separators, floats to four significant digits."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else text(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, dict):
        value = ", ".join(f"{plain(k)[:200]}: {plain(v)[:200]}" for k, v in itertools.islice(value.items(), 20))
    value = plain(value)
    return text(value if len(value) <= CELL_CHARS else value[:CELL_CHARS] + "…")


def element(tag: str, inner: str, cls: str | None = None) -> str:
    """<tag class="cls">inner</tag>; `inner` is HTML already (escaped by the caller), `cls` a constant."""
    return f'<{tag} class="{cls}">{inner}</{tag}>' if cls else f"<{tag}>{inner}</{tag}>"


def _hash(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


def page(title: str, body: str, style: str, script: str) -> str:
    """A whole document: `body` HTML, `style` and `script` the report's own, allowed by their hashes."""
    policy = (f"default-src 'none'; style-src '{_hash(style)}'; script-src '{_hash(script)}'; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{text(title)}</title><style>{style}</style></head>\n"
            f"<body>{body}<script>{script}</script></body></html>\n")
