"""Writing what deteval produces, without ever clobbering what the user points at.

Every file deteval writes (JSON reports, and later HTML, CSV and converted datasets) goes
through :func:`write_output`, which decides by what is at the path:

* a regular file, or nothing yet (in an existing folder): written atomically — a temporary
  file in the same folder, ``fsync``, then a rename over the path; an existing file keeps its
  permission bits; the temporary file is removed on every failure;
* a symbolic link: the same at the link's target; the link stays a link;
* a FIFO, a character device, or a ``/dev/...`` or ``/proc/...`` path (``/dev/stdout``,
  ``/dev/fd/3``): opened and written directly, never renamed over;
* ``-``: standard output;
* a folder, a missing parent folder, a read-only location, any other ``OSError``:
  :class:`~deteval.errors.InputError` (the CLI exits 2), with nothing touched.
"""
from __future__ import annotations

import os
import stat
import sys
from typing import Union

from .errors import InputError

__all__ = ["write_output", "STDOUT"]

#: The path that means standard output.
STDOUT = "-"


def _fail(what: str, path: str, reason: str) -> InputError:
    return InputError(f"Expected `{what}` to be a writable file path but {reason}", path)


def write_output(path: Union[str, os.PathLike], data: Union[str, bytes], *,
                 what: str = "--json") -> None:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` by the rules of this module.

    Parameters
    ----------
    path : str or path-like
        Where to write; ``"-"`` is standard output.
    data : str or bytes
    what : str
        The option or argument named in error messages.

    Raises
    ------
    InputError
        The path cannot be written; nothing was changed.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    path = os.fspath(path)
    if path == STDOUT:
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        if out is None:
            sys.stdout.write(payload.decode("utf-8"))
        else:
            out.write(payload)
        sys.stdout.flush()
        return
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _fail(what, path, f"it cannot be inspected ({exc.strerror})") from None
    real = os.path.realpath(path)
    special = real.startswith(("/proc/", "/dev/")) or path.startswith(("/dev/", "/proc/"))
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _fail(what, path, "it is a folder")
    if st is not None and (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)
                           or stat.S_ISSOCK(st.st_mode)) or (special and st is not None):
        _write_direct(path, payload, what)
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _fail(what, path, "it is neither a regular file nor a stream (a block device?)")
    _write_atomic(real, payload, what, path, st)


def _same_file(st, stream) -> bool:
    try:
        own = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino)


def _write_direct(path: str, payload: bytes, what: str) -> None:
    """A stream or device: through our own standard stream when it is the same file (so
    the report and the tables share one file offset), else opened for appending (no
    truncation of what a shell redirection already holds, no rename)."""
    st = os.stat(path)
    for stream in (sys.stdout, sys.stderr):
        if _same_file(st, stream):
            stream.flush()
            if hasattr(stream, "buffer"):
                stream.buffer.write(payload)
            else:
                stream.write(payload.decode("utf-8"))
            stream.flush()
            return
    try:
        with open(path, "ab") as fh:
            fh.write(payload)
    except OSError as exc:
        raise _fail(what, path, f"writing to it failed ({exc.strerror})") from None


def _write_atomic(target: str, payload: bytes, what: str, shown: str, st) -> None:
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise _fail(what, shown, f"its folder {folder} does not exist")
    tmp = None
    try:
        for _ in range(100):
            tmp = os.path.join(folder, f".deteval-{os.getpid()}-{os.urandom(6).hex()}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                tmp = None
                continue
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise _fail(what, shown, "no temporary file could be created beside it")
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise _fail(what, shown, f"writing it failed ({exc.strerror})") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
