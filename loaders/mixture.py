"""Mixtures: several shards folders with weights, and how many rows each gets in every global batch.

The schedule is Balinski and Young's quota method, run row by row over the global stream: the next
row goes to the source with the largest weight / (rows it has + 1) among those that would not pass
their upper quota, ceil(rows so far x weight). It is house monotone (a source's count never falls
as rows are added) and keeps every source within its quota at every row, so after every global
batch each source's cumulative rows are within one row of its exact share: floor(share) or
ceil(share), never a random draw. Weights are read as exact decimals and compared in integers, so
the schedule is the same on every machine.

The format of mixture.json is in schemas/mixture.py.
"""

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm
from pathlib import Path

from schemas.mixture import MixtureError, exact_weight, read_mixture_file, source_location


@dataclass(frozen=True)
class Source:
    name: str
    location: str  # a shards folder or URL
    weight: int  # integers with the weights' ratios (see integer_weights)


def integer_weights(weights: dict[str, float | str | Fraction]) -> dict[str, int]:
    """The smallest integers with the weights' exact ratios (decimals as written: 0.37 is 37/100), so
    that the schedule is the same on every machine and equal ratios compare equal."""
    exact = {name: exact_weight(name, weight) for name, weight in weights.items()}
    scale = lcm(*(value.denominator for value in exact.values()))
    integers = {name: int(value * scale) for name, value in exact.items()}
    common = gcd(*integers.values())
    return {name: value // common for name, value in integers.items()}


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
    """The sources of a mixture.json, in its order; errors name the source."""
    data = read_mixture_file(Path(path))
    entries = data["sources"]
    weights = integer_weights({name: entry["weight"] for name, entry in entries.items()})
    return [Source(name, source_location(Path(path), entry), weights[name]) for name, entry in entries.items()]


def sources_of(mixture, weights: dict[str, float] | None = None) -> list[Source]:
    """The sources of what ShardLoader was given: a mixture.json path (`weights` replace its own), a
    {name: location} dict with `weights`, or one shards folder (one source, "default")."""
    if isinstance(mixture, dict):
        named = {name: str(location) for name, location in mixture.items()}
    elif str(mixture).endswith(".json"):
        sources = read_mixture(str(mixture))
        named = {s.name: s.location for s in sources}
        weights = weights or {s.name: s.weight for s in sources}
    else:
        return [Source("default", str(mixture), 1)]
    if not named:
        raise MixtureError("a mixture needs at least one source")
    if weights is None or set(weights) != set(named):
        raise MixtureError(f"weights {weights} must name exactly the sources {list(named)}")
    exact = integer_weights(weights)
    return [Source(name, location, exact[name]) for name, location in named.items()]
