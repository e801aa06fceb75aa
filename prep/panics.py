"""Panics of the libraries written in Rust (tokenizers, fastwarc): pyo3 raises one as PanicException, a
BaseException that `except Exception` lets through as a traceback, and that cannot be imported by name."""


def is_panic(e: BaseException) -> bool:
    return type(e).__name__ == "PanicException"
