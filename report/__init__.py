"""The HTML report of a run: what each stage kept, what it removed and why, shown on real documents.

`write_report(OUT)` reads an output folder (a job's or the pipeline's) with pyarrow and json alone, on the
driver, within the bounds of a ReportConfig, and writes OUT/report.html: one self-contained file, no
network, every document shown as text. `write_comparison(OUT, OTHER)` writes OUT/compare.html: what two
runs over the same input did differently. Neither starts Spark.
"""

from report.config import ReportConfig
from report.write import write_comparison, write_report

__all__ = ["ReportConfig", "write_comparison", "write_report"]
