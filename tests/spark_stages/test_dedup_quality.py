"""The quality bar on a labelled set of real documents and edited copies (tests/labelled/dedup_set.py)."""

import pytest

from tests.labelled.dedup_quality import tokenmill_metrics

pytestmark = pytest.mark.spark


def test_quality_bar_against_exact_jaccard(spark):
    result = tokenmill_metrics(0.8, spark)
    assert result["both_kept_at_0.9"] == 0  # every pair with J >= 0.9 is deduplicated
    assert result["content_lost"] == 0  # every removed document has a kept one with J >= 0.5
    assert result["duplicate_recall"] >= 0.95 and result["removal_precision"] >= 0.95, result
