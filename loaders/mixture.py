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

import numpy as np

from schemas.mixture import (
    MAX_SOURCES,
    MAX_TOTAL_BITS,
    MAX_WEIGHT_BITS,
    MixtureError,
    exact_weight,
    read_mixture_file,
)


@dataclass(frozen=True)
class Source:
    name: str
    location: str  # a shards folder or URL
    weight: int  # integers with the weights' ratios (see integer_weights)


def integer_weights(weights: dict[str, float | str | Fraction]) -> dict[str, int]:
    """The smallest integers with the weights' exact ratios (decimals as written: 0.37 is 37/100), so
    that the schedule is the same on every machine and equal ratios compare equal. Weights come from a file
    from elsewhere: more than MAX_SOURCES, or ratios whose integers sum past 2^MAX_TOTAL_BITS, are a
    MixtureError (2,000 weights 1/n of 30-digit n made integers of 177,213 bits: 14 s to find, and seconds
    a batch to schedule)."""
    if len(weights) > MAX_SOURCES:
        raise MixtureError(f"{len(weights):,} sources: a mixture has at most {MAX_SOURCES:,}")
    exact = {name: exact_weight(name, weight) for name, weight in weights.items()}
    shown = ", ".join(f"{name}={weight}" for name, weight in list(weights.items())[:3])
    too_fine = MixtureError(f"weights {shown}{', ...' if len(weights) > 3 else ''}: their exact ratios need "
                            f"integers past 2^{MAX_TOTAL_BITS} in all; give them with fewer digits")
    scale = 1
    for value in exact.values():
        scale = lcm(scale, value.denominator)
        # the common factor taken out below shares no prime with scale, so each integer is at least
        # scale / its denominator (< 2^MAX_WEIGHT_BITS): past this bound their sum is past its own
        if scale.bit_length() > MAX_TOTAL_BITS + MAX_WEIGHT_BITS + 1:
            raise too_fine
    integers = {name: int(value * scale) for name, value in exact.items()}
    common = gcd(*integers.values())
    smallest = {name: value // common for name, value in integers.items()}
    if sum(smallest.values()).bit_length() > MAX_TOTAL_BITS:
        raise too_fine
    return smallest


def picks(weights: list[int], counts: list[int], rows: int):
    """The source of each of the next `rows` rows, given the rows each has had since the weights took
    effect (`counts`): the quota method, row by row, in integers. Ties go to the earlier source."""
    total, counts = sum(weights), list(counts)
    served = sum(counts)
    for _ in range(rows):
        served += 1
        best = -1
        for i, weight in enumerate(weights):
            if counts[i] * total >= served * weight:  # one more would pass the upper quota
                continue
            if best < 0 or weight * (counts[best] + 1) > weights[best] * (counts[i] + 1):
                best = i
        counts[best] += 1
        yield best


def allocate(weights: list[int], counts: list[int], rows: int) -> list[int]:
    """Rows each source gets of the next `rows` (see picks), from `counts` the schedule reached: whole periods of
    sum(weights) rows at once (in one, every source gets its weight: Schedule), the rest row by row, so at most
    a period's rows (a stretch of 4e12 rows skipped had been picked row by row)."""
    periods, rows = divmod(rows, sum(weights))
    given = [periods * weight for weight in weights]
    for source in picks(weights, counts, rows):
        given[source] += 1
    return given


class Schedule:
    """allocate() from where the weights took effect, by table: after sum(weights) rows every source
    has exactly its weight in rows, and the quota method's tests are unchanged by adding each source's
    weight to its count and the sum to the rows served, so the picks repeat with that period. One period
    is tabled (when it is at most MAX_PERIOD rows and the table at most MAX_TABLE numbers, 64 MB; longer
    ones are computed row by row)."""

    MAX_PERIOD = 1 << 16
    MAX_TABLE = 1 << 23

    def __init__(self, weights: list[int]):
        self.weights, self.period = list(weights), sum(weights)
        self._table = None
        if self.period <= self.MAX_PERIOD and (self.period + 1) * len(weights) <= self.MAX_TABLE:
            one_hot = np.zeros((self.period + 1, len(weights)), np.int64)
            one_hot[np.arange(1, self.period + 1), list(picks(self.weights, [0] * len(weights), self.period))] = 1
            self._table = np.cumsum(one_hot, axis=0)  # rows of each source among the first n of a period

    def _counts(self, served: int) -> np.ndarray:
        periods, within = divmod(served, self.period)
        return periods * np.asarray(self.weights, np.int64) + self._table[within]

    def reaches(self, counts: list[int]) -> bool:
        """Whether the schedule gives each source `counts` rows of the first sum(counts): exactly, by the table;
        untabled, within the quota method's bounds (each within a row of its exact share), which it always is."""
        if len(self.weights) == 1:
            return True
        served = sum(counts)
        if self._table is not None:
            return self._counts(served).tolist() == list(counts)
        return all(served * w // self.period <= c <= -(-served * w // self.period)
                   for w, c in zip(self.weights, counts))

    def rows(self, counts: list[int], rows: int) -> list[int]:
        """Rows each source gets of the next `rows`, each having had `counts` since the weights took effect."""
        if len(self.weights) == 1:  # one folder: no schedule
            return [rows]
        if self._table is None:
            return allocate(self.weights, counts, rows)
        served = sum(counts)
        return (self._counts(served + rows) - self._counts(served)).tolist()


def read_mixture(path: str) -> list[Source]:
    """The sources of a mixture.json, in its order; errors name the source."""
    mixture = read_mixture_file(Path(path))
    try:
        weights = integer_weights({name: source.weight for name, source in mixture.sources.items()})
    except MixtureError as e:
        raise MixtureError(f"{path}: {e}") from None
    return [Source(name, mixture.location(Path(path), name), weights[name]) for name in mixture.sources]


def sources_of(mixture, weights: dict[str, float] | None = None) -> list[Source]:
    """The sources of what ShardLoader was given: a mixture.json path (`weights` replace its own), a
    {name: location} dict with `weights`, or one shards folder (one source, "default")."""
    if isinstance(mixture, dict):
        named = {name: str(location) for name, location in mixture.items()}
    elif str(mixture).endswith(".json"):
        sources = read_mixture(str(mixture))
        named = {s.name: s.location for s in sources}
        weights = weights or {s.name: s.weight for s in sources}
    elif weights is not None:
        raise MixtureError(f"weights of {', '.join(map(str, weights))} need a mixture: a mixture.json or a "
                           f"{{name: folder}} dict, not the one folder {mixture}")
    else:
        return [Source("default", str(mixture), 1)]
    if not named:
        raise MixtureError("a mixture needs at least one source")
    if weights is None or set(weights) != set(named):
        raise MixtureError(f"weights {weights} must name exactly the sources {list(named)}")
    exact = integer_weights(weights)
    return [Source(name, location, exact[name]) for name, location in named.items()]
