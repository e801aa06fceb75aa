"""Mixtures: SHARDS/mixture.json, several shards folders (sources) read together with weights.

mixture.json (MIXTURE_VERSION), written by the pipeline beside its sources' folders:
  format_version, sources: {NAME: {path (the source's shards folder, relative to mixture.json and
  inside its folder, or a URL), weight (positive), rows, tokens (its index totals), and optionally
  heldout (its held-out shards folder, as path)}}, in the order the sources were named.

Every source is a normal shards folder (index.json) written with the same tokenizer and seq_len.

A mixture.json from elsewhere names folders beside it or remote stores (trust.location_from_file),
and its numbers are read within bounds (trust.bounded_json, trust.bounded_decimal): a weight of
"1e100000000" read exactly would take minutes.
"""

import dataclasses
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from schemas.trust import (
    MAX_DIGITS,
    MAX_EXPONENT,
    OutOfBounds,
    RepeatedKey,
    TooLarge,
    UntrustedPath,
    bounded_decimal,
    bounded_json,
    is_url,
    location_from_file,
    open_regular_file,
    valid_unicode,
)

MIXTURE_FILE = "mixture.json"
MIXTURE_VERSION = "1"
SOURCE_KEYS = ("path", "weight", "rows", "tokens")
# What every source must share: the loader puts rows of all of them in one batch.
SHARED_INDEX_KEYS = ("tokenizer_sha256", "vocab_size", "seq_len", "pad_id")
MAX_MIXTURE_BYTES = 1 << 20  # a source's entry is about a hundred bytes: thousands of sources fit
# An integer weight (Fraction or int): those a loader's state saves from bounded decimals stay under 2**400.
MAX_WEIGHT_BITS = 512
MAX_SOURCES = 1024  # sources of a mixture: a schedule costs its sources per row it computes
MAX_TOTAL_BITS = 63  # the integer weights' sum, a schedule's period: an int64 (decimals of 18 digits fit)


class MixtureError(ValueError):
    """A mixture that cannot be read; the message names the source."""


@dataclass(frozen=True)
class MixtureSource:
    path: str  # the source's shards folder: relative to mixture.json and inside its folder, or a URL
    weight: float | int | str  # as written (exact_weight reads it as an exact fraction)
    rows: int  # the source's index totals
    tokens: int
    heldout: str | None = None  # its held-out shards folder (as path), if it has one


@dataclass(frozen=True)
class Mixture:
    sources: dict[str, MixtureSource]  # in the order the sources were named
    format_version: str = MIXTURE_VERSION

    def to_json(self) -> dict:
        return {"format_version": self.format_version,
                "sources": {name: {k: v for k, v in dataclasses.asdict(source).items() if v is not None}
                            for name, source in self.sources.items()}}

    def location(self, mixture_path: Path, name: str, which: str = "path") -> str:
        """Where a source's shards (`which`: "path", or "heldout" for its held-out shards) are: relative to
        mixture.json unless a URL (read_mixture_file checked that a relative one stays inside its folder)."""
        path = getattr(self.sources[name], which)
        return path if is_url(path) else str(mixture_path.parent / path)


def new_mixture(sources: dict[str, tuple]) -> Mixture:
    """The mixture of {name: (relative path, weight, the source's rows, its tokens[, held-out path])}, in order."""
    return Mixture({name: MixtureSource(*entry) for name, entry in sources.items()})


