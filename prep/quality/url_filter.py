"""The URL filter: documents from blocked sites or pages, or whose URL holds a banned word, are rejected
with `url_filter:<reason>` (domain, url or banned_word). Documents without a URL pass.

Blocklists are files the user has (none is downloaded at run time): a plain list, one domain or URL a
line (`#` starts a comment), or a folder in the layout of the Université Toulouse 1 Capitole list
(UT1, https://dsi.ut-capitole.fr/blacklists/: one folder per category, each with `domains` and `urls`
files), of which `categories` chooses some (all when empty). A blocked domain blocks its subdomains:
`example.com` blocks `www.example.com`. A URL entry blocks that page and everything under it. The
lists are read once, on the driver, and shipped to the tasks with the job.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit


@dataclass
class UrlFilterConfig:
    blocklists: list[str] = field(default_factory=list)  # files or UT1-style folders of blocked domains and URLs
    categories: list[str] = field(default_factory=list)  # of a UT1-style folder, the categories to block (all: empty)
    banned_words: list[str] = field(default_factory=list)  # a URL holding one of these words (as a word) is rejected

    def __post_init__(self):  # where a config is made (the driver): a list that is not there stops the job at once
        if missing := [path for path in self.blocklists if not Path(path).exists()]:
            raise ValueError(f"blocklists: {', '.join(missing)} does not exist")


def _entries(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.split("#", 1)[0].strip().lower() for line in lines if line.split("#", 1)[0].strip()]


def _split(entry: str) -> tuple[str, str]:
    """(host, path) of a list entry, with or without its scheme."""
    parts = urlsplit(entry if "://" in entry else f"//{entry}")
    return (parts.hostname or "").removeprefix("www."), parts.path.rstrip("/")


class UrlFilter:
    """The filter of a config, its lists read."""

    def __init__(self, cfg: UrlFilterConfig):
        self.domains: set[str] = set()
        self.urls: set[tuple[str, str]] = set()
        for listed in map(Path, cfg.blocklists):
            files = ([listed] if listed.is_file() else
                     [listed / category / kind for category in sorted(cfg.categories or
                                                                      (p.name for p in listed.iterdir() if p.is_dir()))
                      for kind in ("domains", "urls") if (listed / category / kind).is_file()])
            for path in files:
                for entry in _entries(path):
                    host, page = _split(entry)
                    if page and path.name != "domains":
                        self.urls.add((host, page))
                    elif host:
                        self.domains.add(host)
        words = [re.escape(w.lower()) for w in cfg.banned_words if w.strip()]
        self.words = re.compile(rf"(?<![a-z0-9])(?:{'|'.join(words)})(?![a-z0-9])") if words else None

    def __bool__(self) -> bool:
        return bool(self.domains or self.urls or self.words)

    def reason(self, url: str | None) -> str | None:
        """Why a document of this URL is rejected, or None (also for no URL)."""
        if not url:
            return None
        host, path = _split(url.lower())
        labels = host.split(".")
        if any(".".join(labels[i:]) in self.domains for i in range(len(labels))):
            return "url_filter:domain"
        if self.urls and any((host, prefix) in self.urls for prefix in _prefixes(path)):
            return "url_filter:url"
        if self.words is not None and self.words.search(url.lower()):
            return "url_filter:banned_word"
        return None


def _prefixes(path: str) -> list[str]:
    """The path and each of its parents: a URL entry blocks the pages under it."""
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
