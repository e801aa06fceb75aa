"""What a report shows, as plain data: the gatherers fill it from the outputs, the renderers turn it into
HTML. Nothing here is markup: every string is text, escaped where it is written out (report/html.py)."""

import math
from dataclasses import dataclass, field


def whole(value, limit: int = 2**63) -> int | None:
    """A whole number of a file from elsewhere: an int from 0 to below `limit` (not a bool, not a text of
    one), else None ("quarantined": "3" failed the stage where it was printed as a count; a list there, the
    funnel's chart)."""
    return value if type(value) is int and 0 <= value < limit else None


def mapping(value) -> dict:
    """A mapping of a file from elsewhere, else an empty one ("held_out": [1] hid the tokenizer's stage)."""
    return value if isinstance(value, dict) else {}


def finite(value) -> float | None:
    """A number of a file from elsewhere as a finite float, else None (an int of 400 digits is no float)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Mark:
    """A stretch of a document's text to mark: what a stage cut, replaced or matched there."""
    start: int
    end: int
    kind: str  # span (a benchmark match), window (cut with it), pii (a replacement), or changed
    title: str = ""


@dataclass
class Document:
    """A document as shown: an excerpt of its text, a few labelled fields, what is marked in it."""
    id: str
    text: str
    fields: dict[str, str] = field(default_factory=dict)
    marks: list[Mark] = field(default_factory=list)
    note: str = ""  # e.g. "characters 1,200-2,700 of 5,000"


@dataclass
class Reason:
    """One reason a stage removed documents, with its count, its share of the stage's input and examples."""
    name: str
    count: int
    share: float
    documents: list[Document] = field(default_factory=list)
    note: str = ""


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list]
    note: str = ""


@dataclass
class Bars:
    """A horizontal bar chart of named values."""
    title: str
    values: dict[str, float]
    unit: str = ""
    note: str = ""


@dataclass
class Histogram:
    """Counts over bins, one series or several drawn side by side (kept and rejected)."""
    title: str
    labels: list[str]  # one per bin
    series: dict[str, list[int]]
    note: str = ""


@dataclass
class Cluster:
    """A dedup cluster: its survivor, and members with their estimated similarity to it and whether each is an
    exact duplicate of it (the same text once normalized as dedup normalizes it; None: a text not at hand)."""
    title: str
    size: int
    survivor: Document | None
    members: list[tuple[Document, float | None, bool | None]]
    note: str = ""


@dataclass
class Match:
    """A benchmark item and the spans of the documents it matched."""
    benchmark: str
    item: str
    item_text: str | None
    spans: list[Document]  # each with the span and its window marked, the score and kind in its fields
    found_in: int  # spans in the output for this item (more than shown when capped)


@dataclass
class Pair:
    """A document's two fates in two runs, side by side."""
    left: Document | None
    right: Document | None


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)  # Table, Bars, Histogram, Reason, Cluster, Match, Pair, Text, Note


@dataclass
class Text:
    """Preformatted text: the settings' YAML."""
    title: str
    text: str


@dataclass
class Note:
    text: str


@dataclass
class FunnelRow:
    """Documents, bytes, tokens and seconds into and out of one stage (of one source)."""
    stage: str
    source: str
    input: int | None
    kept: int | None
    removed: int | None
    quarantined: int | None
    text_bytes: int | None = None  # text kept, UTF-8
    bytes_exact: bool = True  # False: estimated from the share of the output read
    tokens: int | None = None
    tokens_exact: bool = True  # False: the text bytes over the tokenizer's bytes per token (held out)
    seconds: float | None = None

    def __post_init__(self):
        # read from a stats.json that may come from elsewhere: a count of another type is not shown (a list
        # there failed the whole report where the funnel's chart divides by it)
        for name in ("input", "kept", "removed", "quarantined", "text_bytes", "tokens"):
            setattr(self, name, whole(getattr(self, name)))  # (a 400-digit count could not be drawn)
        self.seconds = finite(self.seconds)


@dataclass
class StageView:
    key: str  # unique in the run: clean, clean/web, ...
    title: str
    folder: str  # relative to the run's folder
    funnel: list[FunnelRow]
    sections: list[Section]


@dataclass
class RunView:
    folder: str
    job: str  # the job that wrote it (run.json), or what its files say
    stages: list[StageView]
    settings: str | None  # the --print-config YAML of the run, when it was recorded
    facts: dict[str, str]  # version, when, inputs
