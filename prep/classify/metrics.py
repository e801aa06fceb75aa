"""How well a classifier does on documents it was not trained on: per label precision, recall and F1 (the
label of highest probability is the prediction), the confusion matrix, ROC AUC of each label against the rest
(ties counted half, as the Mann-Whitney statistic does), and each label's score distribution."""

import numpy as np

BINS = 10  # the score distributions' bins over [0, 1]
# Labels up to which a label's score histogram is given for each label's documents and the confusion matrix is
# written: past them both grow with the labels' square (a label field of ids: 1,000 labels made 43 MB)
DETAILED_LABELS = 100


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
    """The figures of held-out documents: `truth` their label's index, `probabilities` [documents, labels]. Past
    DETAILED_LABELS, a label's histogram is of its own documents and (under "") of the others', and there is no
    confusion matrix."""
    predicted = probabilities.argmax(axis=1) if len(probabilities) else np.zeros(0, np.int64)
    detailed = len(labels) <= DETAILED_LABELS
    true, said = np.bincount(truth, minlength=len(labels)), np.bincount(predicted, minlength=len(labels))
    hits = np.bincount(truth[truth == predicted], minlength=len(labels))
    per_label = {}
    for i, label in enumerate(labels):
        precision = hits[i] / said[i] if said[i] else 0.0
        recall = hits[i] / true[i] if true[i] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores = probabilities[:, i] if len(probabilities) else np.zeros(0)
        histogram = {name: _histogram(scores[truth == k]) for k, name in enumerate(labels)} if detailed else {
            label: _histogram(scores[truth == i]), "": _histogram(scores[truth != i])}  # "": no label's name
        per_label[label] = {"documents": int(true[i]), "precision": round(float(precision), 4),
                            "recall": round(float(recall), 4), "f1": round(float(f1), 4),
                            "roc_auc": _rounded(roc_auc(scores[truth == i], scores[truth != i])),
                            "score_histogram": histogram}
    accuracy = float(hits.sum() / len(truth)) if len(truth) else 0.0
    found = {"documents": int(len(truth)), "accuracy": round(accuracy, 4), "labels": per_label,
             "warnings": _warnings(labels, true, said)}
    if detailed:
        confusion = np.zeros((len(labels), len(labels)), np.int64)
        np.add.at(confusion, (truth, predicted), 1)
        found["confusion"] = {"rows_true_columns_predicted": labels, "matrix": confusion.tolist()}
    return found


def _histogram(scores: np.ndarray) -> list[int]:
    return np.histogram(scores, bins=BINS, range=(0, 1))[0].tolist()


def _warnings(labels: list[str], true: np.ndarray, said: np.ndarray) -> list[str]:
    """What makes a label's figures unreliable: few held-out documents (`true` of each label), or none predicted
    (`said`: a precision of 0/0, written 0 as scikit-learn's zero_division does)."""
    found = []
    for i, label in enumerate(labels):
        if true[i] == 0:
            found.append(f"label {label}: no document held out, so no figures (a larger heldout share)")
        elif true[i] < FEW_HELD_OUT:
            found.append(f"label {label}: only {true[i]} documents held out, so its figures are rough (give it more "
                         "documents or a larger heldout share)")
        if said[i] == 0 and true[i]:
            found.append(f"label {label}: no held-out document was predicted {label}: its precision is undefined "
                         "(written 0) and the model may never choose it")
    return found


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
