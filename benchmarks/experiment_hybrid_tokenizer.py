"""The measurements behind the hybrid's settings (prep/tokenizer/unigram.py), on the embedded sample.

    python -m benchmarks.experiment_hybrid_tokenizer [VOCAB_SIZE]   # default 4096; ~5 min

Trains plain BPE and hybrid variants on 3,411 sample documents, each changing one setting from the
defaults, and prints bytes/token on the other 300 (English and Chinese; higher is better).
"""

import dataclasses
import random
import sys

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.report import evaluate, text_kind
from prep.tokenizer.train import TokenizerConfig, train_local
from prep.tokenizer.unigram import UnigramConfig

DEFAULT = UnigramConfig()
VARIANTS = {
    "hybrid (defaults)": DEFAULT,
    "no length penalty": dataclasses.replace(DEFAULT, length_penalty=0.0),
    "no required characters": dataclasses.replace(DEFAULT, character_coverage=0.0),
    "SentencePiece's shrink 0.75": dataclasses.replace(DEFAULT, shrink=0.75),
    "seed 4x instead of 2x": dataclasses.replace(DEFAULT, seed_factor=4.0),
}


def main(vocab_size: int) -> None:
    texts = [r.text for f in expand_inputs("data/sample") for r in read_file(f) if isinstance(r, Document)]
    random.Random(0).shuffle(texts)
    held, train = texts[:300], texts[300:]
    kinds = {"zh": [t for t in held if text_kind(t) == "zh"]}
    kinds["en"] = [t for t in held if t not in kinds["zh"]]  # English with the sample's bits of code
    print(f"| tokenizer, {vocab_size} | en | zh | all | vs BPE |\n|---|---|---|---|---|")
    base = None
    runs = {"BPE": TokenizerConfig(vocab_size, "bpe")}
    runs.update({name: TokenizerConfig(vocab_size, "hybrid", unigram=cfg) for name, cfg in VARIANTS.items()})
    for name, cfg in runs.items():
        result = evaluate(train_local(train, cfg)[0], kinds)
        base = base or result
        print(f"| {name} | {result['en']['bytes_per_token']:.3f} | {result['zh']['bytes_per_token']:.3f} | "
              f"{result['all']['bytes_per_token']:.3f} | "
              f"{result['all']['bytes_per_token'] / base['all']['bytes_per_token'] - 1:+.1%} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
