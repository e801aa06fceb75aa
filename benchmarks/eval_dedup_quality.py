"""Duplicate recall and removal precision of the dedup job against exact Jaccard ground truth, next to
datasketch's MinHashLSH on the same labelled set (tests/labelled/dedup_set.py).

    python -m benchmarks.eval_dedup_quality [--threshold 0.8]

Definitions, at the threshold t (default 0.8):
  duplicate recall   = pairs with J >= t of which not both documents are kept / pairs with J >= t
  removal precision  = removed documents that have a kept document with J >= t / removed documents
  J>=0.9 both kept   = pairs with J >= 0.9 where both documents are kept (the bar: 0)
  content lost       = removed documents with no kept document at J >= 0.5 (the bar: 0)
"""

import argparse

from datasketch import MinHash, MinHashLSH

from prep.dedup.shingles import shingles
from tests.labelled.dedup_quality import metrics, run_tokenmill
from tests.labelled.dedup_set import build, jaccard_pairs


def run_datasketch(docs, threshold: float) -> set[str]:
    """The usual datasketch recipe: longest first, keep a document unless the index returns a kept one."""
    lsh, kept = MinHashLSH(threshold=threshold, num_perm=128), set()
    for doc in sorted(docs, key=lambda d: -len(d.text)):
        m = MinHash(num_perm=128)
        m.update_batch([s.encode("utf-8") for s in shingles(doc.text, 5)])
        if not lsh.query(m):
            lsh.insert(doc.id, m)
            kept.add(doc.id)
    return kept


def evaluate(threshold: float = 0.8, spark=None, seed: int = 0) -> dict:
    docs = build(seed)
    pairs = jaccard_pairs(docs)
    ids = [d.id for d in docs]
    return {"tokenmill": metrics(run_tokenmill(docs, threshold, spark), ids, pairs, threshold),
            "datasketch MinHashLSH": metrics(run_datasketch(docs, threshold), ids, pairs, threshold),
            "documents": len(docs)}


def main():
    from spark_stages.session import get_spark

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=0.8)
    args = parser.parse_args()
    result = evaluate(args.threshold, get_spark("eval-dedup", ["spark.master=local[2]"]))
    print(f"{result['documents']} documents (English and Chinese originals and edited copies), "
          f"threshold {args.threshold}\n")
    print("| tool | kept | removed | duplicate recall | removal precision | J>=0.9 both kept | content lost |")
    print("|---|---|---|---|---|---|---|")
    for tool in ("tokenmill", "datasketch MinHashLSH"):
        m = result[tool]
        print(f"| {tool} | {m['kept']} | {m['removed']} | {m['duplicate_recall']:.1%} | {m['removal_precision']:.1%} "
              f"| {m['both_kept_at_0.9']} | {m['content_lost']} |")


if __name__ == "__main__":
    main()
