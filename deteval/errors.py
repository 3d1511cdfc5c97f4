"""One error type for bad input, with one message pattern.

Every message names where the problem is (file, line or record) and says what
was expected and what was found::

    results.json: record 17: Expected `score` to be a finite number but got 'NaN'
"""
from __future__ import annotations

from os import PathLike
from typing import Optional, Union

__all__ = ["InputError", "expected"]


class InputError(ValueError):
    """Bad input: a file, a record or an argument that deteval cannot evaluate.

    Parameters
    ----------
    message : str
        What was expected and what was found.
    source : str or path-like, optional
        The file (or the argument, or ``update()`` call) the problem is in.
    location : str, optional
        Where in the source: ``"line 12"``, ``"record 3"``, ``"<object> 2"``.
    """

    def __init__(self, message: str, source: Optional[Union[str, PathLike]] = None,
                 location: Optional[str] = None):
        self.message = message
        self.source = None if source is None else str(source)
        self.location = location
        parts = [p for p in (self.source, location) if p]
        super().__init__(": ".join(parts + [message]))

    def __reduce__(self):  # pickles whole (errors cross process boundaries on a cluster)
        return (type(self), (self.message, self.source, self.location))


def expected(what: str, wanted: str, found: object) -> str:
    """Format the standard message ``Expected `what` to be WANTED but got FOUND``."""
    if isinstance(found, (bytes, bytearray)):
        found = found.decode("utf-8", "replace")
    text = repr(found)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"Expected `{what}` to be {wanted} but got {text}"
