"""prep/classify/metrics.py: ROC AUC against a count of every pair (ties counted half), and the held-out
figures (precision, recall, F1, confusion, score histograms) of a case worked out by hand."""

import numpy as np
import pytest

from prep.classify.metrics import evaluation, roc_auc


def pairwise(positive, negative) -> float:
    """P(a positive scores above a negative) + P(tie) / 2, by every pair."""
    above = sum(float(p > n) + 0.5 * float(p == n) for p in positive for n in negative)
    return above / (len(positive) * len(negative))


@pytest.mark.parametrize("seed", range(5))
def test_roc_auc_is_the_share_of_pairs_in_order(seed):
    rng = np.random.default_rng(seed)
    positive, negative = rng.normal(0.6, 0.2, 70), rng.normal(0.4, 0.2, 90)
    assert roc_auc(positive, negative) == pytest.approx(pairwise(positive, negative), abs=1e-12)
    # scores of a few values: ties between and within the two sides
    positive, negative = rng.integers(0, 5, 60) / 4, rng.integers(0, 4, 40) / 4
    assert roc_auc(positive, negative) == pytest.approx(pairwise(positive, negative), abs=1e-12)
    # float32 scores, as the scorer gives them
    positive, negative = positive.astype(np.float32), negative.astype(np.float32)
    assert roc_auc(positive, negative) == pytest.approx(pairwise(positive, negative), abs=1e-12)


def test_roc_auc_at_its_ends():
    assert roc_auc(np.array([0.9, 0.8]), np.array([0.1, 0.2, 0.3])) == 1.0
    assert roc_auc(np.array([0.1]), np.array([0.5, 0.9])) == 0.0
    assert roc_auc(np.full(4, 0.5), np.full(7, 0.5)) == 0.5
    assert roc_auc(np.array([0.5, 0.7]), np.array([0.5])) == 0.75
    assert roc_auc(np.array([]), np.array([0.5])) is None and roc_auc(np.array([0.5]), np.array([])) is None


def test_evaluation_of_a_case_worked_by_hand():
    labels = ["law", "code", "other"]
    truth = np.array([0, 0, 0, 1, 1, 2])
    probabilities = np.array([
        [0.80, 0.15, 0.05],  # law  -> law
        [0.60, 0.30, 0.10],  # law  -> law
        [0.20, 0.70, 0.10],  # law  -> code
        [0.10, 0.85, 0.05],  # code -> code
        [0.50, 0.20, 0.30],  # code -> law
        [0.05, 0.15, 0.80],  # other -> other
    ], np.float32)
    found = evaluation(labels, truth, probabilities)
    assert found["documents"] == 6 and found["accuracy"] == round(4 / 6, 4)
    assert found["confusion"] == {"rows_true_columns_predicted": labels, "matrix": [[2, 1, 0], [1, 1, 0], [0, 0, 1]]}
    law, code, other = (found["labels"][name] for name in labels)
    # law: said 3 times, right twice; 3 documents, 2 found
    assert (law["documents"], law["precision"], law["recall"], law["f1"]) == (3, 0.6667, 0.6667, 0.6667)
    # code: said twice, right once; 2 documents, 1 found: F1 = 2 * 0.5 * 0.5 / 1
    assert (code["documents"], code["precision"], code["recall"], code["f1"]) == (2, 0.5, 0.5, 0.5)
    assert (other["documents"], other["precision"], other["recall"], other["f1"]) == (1, 1.0, 1.0, 1.0)
    # law's score against the rest: law documents 0.8 0.6 0.2, the others 0.1 0.5 0.05: 8 of 9 pairs in order
    assert law["roc_auc"] == round(8 / 9, 4)
    assert other["roc_auc"] == 1.0
    # law's scores in ten bins, by the documents' true label
    assert law["score_histogram"]["law"] == [0, 0, 1, 0, 0, 0, 1, 0, 1, 0]
    assert law["score_histogram"]["code"] == [0, 1, 0, 0, 0, 1, 0, 0, 0, 0]
    assert law["score_histogram"]["other"] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]


