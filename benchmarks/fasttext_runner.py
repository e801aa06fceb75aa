"""fastText's own train_supervised and predict, run in the benchmark's fastText environment (the `fasttext`
library itself; .venv holds fasttext-predict, which only predicts). One JSON object out.

    python benchmarks/fasttext_runner.py TRAIN_FILE TEST_FILE ARGS_JSON OUT_MODEL [REPEATS [PASSES]]

Trained and predicting REPEATS times (1 by default), each timed: the best of them, as timeit reports (a pass
of a fraction of a second on a shared machine is mostly noise); each timed prediction reads the test lines
PASSES times over (1 by default), as tokenmill's scorer is timed; predict_seconds is for all PASSES.
"""

import json
import sys
import time

import fasttext

if __name__ == "__main__":
    train_file, test_file, args, model_file = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    passes = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    trained = predicted = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        model = fasttext.train_supervised(train_file, verbose=0, **args)
        trained = min(trained, time.process_time() - started)
    model.save_model(model_file)
    lines = open(test_file, encoding="utf-8").read().splitlines()
    labels, probabilities = model.predict(lines, k=-1)
    for _ in range(repeats):
        started = time.process_time()
        model.predict(lines * passes, k=-1)
        predicted = min(predicted, time.process_time() - started)
    good = [dict(zip(ls, ps)).get("__label__good", 0.0) for ls, ps in zip(labels, probabilities)]
    print(json.dumps({"train_seconds": trained, "predict_seconds": predicted,
                      "good": [float(p) for p in good]}))
