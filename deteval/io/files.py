"""Reading input files, with errors that name the file."""
from __future__ import annotations

from ..errors import InputError, expected

__all__ = ["read_input"]


def read_input(path, kind: str = "text file", refuse_nul: bool = True) -> bytes:
    """The bytes of ``path``; :class:`InputError` for a folder, an unreadable file or
    (``refuse_nul``) binary data.

    ``kind`` names what was expected in messages (``"text file"``, ``"JSON file"``).
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except IsADirectoryError:
        raise InputError(expected("file", f"a {kind}", "a folder"), path) from None
    except OSError as exc:
        readable = "file" if kind == "text file" else kind
        raise InputError(f"Expected a readable {readable} but got: {exc.strerror}",
                         path) from None
    if refuse_nul and b"\x00" in data:
        raise InputError(f"Expected a {kind} but got binary data (NUL bytes)", path)
    return data
