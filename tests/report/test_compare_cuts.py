"""A comparison tells a document kept as it was from one kept with text cut: by dedup's paragraphs step
(OUT/changed) as by decontamination (OUT/matches). Outputs made here with pyarrow in the shapes the jobs write."""

import pyarrow as pa
import pyarrow.parquet as pq

from report import ReportConfig
from report.compare import compare
from tests.report.test_shared_ids import dedup_output


def test_a_document_the_paragraphs_step_cut_in_one_run_is_a_change_of_fate(tmp_path):
    (tmp_path / "in").mkdir()
    plain = dedup_output(tmp_path / "plain", tmp_path / "in")
    cut = dedup_output(tmp_path / "cut", tmp_path / "in")
    (cut / "changed").mkdir()
    pq.write_table(pa.table({"id": ["X", "nowhere"], "units_removed": pa.array([1, 2], pa.int64())}),
                   cut / "changed" / "part-00000.parquet")
    _, _, stages, _ = compare(plain, cut, ReportConfig())
    assert [(c.before, c.after, c.count) for c in stages[0].changes] == [("kept", "kept, paragraphs cut", 2)]
    _, _, stages, _ = compare(cut, cut, ReportConfig())
    assert stages[0].changes == []
