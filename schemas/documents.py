"""Arrow schemas of documents, rejected documents, quarantined records and file errors.

Spark schemas are derived from these (jobs/spark_schema.py), never written a second time.
"""

import pyarrow as pa

# Bumped when a column is added, removed or changes meaning; written into stats.json and index.json.
FORMAT_VERSION = "1"
# the jobs' own columns beside a document's: an input's column so named (in any case: Spark's names are not
# case-sensitive) is refused, so that one named `_row`, `rank`, `_dropped` or `_status` can never be taken for
# theirs (an input's `_dropped` removed its rows; its `_status` failed the decontaminate job after the work)
INTERNAL = "_tokenmill_"

DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # kept from the input, else "<relative path>:<line>"
        pa.field("text", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # input file, relative to the --input root
        # Every other input field as one JSON object (null when there are none). One column
        # rather than one per field, because JSON Lines files disagree on fields and types.
        pa.field("metadata", pa.string()),
    ]
)

CLEAN_DOCUMENT_SCHEMA = DOCUMENT_SCHEMA.append(pa.field("lang", pa.string(), nullable=False)).append(
    pa.field("lang_score", pa.float32(), nullable=False)
)

# `reason` is "<rule>:<check>", e.g. "gopher_quality:min_stop_words".
REJECTED_SCHEMA = CLEAN_DOCUMENT_SCHEMA.append(pa.field("reason", pa.string(), nullable=False))

QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field("error", pa.string(), nullable=False),
        pa.field("file", pa.string(), nullable=False),
        pa.field("line", pa.int64()),  # 1-based line (JSON Lines) or row (Parquet); null for .txt
        # The record's bytes as read; cut to its first MiB when it is over the size limit.
        pa.field("raw", pa.binary()),
    ]
)

# What the extract job writes as OUT/docs/: a page's main text, its WARC-Record-ID as `id`, and where it
# came from as columns (the clean job carries them in `metadata`).
WEB_DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # WARC-Record-ID
        pa.field("text", pa.string(), nullable=False),
        pa.field("url", pa.string(), nullable=False),  # WARC-Target-URI
        pa.field("host", pa.string(), nullable=False),  # the URL's host, lowercase: the site of the template step
        pa.field("warc_date", pa.string(), nullable=False),
        pa.field("content_type", pa.string(), nullable=False),
        pa.field("charset", pa.string(), nullable=False),  # the codec that decoded the page
        # the headline, taken out of the text, else the title the page gives itself; "" where it has none
        pa.field("title", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # the WARC file, relative to the --input root
    ]
)

# What normalization changed in a sample of a clean job's documents (by a hash of their id): a row per change.
NORMALIZED_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("at", pa.int64(), nullable=False),  # the change's offset (characters) in the text as it was read
        pa.field("before", pa.string(), nullable=False),  # what stood there (cut at 200 characters)
        pa.field("after", pa.string(), nullable=False),  # what normalization put in its place
        pa.field("left", pa.string(), nullable=False),  # the text before it (40 characters)
        pa.field("right", pa.string(), nullable=False),  # and after it
    ]
)

# What an extract job's template step cut: a row per WARC file and template line cut from its pages.
TEMPLATE_LINE_SCHEMA = pa.schema(
    [
        pa.field("host", pa.string(), nullable=False),  # the site whose template the line is
        pa.field("line", pa.string(), nullable=False),  # the line as it stood on the first page it was cut from
        pa.field("pages", pa.int64(), nullable=False),  # the file's pages it was cut from
        pa.field("source", pa.string(), nullable=False),  # the WARC file, relative to the --input root
    ]
)

# An extract job's quarantine: the record's file and byte offset instead of a line.
WEB_QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field("error", pa.string(), nullable=False),
        pa.field("file", pa.string(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("id", pa.string()),
    ]
)
