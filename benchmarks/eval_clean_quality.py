"""How well the default cleaning rules separate prose from junk, per language and kind.

    python -m benchmarks.eval_clean_quality [--seed 0]

Prints the share of prose kept and of junk removed, and which rules removed prose.
"""

import argparse

from tests.labelled.clean_quality import evaluate


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
