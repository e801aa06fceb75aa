"""How a run stops on purpose: one line, and an exit code that says why."""


class RunStopped(Exception):
    """The run cannot start or go on: one line says why (exit code 2 at start, 3 for the guard)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code
