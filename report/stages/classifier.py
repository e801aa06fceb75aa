"""The train_classifier job's report.json: per label precision, recall, F1 and ROC AUC on the held-out
documents, the confusion matrix, the score distributions and what it was trained on."""

from collections import Counter

from prep.classify.metrics import DETAILED_LABELS
from report.config import ReportConfig
from report.documents import clipped
from report.layout import StageDir, read_json
from report.model import FunnelRow, Histogram, Note, Section, StageView, Table, mapping
from report.run import Run
from report.sample import OTHER_VALUES
from report.stages.common import capped, listed, others, quarantine, seconds, whole

METRICS = ("documents", "precision", "recall", "f1", "roc_auc")
SHOWN = 20  # languages and labels in the table of languages, the commonest; the rest summed in one row, one column
MAX_COUNT = 2 ** 53
# a score histogram's bins: the job writes 10 (prep.classify.metrics.BINS); a report.json from elsewhere, any
# number (400,000 of them made a page of 72 MB)
MAX_BINS = 100


def gather(run: Run, stage: StageDir) -> StageView:
    report = read_json(stage.folder / "report.json") or {}
    held = mapping(report.get("heldout"))
    labels = mapping(held.get("labels"))
    labels = {clipped(name, run.cfg.field_chars): m for name, m in labels.items() if isinstance(m, dict)}
    blocks: list = [Table("Held-out documents, per label", ["label", *(m.replace("_", " ") for m in METRICS)],
                          capped([[name, *(m.get(k) for k in METRICS)] for name, m in labels.items()], run.cfg,
                                 "labels"),
                          note=f"accuracy {held.get('accuracy')} on {held.get('scored', held.get('documents'))} "
                               "documents")]
    warnings = held.get("warnings") if isinstance(held.get("warnings"), list) else []
    blocks += [Note(f"Warning: {clipped(w, run.cfg.example_chars)}") for w in warnings[:run.cfg.max_reasons]
               if isinstance(w, str)]
    blocks += _confusion(held.get("confusion"), run.cfg)
    for name, m in list(labels.items())[:run.cfg.max_reasons]:
        if histogram := _histogram(m.get("score_histogram"), run.cfg):
            histogram.title = f"Score of {name}, by true label"
            blocks.append(histogram)
    if len(labels) > run.cfg.max_reasons:
        blocks.append(Note(f"The score distributions of {others(len(labels) - run.cfg.max_reasons, 'labels')} "
                           "are not shown (report.max_reasons)."))
    training = mapping(report.get("training"))
    model = mapping(report.get("model"))
    read = mapping(report.get("read"))
    blocks.append(Table("Training", ["", "value"], [
        ["documents read", read.get("documents")], ["without a label (left out)", read.get("without_label")],
        ["over their label's limit (not taken)", read.get("over_the_limit")],
        ["records that could not be read", read.get("quarantined")],
        ["documents", training.get("documents")], ["by label", training.get("by_label")],
        ["sha256 of the training lines", training.get("sha256")], ["words", model.get("words")],
        ["dimensions", model.get("dim")], ["model bytes", model.get("bytes")], ["seconds", report.get("seconds")]]))
    blocks += _languages(training, run.cfg.field_chars)
    # not a stage the corpus flows through (it reads examples): its counts are in its Training table
    row = FunnelRow("Train classifier", stage.source or "", None, None, None, None,
                    seconds=seconds(report.get("seconds")))
    sections = [Section("Held-out evaluation", blocks)]
    if whole(read.get("quarantined")):
        sections.append(quarantine(stage.folder / "quarantine", run.cfg, read["quarantined"]))
    return StageView("classifier", "Classifier", str(stage.folder.relative_to(run.out)) if stage.folder != run.out
                     else ".", [row], sections)


def _confusion(confusion, cfg: ReportConfig) -> list:
    """The confusion matrix, where it is one the job writes: at most DETAILED_LABELS labels (it writes none
    past them), each row a whole number per label."""
    confusion = mapping(confusion)
    names, matrix = confusion.get("rows_true_columns_predicted"), confusion.get("matrix")
    if not isinstance(names, list) or not isinstance(matrix, list) or not names or len(names) > DETAILED_LABELS \
            or len(matrix) != len(names):
        return []
    names = [clipped(n, cfg.field_chars) for n in names]
    rows = [[n, *(whole(c, MAX_COUNT) for c in row)] for n, row in zip(names, matrix)
            if isinstance(row, list) and len(row) == len(names)]
    return [Table("Confusion (rows: true label, columns: predicted)", ["", *names], rows)]


def _histogram(histogram, cfg: ReportConfig) -> Histogram | None:
    """A label's score histogram by true label: series of whole numbers below 2**53 (a text, a list or an
    integer of 4,300 digits there failed the page where the series were summed), at most MAX_BINS bins; the
    series of the first SHOWN true labels, the rest summed in one."""
    if not isinstance(histogram, dict):
        return None
    series = {clipped(k, cfg.field_chars): v for k, v in histogram.items() if isinstance(v, list)
              and 0 < len(v) <= MAX_BINS and all(whole(n, MAX_COUNT) is not None for n in v)}
    if not series:
        return None
    bins = max(map(len, series.values()))
    names = list(series)
    shown = {name: series[name] for name in names[:SHOWN]}
    if rest := names[SHOWN:]:
        shown[others(len(rest), "labels")] = [sum(series[name][i] for name in rest if i < len(series[name]))
                                              for i in range(bins)]
    return Histogram("", [f"{i / bins:.2f}" for i in range(bins)], shown)


def _languages(training: dict, chars: int) -> list:
    """The training documents by language and label, from a report from elsewhere: names clipped, counts whole
    numbers below 2**53 (the sums of millions of them stay numbers the page can print), in time linear in
    the entries."""
    languages = mapping(training.get("languages"))
    counts: dict[str, Counter] = {}
    for lang, of in languages.items():
        for label, n in (of.items() if isinstance(of, dict) else ()):
            if whole(n, MAX_COUNT) is not None:
                counts.setdefault(clipped(lang, chars), Counter())[clipped(label, chars)] += n
    if not counts:
        return []
    total = Counter()
    for of in counts.values():
        total.update(of)
    # a label named as the rest's column is counted in it, as listed() counts a language so named in its row
    labels = sorted((label for label in total if label != OTHER_VALUES), key=lambda label: (-total[label], label))
    shown = labels[:SHOWN]
    columns = [{lang: of[label] for lang, of in counts.items()} for label in shown]
    if len(labels) > SHOWN or OTHER_VALUES in total:
        named = set(shown)
        columns.append({lang: sum(n for label, n in of.items() if label not in named) for lang, of in counts.items()})
    ordered = sorted(counts, key=lambda lang: (-counts[lang].total(), lang))
    header = ["language", *shown, *[OTHER_VALUES] * (len(columns) > len(shown))]
    return [Table("Training documents by language", header, listed(ordered, columns, SHOWN),
                  note="the language the train job's language id gave each document")]
