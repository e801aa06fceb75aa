"""datatrove's n-gram decontamination (datatrove.pipeline.decont), offline, on our own benchmark items.

Run with the Python of the throwaway venv that bench_clean.datatrove_python() makes (datatrove is not a
tokenmill dependency):

    .bench/datatrove-venv/bin/python benchmarks/datatrove_decont.py --items ITEMS.jsonl --docs DOCS.jsonl \
        --out RESULT.json [--n 13]

Writes RESULT.json: {"flagged": [ids of the documents the filter drops], "index_seconds", "filter_seconds",
"documents", "bytes" (UTF-8 bytes of the documents' text), "n", "datatrove_version"}.

Settings: NGramsDecontConfig(n_grams=--n), everything else datatrove's default: TextNormConfig() (lowercase,
numbers -> "0", punctuation -> space, whitespace collapsed, diacritics stripped after NFD; weekdays and month
names left alone), HashConfig() (xxhash64 of the space-joined n-gram, stored as little-endian uint64),
language English (datatrove's SpaCyTokenizer, spacy.blank("en")). Each item's text is taken as the "label"
(gold answer) with no query, so its index holds the hashes of every n-gram of the item's text (an item with
fewer than n words adds nothing); find_query_ngrams and find_overlap_ngrams have nothing to act on.

Bypassing lighteval: NGramsDecontIndexer declares lighteval as a dependency (PipelineStep.__new__ refuses to
build it without) and its run() always loads lighteval tasks from the Hugging Face hub after the documents it
is given. So the indexer is created with object.__new__ (skipping only that dependency check), its own
__init__ and compute_hashes() are used unchanged, and the hashes are written the way its run() writes them:
one file <task>.index.hashes of raw uint64 in the index folder (here items.index.hashes in a temporary folder).
NGramsDecontFilter is used as is: it loads every **/*.index.hashes file under its index folder into one dict
hash -> task, and for each document drops it whole on the first n-gram of the document whose hash is in the
index (no frequency cut-off, no partial removal).

Timings: index_seconds covers hashing the items, writing the index file and the filter loading it
(load_index_hashes). filter_seconds covers NGramsDecontFilter.run() over all documents in this one process.
Reading the JSON Lines files, making the Document objects and loading the spaCy tokenizers (done once by a
warm-up call) are in neither.
"""

import argparse
import importlib.metadata
import json
import tempfile
import time

import numpy as np
from datatrove.data import Document
from datatrove.pipeline.decont import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer

TASK = "items"


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def make_indexer(index_folder: str, config: NGramsDecontConfig) -> NGramsDecontIndexer:
    # object.__new__ skips PipelineStep.__new__, whose only job is refusing to build this step without lighteval.
    indexer = object.__new__(NGramsDecontIndexer)
    indexer.__init__(index_folder, config=config)
    return indexer


def write_index(indexer: NGramsDecontIndexer, texts: list[str]) -> int:
    """The data half of NGramsDecontIndexer.run(), without its lighteval half: hashes into a set, then one file."""
    hashes: set[int] = set()
    for text in texts:
        hashes.update(indexer.compute_hashes(text))
    array = np.array(list(hashes), dtype=indexer.config.hash_config.np_descr)
    with indexer.output_folder.open(f"{TASK}.index.hashes", mode="wb") as f:
        array.tofile(f)
    return len(hashes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", required=True, help="JSON Lines of benchmark items, {'id', 'text'}")
    parser.add_argument("--docs", required=True, help="JSON Lines of documents, {'id', 'text'}")
    parser.add_argument("--out", required=True, help="where to write the result JSON")
    parser.add_argument("--n", type=int, default=13, help="n-gram size (datatrove's default is 12)")
    args = parser.parse_args()

    items = read_jsonl(args.items)
    rows = read_jsonl(args.docs)
    # datatrove ids are strings; the position maps back to the caller's id, whatever its type.
    docs = [Document(text=row["text"], id=str(i)) for i, row in enumerate(rows)]
    config = NGramsDecontConfig(n_grams=args.n)

    with tempfile.TemporaryDirectory(prefix="datatrove-decont-") as index_folder:
        indexer = make_indexer(index_folder, config)
        decont = NGramsDecontFilter(index_folder, config=config)
        indexer.tokenizer.word_tokenize("warm up")  # loads spaCy outside the timings
        decont.tokenizer.word_tokenize("warm up")

        started = time.perf_counter()
        write_index(indexer, [item["text"] for item in items])
        decont.load_index_hashes()
        index_seconds = time.perf_counter() - started

        started = time.perf_counter()
        kept = {doc.id for doc in decont.run(iter(docs))}
        filter_seconds = time.perf_counter() - started

    result = {
        "flagged": [row["id"] for i, row in enumerate(rows) if str(i) not in kept],
        "index_seconds": index_seconds,
        "filter_seconds": filter_seconds,
        "documents": len(rows),
        "bytes": sum(len(row["text"].encode("utf-8")) for row in rows),
        "n": args.n,
        "datatrove_version": importlib.metadata.version("datatrove"),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
