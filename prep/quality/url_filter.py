"""The URL filter: documents from blocked sites or pages, or whose URL holds a banned word, are rejected
with `url_filter:<reason>` (domain, url or banned_word). Documents without a URL pass.

Blocklists are files the user has (none is downloaded at run time): a plain list, one domain or URL a
line (`#` starts a comment), or a folder in the layout of the Université Toulouse 1 Capitole list
(UT1, https://dsi.ut-capitole.fr/blacklists/: one folder per category, each with `domains` and `urls`
files), of which `categories` chooses some (all when empty). A blocked domain blocks its subdomains:
`example.com` blocks `www.example.com`. A URL entry blocks that page and everything under it. The
lists are read once, on the driver, and shipped to the tasks with the job.
"""

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from schemas.trust import is_regular_file, not_regular_why

log = logging.getLogger(__name__)


@dataclass
class UrlFilterConfig:
    blocklists: list[str] = field(default_factory=list)  # files or UT1-style folders of blocked domains and URLs
    categories: list[str] = field(default_factory=list)  # of a UT1-style folder, the categories to block (all: empty)
    banned_words: list[str] = field(default_factory=list)  # a URL holding one of these words (as a word) is rejected

    def __post_init__(self):  # where a config is made (the driver): a list that is not there stops the job at once
        if missing := [path for path in self.blocklists if not Path(path).exists()]:
            raise ValueError(f"blocklists: {', '.join(missing)} does not exist")


MAX_URL_CHARS = 8192  # of a document's URL, looked at (servers refuse longer ones; a 64 KB path had taken 1 GB)


def _entries(path: Path) -> list[tuple[int, str]]:
    """(line number, entry) of a list file; ValueError naming the file where it cannot be read as text."""
    if not is_regular_file(path):
        raise ValueError(f"blocklists: {path}: {not_regular_why(path)}")
    lines, undecoded = [], []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            lines.append((number, raw.decode("utf-8")))
        except UnicodeDecodeError:  # read with replacement, café.example had become caf\ufffd.example, unsaid
            undecoded.append(number)
    if undecoded:
        log.warning("blocklists: %s: %d line(s) not UTF-8 passed over (line %s)", path, len(undecoded),
                    ", ".join(map(str, undecoded[:5])) + (", ..." if len(undecoded) > 5 else ""))
    entries = ((number, line.split("#", 1)[0].strip().lower()) for number, line in lines)
    return [(number, entry) for number, entry in entries if entry]


def _split(entry: str) -> tuple[str, str]:
    """(host, path) of a list entry or a URL, with or without its scheme; ValueError where it does not parse
    ("[2001:db8::1", an unclosed IPv6 address)."""
    parts = urlsplit(entry if "://" in entry else f"//{entry}")
    return (parts.hostname or "").removeprefix("www."), parts.path.rstrip("/")


def _list_files(listed: Path, categories: list[str]) -> list[Path]:
    """The files of a blocklist setting: a plain list, or a UT1-style folder's chosen categories' files; ValueError
    where that chooses nothing (a folder of another layout, or a category misspelt, had blocked nothing without a
    word)."""
    if not listed.is_dir():
        return [listed]
    present = sorted(p.name for p in listed.iterdir() if p.is_dir())
    if missing := sorted(set(categories) - set(present)):
        raise ValueError(f"blocklists: {listed} has no category {', '.join(missing)} (it has {len(present)}: "
                         f"{', '.join(present[:10])}{', ...' if len(present) > 10 else ''})")
    files = [listed / category / kind for category in sorted(categories or present) for kind in ("domains", "urls")
             if (listed / category / kind).exists()]
    if not files:
        raise ValueError(f"blocklists: {listed} is a folder without the UT1 layout (CATEGORY/domains, "
                         f"CATEGORY/urls)")
    return files


class UrlFilter:
    """The filter of a config, its lists read; ValueError naming the file and line of an entry that is no domain
    or URL (it had failed the job after Spark started)."""

    def __init__(self, cfg: UrlFilterConfig):
        self.domains: set[str] = set()
        self.urls: set[tuple[str, str]] = set()
        if cfg.categories and not any(Path(listed).is_dir() for listed in cfg.blocklists):
            raise ValueError("url_filter.categories choose among a UT1-style folder's, and no blocklist is a folder")
        for listed in map(Path, cfg.blocklists):
            for path in _list_files(listed, cfg.categories):
                for number, entry in _entries(path):
                    try:
                        host, page = _split(entry)
                    except ValueError as e:
                        raise ValueError(f"blocklists: {path}:{number}: {entry[:100]!r} is no domain or URL ({e})") \
                            from None
                    if page and path.name != "domains":
                        self.urls.add((host, page))
                    elif host:
                        self.domains.add(host)
        # how deep a lookup goes: no entry has more labels, or a URL entry more path segments
        self.domain_labels = max((d.count(".") + 1 for d in self.domains), default=0)
        self.url_segments = max((page.count("/") + 1 for _, page in self.urls), default=0)
        if any(not w.strip() for w in cfg.banned_words):
            raise ValueError("url_filter.banned_words: an empty word matches no URL")
        words = [re.escape(w.strip().lower()) for w in cfg.banned_words]  # " casino " had matched no URL
        self.words = re.compile(rf"(?<![a-z0-9])(?:{'|'.join(words)})(?![a-z0-9])") if words else None

    def __bool__(self) -> bool:
        return bool(self.domains or self.urls or self.words)

    def reason(self, url: str | None) -> str | None:
        """Why a document of this URL is rejected, or None (also for no URL). Its first MAX_URL_CHARS are looked
        at; one that does not parse (http://[oops/page had failed the whole job) is looked at for banned words
        only."""
        if not url:
            return None
        url = url[:MAX_URL_CHARS].lower()
        try:
            host, path = _split(url)
        except ValueError:
            host = path = None
        if host is not None:
            if self.domains and any(suffix in self.domains for suffix in _suffixes(host, self.domain_labels)):
                return "url_filter:domain"
            if self.urls and any((host, prefix) in self.urls for prefix in _prefixes(path, self.url_segments)):
                return "url_filter:url"
        if self.words is not None and self.words.search(url):
            return "url_filter:banned_word"
        return None


def _suffixes(host: str, labels: int) -> list[str]:
    """The host's suffixes of at most `labels` labels: a listed domain blocks its subdomains."""
    dots = [i for i, c in enumerate(host) if c == "."]
    return [host] * (len(dots) < labels) + [host[i + 1:] for i in dots[-labels:]] if labels else []


def _prefixes(path: str, segments: int) -> list[str]:
    """The path and each of its parents, of at most `segments` segments: a URL entry blocks the pages under it."""
    parts = path.rstrip("/").split("/")[:segments]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