def written_weights(weights: dict[str, Fraction]) -> dict[str, float | int]:
    """Weights as mixture.json holds them: the decimals given where each reads back exactly (0.7, 0.3), else
    whole numbers of the same ratios (1/3 and 1/7 as 7 and 3: a float's 0.333... said other than was given)
    where they sum within what the loader's schedule holds, else floats (1/2 ... 1/53 sum past 2^63)."""
    if all(bounded_decimal(repr(float(w))) == w for w in weights.values()):
        return {name: float(w) for name, w in weights.items()}
    scale = math.lcm(*(w.denominator for w in weights.values()))
    whole = {name: int(w * scale) for name, w in weights.items()}
    common = math.gcd(*whole.values())
    if sum(whole.values()) // common >= 1 << MAX_TOTAL_BITS:  # past what the loader's schedule holds: floats
        return {name: float(w) for name, w in weights.items()}
    return {name: n // common for name, n in whole.items()}


def exact_weight(name: str, weight) -> Fraction:
    """A weight as an exact fraction (decimals taken as written: 0.1 is 1/10, within trust.bounded_decimal's
    bounds); MixtureError if it is not a positive number."""
    value = None
    if isinstance(weight, Fraction):
        bits = max(weight.numerator.bit_length(), weight.denominator.bit_length())
        value = weight if bits <= MAX_WEIGHT_BITS else None
    elif isinstance(weight, int) and not isinstance(weight, bool):
        value = Fraction(weight) if weight.bit_length() <= MAX_WEIGHT_BITS else None
    elif isinstance(weight, float):
        value = bounded_decimal(repr(weight))  # 0.37, 1e-07: as a JSON file or a flag wrote it
    elif isinstance(weight, (str, OutOfBounds)):  # as written; a JSON number past an int64 or a float's bounds
        value = bounded_decimal(weight if isinstance(weight, str) else weight.text)
    if value is None:
        shown = repr(weight) if len(repr(weight)) <= 60 else f"{repr(weight)[:40]}..."
        raise MixtureError(f"source {name!r}: weight {shown} is not a number (at most {MAX_DIGITS} significant "
                           f"digits, exponents within +-{MAX_EXPONENT})")
    if value <= 0:
        raise MixtureError(f"source {name!r}: weight {weight!r} must be a positive number")
    return value


def parse_weights(text: str) -> dict[str, Fraction]:
    """`web=0.6,zh=0.3,code=0.1` as exact weights, in order; MixtureError naming the bad part."""
    weights: dict[str, Fraction] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, equals, value = part.partition("=")
        if not equals or not name.strip():
            raise MixtureError(f"weights: {part!r} is not NAME=WEIGHT")
        if name.strip() in weights:
            raise MixtureError(f"weights: source {name.strip()!r} is given twice")
        weights[name.strip()] = exact_weight(name.strip(), value.strip())
    return weights


def read_mixture_file(path: Path) -> Mixture:
    """mixture.json's content, its structure checked; MixtureError naming the file or the source."""
    try:
        with open_regular_file(path) as file:
            data = bounded_json(file.read(MAX_MIXTURE_BYTES + 1), MAX_MIXTURE_BYTES)
    except FileNotFoundError:
        raise MixtureError(f"{path}: missing") from None
    except (TooLarge, UntrustedPath, RepeatedKey) as e:
        raise MixtureError(f"{path}: {e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise MixtureError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("format_version") != MIXTURE_VERSION:
        raise MixtureError(f"{path}: format_version must be {MIXTURE_VERSION!r}")
    if not isinstance(data.get("sources"), dict) or not data["sources"]:
        raise MixtureError(f"{path}: 'sources' must map at least one name to its shards folder")
    for name, entry in data["sources"].items():
        if not valid_unicode(name):  # a name seeds its source's order, as UTF-8
            raise MixtureError(f"{path}: a source's name that is not valid Unicode (an unpaired surrogate)")
        absent = [k for k in SOURCE_KEYS if not isinstance(entry, dict) or k not in entry]
        if absent:
            raise MixtureError(f"{path}: source {name!r} lacks {', '.join(absent)}")
        for key in ("path", "heldout") if entry.get("heldout") is not None else ("path",):
            try:
                location_from_file(entry[key], f"source {name!r}: {key}")
            except ValueError as e:
                raise MixtureError(f"{path}: {e}") from None
        exact_weight(name, entry["weight"])
        if not all(isinstance(entry[k], int) and not isinstance(entry[k], bool) and entry[k] >= 0
                   for k in ("rows", "tokens")):
            raise MixtureError(f"{path}: source {name!r}: rows and tokens must be counts")
    return Mixture({name: MixtureSource(*(entry[k] for k in SOURCE_KEYS), entry.get("heldout"))
                    for name, entry in data["sources"].items()})
