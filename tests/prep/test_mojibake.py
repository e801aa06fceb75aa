"""prep/mojibake.py's detector answers as ftfy's does, on text made of the very characters it looks for."""

import random

import ftfy.badness
import pytest

from prep import mojibake


def test_ftfys_expression_has_the_shape_the_fast_search_relies_on():
    assert mojibake.MARKS is not None and 1 < mojibake.WIDTH <= 16


@pytest.mark.parametrize("share_of_marks", [0.02, 0.2, 0.8])
def test_the_same_answer_as_ftfy_on_random_mixtures_of_its_characters(share_of_marks):
    rng = random.Random(int(share_of_marks * 100))
    marks = [chr(c) for c in range(0x80, 0x3000) if mojibake.MARKS.match(chr(c))]
    plain = list("ab cXYz.,?!\n\t0") + ["中", "文", "\u00a0", "é", "Ω"]
    texts = ["".join(rng.choice(marks) if rng.random() < share_of_marks else rng.choice(plain)
                     for _ in range(rng.randint(1, 60))) for _ in range(20_000)]
    texts += ["naïve café — “quoted” … 中文，“引号”", "Ã©tÃ© Ã  la plage", "â€œmojibakeâ€\x9d"]
    expected = [ftfy.badness.is_bad(t) for t in texts]
    assert [mojibake.is_bad(t) for t in texts] == expected
    assert 0 < sum(expected) < len(texts)  # both answers occur
