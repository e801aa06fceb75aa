"""How well the default cleaning rules separate prose from junk, per language and kind.

    python -m benchmarks.eval_clean_quality [--seed 0]

Prints the share of prose kept and of junk removed, and which rules removed prose.
"""

import argparse
from collections import Counter, defaultdict

from benchmarks.quality_set import build
from prep.clean import CleanConfig, clean_text


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
        junk = [kept for (l, label), v in outcome.items() if l == lang and label != "prose" for kept in v]
        result[lang] = {
            "prose_kept": sum(prose) / len(prose),
            "junk_removed": 1 - sum(junk) / len(junk),
            "by_kind": {label: 1 - sum(v) / len(v) for (l, label), v in sorted(outcome.items()) if l == lang and label != "prose"},
            "n_prose": len(prose), "n_junk": len(junk),
        }
    result["prose_losses"] = prose_losses
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    result = evaluate(parser.parse_args().seed)
    print("| language | prose kept | junk removed | prose docs | junk docs |")
    print("|---|---|---|---|---|")
    for lang in ("en", "zh"):
        r = result[lang]
        print(f"| {lang} | {r['prose_kept']:.1%} | {r['junk_removed']:.1%} | {r['n_prose']} | {r['n_junk']} |")
    print("\njunk removed by kind:")
    for lang in ("en", "zh"):
        print(f"  {lang}: " + ", ".join(f"{k} {v:.0%}" for k, v in result[lang]["by_kind"].items()))
    print("\nprose removed by rule:", dict(result["prose_losses"].most_common(10)))


if __name__ == "__main__":
    main()
