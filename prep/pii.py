"""Redaction of e-mail addresses and public IP addresses."""

import ipaddress
import re
from dataclasses import dataclass


@dataclass
class PiiConfig:
    enabled: bool = True  # mask e-mail addresses and IP addresses (false: text passes unchanged)
    email_replacement: str = "email@example.com"  # a real-looking address keeps the text natural
    ip_replacement: str = "192.0.2.1"  # TEST-NET-1, reserved for documentation (RFC 5737)
    only_public_ips: bool = True  # 127.0.0.1 and 192.168.0.1 in documentation are not personal


EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b")
LOCAL_PART = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
WORD_BOUNDARY = re.compile(r"\b")
# a full stop after it ends a sentence ("the resolver is 8.8.8.8.", "(... 8.8.8.8.)"); one before a letter, a
# digit, "-" or "_" makes it a part of a longer name (a version "3.1.1.3.tar.gz", "1.0.0.127.in-addr.arpa",
# "1.2.3.4.5")
IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.[\w-])")
LINE_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
ITEM_MARKS = "»›·•|>–—"  # between the items of a breadcrumb or a menu ("Home » 6.2.4.1. The configuration")
# a heading's number: a full stop, then its title on the same line
TITLE_AFTER = re.compile(r"\.[^\S\n\r\x0b\x0c\x85\u2028\u2029]+\S")
# an IPv6 address, its last 32 bits in IPv4's dotted form where it is written so (::ffff:8.8.4.4): one address,
# never an IPv6 head ("::ffff:8") before an IPv4 tail; a full stop after it ends a sentence, not the address
IPV6 = re.compile(r"(?<![0-9A-Za-z_:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{0,4})"
                  r"(?![0-9A-Za-z_:]|\.\d)")
# Where an address can start. The address patterns test a look-behind at every character; these
# start with a literal, which the regular expression engine finds ~50x faster. An IPv4 match has its
# first ".d." at most 3 characters after its start, an IPv6 match its first "::" or ":h:" at most 4.
IPV4_HINT, IPV4_REACH = re.compile(r"\.\d{1,3}\.\d"), 3
IPV6_HINT, IPV6_REACH = re.compile(r"::|:[0-9A-Fa-f]{1,4}:"), 4


def _sub_near_hints(pattern: re.Pattern, hint: re.Pattern, reach: int, replace, text: str) -> str:
    """pattern.sub(replace, text), trying the pattern only at the `reach` characters before each hint
    (and at it): a match's first hint lies at most `reach` after its start, so no match is missed,
    and the first match found from the left is the one sub would take (matches are never empty)."""
    pieces, done, lowest = [], 0, 0  # no match starts before `lowest`
    while (found := hint.search(text, lowest)) is not None:
        at = found.start()
        for start in range(max(lowest, at - reach), at + 1):
            if match := pattern.match(text, start):
                pieces += [text[done:start], replace(match)]
                done = lowest = match.end()
                break
        else:
            lowest = at + 1
    return "".join(pieces) + text[done:] if pieces else text


def _ip_replacer(cfg: PiiConfig):
    def replace(match: re.Match) -> str:
        try:
            address = ipaddress.ip_address(match.group(0))
        except ValueError:
            return match.group(0)  # 999.1.1.1, a version number or a time: not an address
        if _numbers_a_line(match):
            return match.group(0)
        if cfg.only_public_ips and not address.is_global:
            return match.group(0)
        return cfg.ip_replacement

    return replace


def _sub_emails(text: str, replacement: str) -> str:
    """EMAIL.sub(replacement, text) (the replacement as it is, not a template: "\\0" had written a NUL byte, "\\e"
    failed every document with an address) in linear time. A match holds one "@", its local part a run of
    LOCAL_PART characters ending there: from every position of the run where the pattern may start (a word
    boundary) it is the same run and the same domain, so it matches from the first such position or from none.
    Tried from each, as EMAIL.sub tries it, a run of 160,000 "a." took 169 s."""
    pieces, done, lowest = [], 0, 0  # no match starts before `lowest`
    at = text.find("@")
    while at != -1:
        start = at
        while start > lowest and text[start - 1] in LOCAL_PART:
            start -= 1
        first = next((p for p in range(start, at) if WORD_BOUNDARY.match(text, p)), None)
        if first is not None and (match := EMAIL.match(text, first)):
            pieces += [text[done:first], replacement]
            done = lowest = match.end()
        at = text.find("@", max(at + 1, lowest))
    return "".join(pieces) + text[done:] if pieces else text


def _numbers_a_line(match: re.Match) -> bool:
    """Whether an IPv4 match is a heading's number: a full stop and a no-break space after it ("8.2.4.2.\xa0Modems",
    as DocBook writes them), or a full stop and a title after it where it opens its line or an item of a
    breadcrumb ("6.1.2.1. Network configuration", "Home » 6.2.4.1. The configuration"; the sample has 400, its
    page chrome more), not an address ending a sentence ("... is 8.8.8.8. It answers", or alone on a wrapped
    line). Looks back over white space alone (a search for the line's start would read a long line again for
    every match on it)."""
    text, end = match.string, match.end()
    if match.re is not IPV4 or not TITLE_AFTER.match(text, end):
        return False
    if text[end + 1] == "\xa0":
        return True
    at = match.start()
    while at > 0 and text[at - 1] not in LINE_BREAKS and text[at - 1].isspace():
        at -= 1
    return at == 0 or text[at - 1] in LINE_BREAKS or text[at - 1] in ITEM_MARKS


def redact(text: str, cfg: PiiConfig) -> str:
    if not cfg.enabled:
        return text
    if "@" in text:
        text = _sub_emails(text, cfg.email_replacement)
    replace = _ip_replacer(cfg)
    # IPv6 first: an IPv4 address inside one is judged with it, not replaced alone
    if "::" in text or text.count(":") >= 7:  # no IPv6 address without one or the other
        text = _sub_near_hints(IPV6, IPV6_HINT, IPV6_REACH, replace, text)
    return _sub_near_hints(IPV4, IPV4_HINT, IPV4_REACH, replace, text)
