"""Every on-disk format of tokenmill, as Arrow schemas. Imports pyarrow only."""

from schemas.documents import (
    CLEAN_DOCUMENT_SCHEMA,
    DOCUMENT_SCHEMA,
    FORMAT_VERSION,
    QUARANTINE_SCHEMA,
    REJECTED_SCHEMA,
)

__all__ = [
    "CLEAN_DOCUMENT_SCHEMA",
    "DOCUMENT_SCHEMA",
    "FORMAT_VERSION",
    "QUARANTINE_SCHEMA",
    "REJECTED_SCHEMA",
]
