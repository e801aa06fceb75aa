"""Do superwords hurt learning? `make train`-sized runs with the hybrid and the superword hybrid,
compared in bits per byte of held-out text. Prints a Markdown table.

    python -m benchmarks.bench_superword_learning [--vocab-size 32768] [--steps 200] [--work .bench/superword-learning]

The embedded sample, shuffled with a fixed seed: 300 documents held out, the rest trains both
tokenizers (prep functions, in process) and, through `python -m jobs.shards`, becomes each one's
shards. Each model is `make train`'s: the tiny preset, two torchrun CPU processes, the same steps,
global batch, learning rate and seed, on the same text. Then `python -m jobs.evaluate` gives
held-out bits per byte (loss x tokens / bytes), which compares tokenizers of different granularity
fairly; the loss per token does not. Steps whose outputs exist in WORK are not run again.
"""

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.superwords import SuperwordConfig
from prep.tokenizer.train import TokenizerConfig, train_local

REPO = Path(__file__).resolve().parent.parent
HELD_OUT_DOCS = 300


def write_jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": str(i), "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)))


def run(*command: str) -> str:
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(command[:4])} ... failed:\n{done.stderr[-3000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab-size", type=int, default=32_768)  # make shards' size
    parser.add_argument("--steps", type=int, default=200)  # make train's
    parser.add_argument("--work", default=".bench/superword-learning")
    args = parser.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    texts = [r.text for f in expand_inputs(str(REPO / "data" / "sample")) for r in read_file(f)
             if isinstance(r, Document)]
    random.Random(0).shuffle(texts)
    held, training = texts[:HELD_OUT_DOCS], texts[HELD_OUT_DOCS:]
    write_jsonl(work / "held_out.jsonl", held)
    write_jsonl(work / "train.jsonl", training)
    variants = {"hybrid": TokenizerConfig(args.vocab_size),
                "superword hybrid": TokenizerConfig(args.vocab_size, superword=SuperwordConfig(superwords=True))}
    rows = []
    for name, cfg in variants.items():
        folder = work / name.replace(" ", "-")
        folder.mkdir(exist_ok=True)
        tokenizer = folder / "tokenizer.json"
        if not tokenizer.exists():
            train_local(training, cfg)[0].save(str(tokenizer))
        shards = folder / "shards"
        if not (shards / "index.json").exists():
            run(sys.executable, "-m", "jobs.shards", "--input", str(work / "train.jsonl"), "--tokenizer",
                str(tokenizer), "--output", str(shards))
        run_dir = folder / "train"
        if not (run_dir / "checkpoints" / f"step-{args.steps:07d}").exists():
            run(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "jobs/train.py",
                "--shards", str(shards), "--run-dir", str(run_dir), "--model", "tiny", "--steps", str(args.steps),
                "--global-batch-size", "2", "--warmup-steps", "20", "--lr", "3e-3",
                "--checkpoint-every", str(args.steps))
        result = json.loads(run(sys.executable, "-m", "jobs.evaluate", "--run-dir", str(run_dir), "--shards",
                                str(shards), "--tokenizer", str(tokenizer),
                                "--input", str(work / "held_out.jsonl")).splitlines()[-1])
        index = json.loads((shards / "index.json").read_text())
        steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        last = steps[-10:]
        rows.append((name, index, result, sum(s["loss"] for s in last) / len(last)))

    training_bytes = sum(len(t.encode()) for t in training)
    print(f"## Held-out bits per byte after {args.steps} steps (tiny model, {args.vocab_size} tokens, "
          f"{HELD_OUT_DOCS} held-out sample documents)\n")
    print("| tokenizer | training text bytes/token | train loss, last 10 steps | held-out tokens | "
          "held-out loss/token | held-out bits/byte |")
    print("|---|---|---|---|---|---|")
    for name, index, result, train_loss in rows:
        text_tokens = index["totals"]["real_tokens"] - 2 * index["totals"]["documents"]  # without bos/eos
        print(f"| {name} | {training_bytes / text_tokens:.3f} | {train_loss:.3f} | {result['tokens']:,} | "
              f"{result['loss_per_token']:.3f} | **{result['bits_per_byte']:.4f}** |")


if __name__ == "__main__":
    main()
