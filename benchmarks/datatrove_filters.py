"""Runs datatrove's Gopher, C4 and FineWeb filters over a JSON Lines file; prints JSON timings.

Executed by bench_clean.py and bench_scale.py (a folder, N processes) with the Python of a throwaway
venv that has datatrove (it is not a dependency of tokenmill). Filters run in sequence as in a
datatrove pipeline: a document rejected by one filter is not seen by the next. C4 runs as FineWeb
ran it (no terminal-punctuation line rule).
"""

import glob
import json
import multiprocessing
import os
import sys
import time

from datatrove.data import Document
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)


def filtered(paths: list[str]) -> tuple[int, int]:
    """(documents, kept) of the JSON Lines files."""
    filters = [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
               FineWebQualityFilter()]
    count = kept = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                doc, count = Document(text=json.loads(line)["text"], id=str(i)), count + 1
                for step in filters:
                    result = step.filter(doc)
                    if result is not True and (not isinstance(result, tuple) or result[0] is not True):
                        break
                else:
                    kept += 1
    return count, kept


def main(path: str, processes: int = 1) -> None:
    """path: a JSON Lines file, or a folder of them split among `processes` (reading included in the time)."""
    paths = sorted(glob.glob(os.path.join(path, "*.jsonl"))) if os.path.isdir(path) else [path]
    GopherQualityFilter().filter(Document(text="warm up the word tokenizer", id="w"))
    started = time.perf_counter()
    if processes == 1:
        results = [filtered(paths)]
    else:
        with multiprocessing.Pool(processes) as pool:
            results = pool.map(filtered, [paths[i::processes] for i in range(processes)])
    print(json.dumps({"seconds": time.perf_counter() - started, "docs": sum(r[0] for r in results),
                      "kept": sum(r[1] for r in results)}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
