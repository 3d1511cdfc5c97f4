#!/usr/bin/env python
"""Benchmarks: deteval beside its peers on the same generated data, in one run.

    python scripts/bench.py MODE [options]      # e.g. coco, voc; --list shows every mode
    python scripts/bench.py coco --images 1000 5000 20000
    python scripts/bench.py voc --repeat 5
    python scripts/bench.py MODE --help

Every mode lives in its own module of ``scripts/benchmarks/`` (found automatically: a module
that defines ``MODE``, ``add_arguments`` and ``run``; it imports the harness as
``from benchmarks import runner``) and uses the one harness ``scripts/benchmarks/runner.py``: each tool runs as its own child process, timed by wall
clock with its peak RSS, and the figures of every tool are checked against each other.
Without a mode, ``coco`` runs (the options of earlier versions keep working).

Internal sub-mode (the child processes, one per measurement):

    python scripts/bench.py --run MODE RUNNER ARGS...
"""
import argparse
import importlib
import os
import pkgutil
import sys

# scripts/ (not scripts/benchmarks/) goes on the path: a mode module named like a package
# it benchmarks (dask, lvis, torchmetrics) must not shadow that package
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def modes():
    """name -> module, for every mode module of scripts/benchmarks/."""
    import benchmarks  # noqa: F401  (scripts/ is on sys.path when run as a script)
    found = {}
    for info in pkgutil.iter_modules(benchmarks.__path__):
        mod = importlib.import_module(f"benchmarks.{info.name}")
        if all(hasattr(mod, a) for a in ("MODE", "add_arguments", "run")):
            found[mod.MODE] = mod
    return dict(sorted(found.items()))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--run"]:
        if len(argv) < 3:
            sys.exit("usage: bench.py --run MODE RUNNER ARGS...")
        mod = importlib.import_module(modes()[argv[1]].__name__)
        mod.RUNNERS[argv[2]](*argv[3:])
        return 0
    found = modes()
    if argv[:1] == ["--list"]:
        for name, mod in found.items():
            print(f"{name:<14}{(mod.__doc__ or '').strip().splitlines()[0]}")
        return 0
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["coco", *argv]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True, metavar="MODE")
    for name, mod in found.items():
        p = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0],
                           description=mod.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
    args = ap.parse_args(argv)
    return found[args.mode].run(args)


if __name__ == "__main__":
    sys.exit(main())
