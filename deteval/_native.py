"""The one place that loads the optional compiled extensions and decides which path runs.

``deteval._textscan`` (C scanners for VOC XML, VOC detection files and COCO results JSON)
and ``deteval._kernels`` (radix ranking and the VOC / COCO matching walks) are optional:
without a C compiler deteval installs and gives the same numbers through its Python/numpy
reference code, only slower. Every other module takes the extensions from here
(``textscan``, ``kernels``: the module, or None), and :func:`status` says which path is in
use and why (``deteval --version`` prints it).

``DETEVAL_REQUIRE_NATIVE=1`` in the environment makes a missing or broken extension an
error at import, so a CI run that means to test the compiled path cannot silently fall back
to the reference path (and its C-versus-numpy tests cannot silently turn into skips).
"""
from __future__ import annotations

import importlib
import os
from typing import Dict, Optional

__all__ = ["textscan", "kernels", "status", "REQUIRE_ENV"]

REQUIRE_ENV = "DETEVAL_REQUIRE_NATIVE"
_ERRORS: Dict[str, str] = {}


def _load(name: str):
    try:
        return importlib.import_module(f"deteval.{name}")
    except ImportError as exc:
        _ERRORS[name] = f"{type(exc).__name__}: {exc}"
        return None


textscan = _load("_textscan")
kernels = _load("_kernels")

if os.environ.get(REQUIRE_ENV, "") not in ("", "0") and _ERRORS:
    raise ImportError(f"{REQUIRE_ENV} is set but the compiled extensions did not load ("
                      + "; ".join(f"deteval.{n}: {e}" for n, e in _ERRORS.items())
                      + "); build them with `pip install .` or "
                      "`python setup.py build_ext --inplace`")


def status() -> Dict[str, Optional[str]]:
    """Extension name -> None when loaded, else why not (the import error)."""
    return {"_textscan": _ERRORS.get("_textscan"), "_kernels": _ERRORS.get("_kernels")}
