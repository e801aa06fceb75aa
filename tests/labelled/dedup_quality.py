"""tokenmill's dedup job on the labelled set (tests/labelled/dedup_set.py), scored against the exact
Jaccard similarities of the shingle sets."""

import tempfile

from tests.labelled.dedup_set import build, jaccard_pairs


def metrics(kept: set[str], ids: list[str], pairs: dict, threshold: float) -> dict:
    removed = [i for i in ids if i not in kept]
    near = {i: set() for i in ids}
    for (a, b), j in pairs.items():
        near[a].add((b, j))
        near[b].add((a, j))
    dup_pairs = [(a, b) for (a, b), j in pairs.items() if j >= threshold]
    return {
        "kept": len(kept), "removed": len(removed), "duplicate_pairs": len(dup_pairs),
        "duplicate_recall": sum(not (a in kept and b in kept) for a, b in dup_pairs) / max(1, len(dup_pairs)),
        "removal_precision": sum(any(o in kept and j >= threshold for o, j in near[r]) for r in removed)
        / max(1, len(removed)),
        "both_kept_at_0.9": sum(a in kept and b in kept for (a, b), j in pairs.items() if j >= 0.9),
        "content_lost": sum(not any(o in kept and j >= 0.5 for o, j in near[r]) for r in removed),
    }


def run_tokenmill(docs, threshold: float, spark) -> set[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from prep.ingest.inputs import single_source
    from spark_stages.dedup import Config, run

    with tempfile.TemporaryDirectory() as folder:
        pq.write_table(pa.Table.from_pylist([{"id": d.id, "text": d.text} for d in docs]), f"{folder}/in.parquet")
        run(spark, single_source(f"{folder}/in.parquet"), Config(threshold=threshold), f"{folder}/out")
        return set(pq.read_table(f"{folder}/out/docs", columns=["id"]).column("id").to_pylist())


def tokenmill_metrics(threshold: float, spark, seed: int = 0) -> dict:
    docs = build(seed)
    return metrics(run_tokenmill(docs, threshold, spark), [d.id for d in docs], jaccard_pairs(docs), threshold)
