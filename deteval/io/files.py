"""Reading input files, with errors that name the file."""
from __future__ import annotations

import os
import stat

from ..errors import InputError, expected

__all__ = ["read_input", "check_regular_files", "quote", "XML_MAX_BYTES"]

#: The largest annotation file read (a VOC XML file is a few KiB).
XML_MAX_BYTES = 64 * 2 ** 20


def quote(text, limit: int = 60) -> str:
    """``repr`` of a value from the input, cut to ``limit`` characters for messages."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text[:limit * 4]).decode("utf-8", "replace")
    r = repr(text)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def check_regular_files(paths, kind: str, max_bytes=None) -> None:
    """Refuse any path that is not a regular file (after links: a FIFO would hang the
    reader, ``/dev/zero`` would exhaust memory) or is larger than ``max_bytes``."""
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InputError(f"Expected a readable {kind} but got: {exc.strerror}",
                             path) from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(expected("file", f"a {kind}", "a folder"), path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"Expected a {kind} (a regular file) but got a FIFO, device or "
                             "socket", path)
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"Expected a {kind} of at most {max_bytes // 2 ** 20} MiB but "
                             f"got {st.st_size / 2 ** 20:.0f} MiB", path)


def read_input(path, kind: str = "text file", refuse_nul: bool = True) -> bytes:
    """The bytes of ``path``; :class:`InputError` for a folder, an unreadable file or
    (``refuse_nul``) binary data.

    ``kind`` names what was expected in messages (``"text file"``, ``"JSON file"``).
    """
    check_regular_files([path], kind)
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
