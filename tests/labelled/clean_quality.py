"""How well the cleaning rules separate prose from junk on the labelled set (tests/labelled/quality_set.py)."""

from collections import Counter, defaultdict

from prep.clean import CleanConfig, clean_text
from tests.labelled.quality_set import build


def evaluate(seed: int = 0, cfg: CleanConfig | None = None) -> dict:
    cfg = cfg or CleanConfig()
    outcome: dict[tuple[str, str], list[bool]] = defaultdict(list)
    prose_losses: Counter = Counter()
    for item in build(seed):
        reason = clean_text(item.text, cfg).reason
        outcome[(item.lang, item.label)].append(reason is None)
        if item.label == "prose" and reason:
            prose_losses[(item.lang, reason)] += 1
    result = {}
    for lang in ("en", "zh"):
        prose = outcome[(lang, "prose")]
        junk = [kept for (of, label), v in outcome.items() if of == lang and label != "prose" for kept in v]
        result[lang] = {
            "prose_kept": sum(prose) / len(prose),
            "junk_removed": 1 - sum(junk) / len(junk),
            "by_kind": {label: 1 - sum(v) / len(v) for (of, label), v in sorted(outcome.items())
                        if of == lang and label != "prose"},
            "n_prose": len(prose), "n_junk": len(junk),
        }
    result["prose_losses"] = prose_losses
    return result
