"""Mixtures: several shards folders with weights, and how many rows each gets in every global batch.

The schedule is Balinski and Young's quota method, run row by row over the global stream: the next
row goes to the source with the largest weight / (rows it has + 1) among those that would not pass
their upper quota, ceil(rows so far x weight). It is house monotone (a source's count never falls
as rows are added) and keeps every source within its quota at every row, so after every global
batch each source's cumulative rows are within one row of its exact share: floor(share) or
ceil(share), never a random draw. Weights are read as exact decimals and compared in integers, so
the schedule is the same on every machine.

mixture.json (written by the pipeline beside the sources' shards folders):
    {"format_version": "1", "sources": {NAME: {"path": relative folder, "weight": w, "rows": r, "tokens": t}}}
"""

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

MIXTURE_FILE = "mixture.json"
MIXTURE_VERSION = "1"


class MixtureError(ValueError):
    """A mixture that cannot be read; the message names the source."""


@dataclass(frozen=True)
class Source:
    name: str
    location: str  # a shards folder or URL
    weight: Fraction


def integer_weights(weights: dict[str, float | str | Fraction]) -> dict[str, int]:
    """Weights as integers with the same ratios (decimals taken exactly: 0.1 is 1/10)."""
    exact = {}
    for name, weight in weights.items():
        try:
            exact[name] = Fraction(str(weight)) if not isinstance(weight, Fraction) else weight
        except (ValueError, ZeroDivisionError):
            raise MixtureError(f"source {name!r}: weight {weight!r} is not a number") from None
        if exact[name] <= 0:
            raise MixtureError(f"source {name!r}: weight {weight} must be positive")
    denominator = 1
    for value in exact.values():
        denominator = denominator * value.denominator // _gcd(denominator, value.denominator)
    return {name: int(value * denominator) for name, value in exact.items()}


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def allocate(weights: list[int], counts: list[int], rows: int) -> list[int]:
    """Rows each source gets of the next `rows`, given the rows each has had since the weights took
    effect (`counts`): the quota method, row by row, in integers. Ties go to the earlier source."""
    total, counts = sum(weights), list(counts)
    served = sum(counts)
    given = [0] * len(weights)
    for _ in range(rows):
        served += 1
        best = -1
        for i, weight in enumerate(weights):
            if counts[i] * total >= served * weight:  # one more would pass the upper quota
                continue
            if best < 0 or weight * (counts[best] + 1) > weights[best] * (counts[i] + 1):
                best = i
        counts[best] += 1
        given[best] += 1
    return given


def read_mixture(path: str) -> list[Source]:
    """The sources of a mixture.json (paths relative to it); errors name the source."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MixtureError(f"{path}: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MixtureError(f"{path}: not JSON: {e}") from None
    if data.get("format_version") != MIXTURE_VERSION or not isinstance(data.get("sources"), dict) \
            or not data["sources"]:
        raise MixtureError(f"{path}: not a mixture (format_version {MIXTURE_VERSION} and a non-empty 'sources')")
    sources = []
    for name, entry in data["sources"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise MixtureError(f"{path}: source {name!r} has no 'path'")
        location = entry["path"] if "://" in entry["path"] else str(file.parent / entry["path"])
        sources.append((name, location, entry.get("weight")))
    weights = integer_weights({name: weight for name, _, weight in sources})
    return [Source(name, location, Fraction(weights[name])) for name, location, _ in sources]


def sources_of(mixture, weights: dict[str, float] | None) -> list[Source]:
    """The sources of what ShardLoader was given: a mixture.json path, a {name: location} dict (with
    `weights`), or one shards folder (one source, "default")."""
    if isinstance(mixture, dict):
        if weights is None or set(weights) != set(mixture):
            raise MixtureError(f"weights {weights} must name exactly the sources {sorted(mixture)}")
        exact = integer_weights(weights)
        return [Source(name, str(location), Fraction(exact[name])) for name, location in mixture.items()]
    if str(mixture).endswith(".json"):
        sources = read_mixture(str(mixture))
        if weights is not None:
            if set(weights) != {s.name for s in sources}:
                raise MixtureError(f"weights {weights} must name exactly the sources {[s.name for s in sources]}")
            exact = integer_weights(weights)
            sources = [Source(s.name, s.location, Fraction(exact[s.name])) for s in sources]
        return sources
    return [Source("default", str(mixture), Fraction(1))]
