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


NAMED_IN_WARNING = 5  # labels of one kind of warning past which they share one line (180 labels made 180 lines)


def _warnings(labels: list[str], true: np.ndarray, said: np.ndarray) -> list[str]:
    """What makes a label's figures unreliable: few held-out documents (`true` of each label), or none predicted
    (`said`: a precision of 0/0, written 0 as scikit-learn's zero_division does). A line per label, or per
    kind where more than NAMED_IN_WARNING labels share it."""
    none = [label for i, label in enumerate(labels) if true[i] == 0]
    few = [(label, int(true[i])) for i, label in enumerate(labels) if 0 < true[i] < FEW_HELD_OUT]
    unsaid = [label for i, label in enumerate(labels) if said[i] == 0 and true[i]]
    found = []
    if len(none) > NAMED_IN_WARNING:
        found.append(f"{len(none)} labels: no document held out, so no figures (a larger heldout share): "
                     f"{_some(none)}")
    else:
        found += [f"label {label}: no document held out, so no figures (a larger heldout share)" for label in none]
    if len(few) > NAMED_IN_WARNING:
        found.append(f"{len(few)} labels: under {FEW_HELD_OUT} documents held out, so their figures are rough "
                     f"(give them more documents or a larger heldout share): "
                     f"{_some([f'{label} ({n})' for label, n in few])}")
    else:
        found += [f"label {label}: only {n} documents held out, so its figures are rough (give it more documents "
                  "or a larger heldout share)" for label, n in few]
    if len(unsaid) > NAMED_IN_WARNING:
        found.append(f"{len(unsaid)} labels: no held-out document was predicted any of them: their precision is "
                     f"undefined (written 0) and the model may never choose them: {_some(unsaid)}")
    else:
        found += [f"label {label}: no held-out document was predicted {label}: its precision is undefined "
                  "(written 0) and the model may never choose it" for label in unsaid]
    return found


def _some(named: list[str]) -> str:
    """The first NAMED_IN_WARNING of `named` and how many more."""
    more = len(named) - NAMED_IN_WARNING
    return ", ".join(named[:NAMED_IN_WARNING]) + (f" and {more} more" if more > 0 else "")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
