"""Text as code points for the compiled kernels: from Python strings and straight from Arrow's UTF-8."""

import numpy as np
import pyarrow as pa
import pytest

from prep.compiled import code_points_of
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from tests.fuzz_text import fuzz_strings, hostile_strings


def test_an_arrow_column_is_decoded_to_the_same_code_points_as_python_strings(sample_dir):
    sample = [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]
    texts = sample[:300] + hostile_strings(3_000) + list(fuzz_strings()) + ["", "\U0010ffff"]
    expected, expected_starts = code_points_of(texts)
    for column in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string()),
                   pa.array(["skipped"] + texts + ["too"]).slice(1, len(texts))):  # a slice: offsets not from 0
        code_points, starts = code_points_of(column)
        assert np.array_equal(code_points, expected) and np.array_equal(starts, expected_starts)


def test_a_null_text_in_an_arrow_column_is_refused():
    with pytest.raises(ValueError, match="1 null texts"):
        code_points_of(pa.array(["a", None]))
