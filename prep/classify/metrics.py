"""How well a classifier does on documents it was not trained on: per label precision, recall and F1 (the
label of highest probability is the prediction), the confusion matrix, ROC AUC of each label against the rest
(ties counted half, as the Mann-Whitney statistic does), and each label's score distribution."""

import numpy as np

BINS = 10  # the score distributions' bins over [0, 1]


def roc_auc(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """P(a positive scores above a negative) + P(tie) / 2; None without both."""
    if not len(positive) or not len(negative):
        return None
    scores = np.concatenate([positive, negative]).astype(np.float64)
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    upto = np.cumsum(counts)
    ranks = (upto - (counts - 1) / 2)[inverse]  # the mean rank of each tie
    ranked = ranks[:len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return float(ranked / (len(positive) * len(negative)))


FEW_HELD_OUT = 30  # held-out documents of a label under which its figures are rough


def evaluation(labels: list[str], truth: np.ndarray, probabilities: np.ndarray) -> dict:
    """The figures of held-out documents: `truth` their label's index, `probabilities` [documents, labels]."""
    predicted = probabilities.argmax(axis=1) if len(probabilities) else np.zeros(0, np.int64)
    confusion = np.zeros((len(labels), len(labels)), np.int64)
    np.add.at(confusion, (truth, predicted), 1)
    per_label = {}
    for i, label in enumerate(labels):
        hit, said, true = confusion[i, i], confusion[:, i].sum(), confusion[i].sum()
        precision = hit / said if said else 0.0
        recall = hit / true if true else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores = probabilities[:, i] if len(probabilities) else np.zeros(0)
        histogram = {name: np.histogram(scores[truth == k], bins=BINS, range=(0, 1))[0].tolist()
                     for k, name in enumerate(labels)}
        per_label[label] = {"documents": int(true), "precision": round(float(precision), 4),
                            "recall": round(float(recall), 4), "f1": round(float(f1), 4),
                            "roc_auc": _rounded(roc_auc(scores[truth == i], scores[truth != i])),
                            "score_histogram": histogram}
    accuracy = float(np.trace(confusion) / confusion.sum()) if confusion.sum() else 0.0
    return {"documents": int(len(truth)), "accuracy": round(accuracy, 4), "labels": per_label,
            "confusion": {"rows_true_columns_predicted": labels, "matrix": confusion.tolist()},
            "warnings": _warnings(labels, confusion)}


def _warnings(labels: list[str], confusion: np.ndarray) -> list[str]:
    """What makes a label's figures unreliable: few held-out documents, or none predicted (a precision of 0/0,
    written 0 as scikit-learn's zero_division does)."""
    found = []
    for i, label in enumerate(labels):
        true, said = int(confusion[i].sum()), int(confusion[:, i].sum())
        if true == 0:
            found.append(f"label {label}: no document held out, so no figures (a larger heldout share)")
        elif true < FEW_HELD_OUT:
            found.append(f"label {label}: only {true} documents held out, so its figures are rough (give it more "
                         "documents or a larger heldout share)")
        if said == 0 and true:
            found.append(f"label {label}: no held-out document was predicted {label}: its precision is undefined "
                         "(written 0) and the model may never choose it")
    return found


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
