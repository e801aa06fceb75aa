"""Bits per byte of held-out documents under a trained checkpoint (trainer/evaluate.py): one process.

    python -m jobs.evaluate --run-dir DIR --shards SHARDS --tokenizer TOKENIZER.json --input HELD_OUT

Prints one JSON object. During training the loop measures its held-out shards itself (trainer/heldout.py).
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from prep.cli import command_line
    from schemas import strict_json
    from trainer.evaluate import EvalConfig, EvalStopped, evaluate

    _, config = command_line(EvalConfig, None, prog="jobs.evaluate", description=__doc__.split("\n")[0])
    try:
        print(strict_json.dumps(evaluate(config)))
    except EvalStopped as e:
        print(f"jobs.evaluate: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
