"""Runs datatrove's Gopher, C4 and FineWeb filters over a JSON Lines file; prints JSON timings.

Executed by bench_clean.py with the Python of a throwaway venv that has datatrove (it is not a
dependency of tokenmill). Filters run in sequence as in a datatrove pipeline: a document rejected by
one filter is not seen by the next. C4 runs as FineWeb ran it (no terminal-punctuation line rule).
"""

import json
import sys
import time

from datatrove.data import Document
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        docs = [Document(text=json.loads(line)["text"], id=str(i)) for i, line in enumerate(f)]
    filters = [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
               FineWebQualityFilter()]
    filters[1].filter(Document(text="warm up the word tokenizer", id="w"))
    started = time.perf_counter()
    kept = 0
    for doc in docs:
        for step in filters:
            result = step.filter(doc)
            if result is not True and (not isinstance(result, tuple) or result[0] is not True):
                break
        else:
            kept += 1
    print(json.dumps({"seconds": time.perf_counter() - started, "docs": len(docs), "kept": kept}))


if __name__ == "__main__":
    main(sys.argv[1])
