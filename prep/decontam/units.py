"""Texts as the units decontamination matches: dedup's normalization (prep/dedup/shingles.py: NFKC,
case, punctuation, width, white space and line breaks do not matter; a word, or one Han, kana or
Hangul character, is a unit), each unit with a 32-bit hash and the span of the original text it
came from, so that a match found on units cuts the right characters.

One compiled pass over a batch's code points, as the MinHash kernel (prep/dedup/minhash.py): no
Python runs per character or unit.
"""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from prep.cjk import HAN_KANA, HANGUL
from prep.compiled import code_points_of, kernel
from prep.dedup.shingles import CodePointTable

_CODE_POINTS = CodePointTable()
CJK_RANGES = np.array(HAN_KANA + HANGUL, np.uint32)
FNV_OFFSET = np.uint32(0x811C9DC5)
FNV_PRIME = np.uint32(0x01000193)


@dataclass
class Units:
    """The units of a batch of texts, one after another; text d's are [starts[d], starts[d + 1])."""
    hashes: np.ndarray  # uint32: FNV-1a of the unit's normalized code points
    begin: np.ndarray  # int64: the unit's first character (code point) in its text
    end: np.ndarray  # int64: one past its last character
    cjk: np.ndarray  # bool: a Han, kana or Hangul character
    starts: np.ndarray  # int64 [texts + 1]

    def of(self, d: int) -> np.ndarray:
        return self.hashes[self.starts[d]:self.starts[d + 1]]


def units_of(texts: "list[str] | pa.StringArray") -> Units:
    code_points, starts = code_points_of(texts)
    _CODE_POINTS.cover(code_points)
    # k units of one text take at least 2k - 1 normalized characters (a space between two)
    room = int(_CODE_POINTS.length[code_points].sum(dtype=np.int64)) // 2 + len(starts)
    hashes, begin, end = np.empty(room, np.uint32), np.empty(room, np.int64), np.empty(room, np.int64)
    cjk, unit_starts = np.empty(room, np.bool_), np.empty(len(starts), np.int64)
    n = _units_kernel(code_points, starts, _CODE_POINTS.start, _CODE_POINTS.length, _CODE_POINTS.data, CJK_RANGES,
                      hashes, begin, end, cjk, unit_starts)
    return Units(hashes[:n], begin[:n], end[:n], cjk[:n], unit_starts)


@kernel
def _is_cjk(cp, ranges) -> bool:
    for k in range(len(ranges)):
        if ranges[k, 0] <= cp <= ranges[k, 1]:
            return True
    return False


@kernel
def _units_kernel(code_points, starts, table_start, table_length, table_data, cjk_ranges,
                  hashes, begin, end, cjk, unit_starts):
    n = 0
    for d in range(len(starts) - 1):
        unit_starts[d] = n
        first = starts[d]
        in_unit = False
        for i in range(first, starts[d + 1]):
            cp = code_points[i]
            for j in range(table_start[cp], table_start[cp] + table_length[cp]):
                c = table_data[j]
                if c == 32:  # a separator: the open unit, if any, ends
                    if in_unit:
                        n += 1
                        in_unit = False
                    continue
                if not in_unit:
                    in_unit = True
                    hashes[n] = FNV_OFFSET
                    begin[n] = i - first
                    cjk[n] = _is_cjk(cp, cjk_ranges)
                hashes[n] = (hashes[n] ^ np.uint32(c)) * FNV_PRIME
                end[n] = i - first + 1
        if in_unit:
            n += 1
    unit_starts[len(starts) - 1] = n
    return n
