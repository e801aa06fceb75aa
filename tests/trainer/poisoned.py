"""Shards with stretches of the data order poisoned by random tokens, and what a guarded run did with them:
shared by tests/trainer/test_guard.py and benchmarks/guard_demo.py.

A stretch is (first global batch, batches); its rows are those the loader serves at those batches' global
positions (loaders/order.py), replaced by random token ids, so a run meets them exactly there.
"""

import json
from pathlib import Path

import numpy as np

from loaders.order import GlobalOrder, OrderConfig
from prep.tokenizer.encode import TokenizerFile
from tests.shard_fixtures import write_text_shards

FILES = ("debian-faq.en", "debian-faq.zh", "debian-reference.en")  # 1,547 rows of 256 tokens
HELDOUT_FILES = ("licenses.en",)  # text none of the runs trains on


def poisoned_positions(stretches: list[tuple[int, int]], batch: int) -> set[int]:
    return {p for first, length in stretches for p in range(first * batch, (first + length) * batch)}


def write_shards(folder: Path, stretches: list[tuple[int, int]], batch: int, seq_len: int = 256,
                 one_token_documents: bool = False) -> dict:
    """Shards of FILES with the rows at `stretches` random (none for []), or with `one_token_documents` rows of
    documents of one token each (nothing to predict), and held-out shards in heldout/."""
    def poison(tokens, cu, bounds):
        rows = [entry_rows for entry_rows in np.diff(bounds)]
        positions = sorted(poisoned_positions(stretches, batch))
        if not positions:
            return
        shard, row = GlobalOrder(rows, OrderConfig(seed=0)).locate_many(range(positions[0], positions[-1] + 1))
        rng = np.random.default_rng(0)
        for position, s, r in zip(range(positions[0], positions[-1] + 1), shard.tolist(), row.tolist()):
            if position in positions:
                g = bounds[s] + r
                if one_token_documents:  # a row of 128 of them (a row holds a multiple of 128 tokens)
                    tokens[g] = np.full(128, 500, np.uint32)
                    cu[g] = np.arange(129, dtype=np.int32)
                else:
                    tokens[g] = rng.integers(19, 1024, len(tokens[g])).astype(np.uint32)
                    cu[g] = np.array([0, len(tokens[g])], np.int32)

    index = write_text_shards(folder, seq_len=seq_len, files=FILES, edit_rows=poison)
    write_text_shards(folder / "heldout", seq_len=seq_len, files=HELDOUT_FILES,
                      tokenizer_file=TokenizerFile.read(str(folder / "tokenizer.json")))
    return index


def records(run_dir: Path) -> tuple[dict[int, dict], list[dict], list[dict]]:
    """(each step's last record, the events, the held-out evaluations)."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return ({r["step"]: r for r in lines if "step" in r}, [r for r in lines if "event" in r],
            [r for r in lines if "heldout_at_step" in r])


def summary(run_dir: Path, stretches: list[tuple[int, int]], batch: int) -> dict:
    """What the guard did about the stretches: rollbacks, forward probes, positions skipped, and the end."""
    steps, events, heldout = records(run_dir)
    repairs = [e for e in events if e["event"] in ("rollback", "spike")]
    skipped = {p for e in repairs if "skipped" in e for p in range(*e["skipped"])}
    poisoned = poisoned_positions(stretches, batch)
    last = max(steps)
    return {"rollbacks": sum(e["event"] == "rollback" for e in repairs),
            # the diagnosis (the spiking batch, and the last applied one on the weights that spiked), the stretch's
            "probes": sum(1 + (e.get("weights_loss") is not None) + len(e.get("probed", [])) for e in repairs),
            "causes": sorted({e["cause"] for e in repairs}),
            "poisoned_batches": len(poisoned) // batch,
            "poisoned_skipped": len(poisoned & skipped) // batch,
            "clean_skipped": len(skipped - poisoned) // batch,
            "trained_on_poison": sum(r["position"] in poisoned and r["applied"] for r in steps.values()),
            "end_step": last,
            "end_train_loss": float(np.mean([steps[s]["loss"] for s in range(last - 9, last + 1)])),
            "end_heldout_loss": heldout[-1]["sources"]["default"]["loss"] if heldout else None}
