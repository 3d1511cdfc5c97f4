"""Benchmark modes of ``scripts/bench.py``, one module per mode.

A mode module defines ``MODE`` (its name on the command line), ``add_arguments(parser)``,
``run(args) -> int`` (0 when every tool agreed) and, when it runs tools as child processes
through ``bench.py --run``, ``RUNNERS`` (name -> function of string arguments). The shared
harness (child processes, timing, peak memory, agreement checks) is :mod:`runner`.
"""