def test_a_label_never_said_nor_held_out():
    found = evaluation(["a", "b", "c"], np.array([0, 1]), np.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.0]]))
    assert found["labels"]["c"] == {**found["labels"]["c"], "documents": 0, "precision": 0.0, "recall": 0.0,
                                    "f1": 0.0, "roc_auc": None}
    assert found["accuracy"] == 1.0
    assert any(w.startswith("label c: no document held out") for w in found["warnings"])


def test_a_label_of_few_held_out_documents_or_never_predicted_is_warned_of():
    truth = np.array([0] * 40 + [1] * 5)
    never_b = np.tile([0.9, 0.1], (45, 1))
    warnings = evaluation(["a", "b"], truth, never_b)["warnings"]
    assert len(warnings) == 2 and "only 5 documents held out" in warnings[0] and "never choose it" in warnings[1]
    assert all("label b" in w for w in warnings)
    right = np.where(truth[:, None] == np.arange(2), 0.9, 0.1)
    assert evaluation(["a", "b"], truth, right)["warnings"] == [warnings[0]]
    assert evaluation(["a", "b"], np.array([0] * 40 + [1] * 30), np.tile([0.4, 0.6], (70, 1)))["warnings"] == [
        "label a: no held-out document was predicted a: its precision is undefined (written 0) and the model may "
        "never choose it"]


def test_many_labels_of_one_warning_share_a_line():
    """180 labels of 3 held-out documents each, none predicted but the first: two lines, not 360."""
    labels = [f"l{k}" for k in range(180)]
    truth = np.repeat(np.arange(180), 3)
    warnings = evaluation(labels, truth, np.tile(np.eye(180)[0], (540, 1)))["warnings"]
    assert warnings == [
        "180 labels: under 30 documents held out, so their figures are rough (give them more documents or a "
        "larger heldout share): l0 (3), l1 (3), l2 (3), l3 (3), l4 (3) and 175 more",
        "179 labels: no held-out document was predicted any of them: their precision is undefined (written 0) "
        "and the model may never choose them: l1, l2, l3, l4, l5 and 174 more"]
    six_unheld = evaluation(labels[:8], np.array([0] * 40 + [1] * 40), np.tile(np.eye(8)[0], (80, 1)))["warnings"]
    assert six_unheld[0] == ("6 labels: no document held out, so no figures (a larger heldout share): l2, l3, l4, "
                             "l5, l6 and 1 more")


def test_no_documents_held_out():
    found = evaluation(["a", "b"], np.zeros(0, np.int64), np.zeros((0, 2), np.float32))
    assert found["documents"] == 0 and found["accuracy"] == 0.0
    assert found["confusion"]["matrix"] == [[0, 0], [0, 0]]
    assert all(f["roc_auc"] is None for f in found["labels"].values())


def test_many_labels_keep_the_figures_linear_in_the_labels():
    """Found by review: a histogram of each label's score for every other label's documents made the report grow
    with the labels' square (1,000 labels: 27 s and 43 MB; a label field of ids makes that many). Past
    DETAILED_LABELS, each label's histogram is of its own documents and, under "", of all the others', and the
    confusion matrix is left out."""
    from prep.classify.metrics import DETAILED_LABELS

    rng = np.random.default_rng(0)
    for count in (DETAILED_LABELS, DETAILED_LABELS + 1):
        labels = [f"label{i}" for i in range(count)]
        truth = rng.integers(0, count, 2000)
        probabilities = rng.dirichlet(np.ones(count), 2000).astype(np.float32)
        found = evaluation(labels, truth, probabilities)
        histogram = found["labels"]["label3"]["score_histogram"]
        own = np.histogram(probabilities[truth == 3, 3], bins=10, range=(0, 1))[0].tolist()
        assert histogram["label3"] == own
        if count == DETAILED_LABELS:
            assert len(histogram) == count and "confusion" in found
        else:
            others = np.histogram(probabilities[truth != 3, 3], bins=10, range=(0, 1))[0].tolist()
            assert histogram == {"label3": own, "": others} and "confusion" not in found
        assert sum(f["documents"] for f in found["labels"].values()) == 2000
