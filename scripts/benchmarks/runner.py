"""The one harness every benchmark mode uses.

Each measured tool runs as its own child process (interpreter start, imports, loading,
evaluation and writing a report all count), started in a folder outside the source tree so
``python -m deteval`` imports the installed package. Wall time comes from the parent's clock,
peak memory from the child's own ``ru_maxrss`` (``os.wait4``), so every tool is measured the
same way in the same run.
"""
import os
import subprocess
import tempfile
import time

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench.py")


def default_workdir(mode: str) -> str:
    """Data and output folder of a mode (data is reused per parameter set)."""
    return os.path.join(tempfile.gettempdir(), "deteval-bench" if mode == "coco"
                        else f"deteval-bench-{mode}")


def child_env(workdir, keep_env=False):
    """Environment for the children.

    The sandbox sets PYTHONDONTWRITEBYTECODE, which would make every child recompile
    deteval while the peers ship precompiled .pyc files. Give all children a bytecode
    cache under the workdir instead (PYTHONPYCACHEPREFIX); the first, untimed run of each
    command (or :func:`warm_imports`) fills it.
    """
    env = dict(os.environ)
    if not keep_env:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(workdir, "pycache")
    return env


def runner_cmd(python, mode, name, *args):
    """Command line of a child that runs ``RUNNERS[name]`` of ``mode`` with ``args``."""
    return [python, BENCH, "--run", mode, name, *map(str, args)]


def warm_imports(python, env, modules=(), deteval_cli=("coco", "--help")):
    """Untimed: fill the bytecode cache (peer imports, deteval sources, CLI --help)."""
    code = ["import importlib, json, numpy"]
    for m in modules:
        code.append(f"try:\n    importlib.import_module({m!r})\nexcept Exception:\n    pass")
    code.append("try:\n    import compileall, os, deteval\n"
                "    compileall.compile_dir(os.path.dirname(deteval.__file__), quiet=2)\n"
                "except Exception:\n    pass")
    kw = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    subprocess.run([python, "-c", "\n".join(code)], **kw)
    if deteval_cli:
        subprocess.run([python, "-m", "deteval", *deteval_cli], **kw)


def run_child(cmd, cwd, env=None, log_path=None):
    """Run ``cmd`` as a child in ``cwd``; return ``(wall_s, peak_rss_MiB, rc, output)``.

    ``output`` is the child's stderr (and stdout when ``log_path`` is given, where both
    are also kept)."""
    if log_path is None:
        out = tempfile.TemporaryFile()
        stdout = subprocess.DEVNULL
    else:
        out = open(log_path, "w+b")
        stdout = subprocess.STDOUT
    with out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out if log_path else stdout, stderr=out, env=env,
                             cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return wall, ru.ru_maxrss / 1024.0, rc, text  # Linux: ru_maxrss in KiB


def in_subprocess(fn, *args):
    """``fn(*args)`` in a fresh process (spawned), its return value back.

    Data generation holds gigabytes; done in this process, every child started later
    would report this process's peak as its own (Linux carries the pre-exec high-water
    RSS into the child's ``ru_maxrss``). So the harness itself stays small."""
    import multiprocessing
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def max_abs_diff(a, b):
    """Largest |a_i - b_i| over two equal-length sequences with None for undefined;
    inf when one side is None and the other is not."""
    m = 0.0
    for x, y in zip(a, b):
        if x is None or y is None:
            if (x is None) != (y is None):
                return float("inf")
            continue
        m = max(m, abs(x - y))
    return m


def load_note():
    """A warning line when other work is running (timings may be noisy), else ''."""
    load = os.getloadavg()[0]
    if load > 0.7:
        return (f"    note: 1-min load average {load:.2f} on {os.cpu_count()} CPUs before "
                f"timing: other work is running, timings may be noisy")
    return ""


def dump_json(obj, path):
    """Write ``obj`` as compact JSON (orjson when available), atomically."""
    tmp = path + ".tmp"
    try:
        import orjson
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(obj))
    except ImportError:
        import json
        with open(tmp, "w") as f:
            json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def time_tools(cmds, cwd, env, repeat, labels=None, log_dir=None):
    """Run every command ``repeat`` times, rotating the order each round.

    Parameters
    ----------
    cmds : dict name -> command list
    Returns ``(walls, rss, failed)``: name -> list of seconds, name -> list of MiB, and
    name -> the failing child's output for tools that failed (not run again).
    """
    labels = labels or {}
    names = list(cmds)
    walls = {k: [] for k in names}
    rss = {k: [] for k in names}
    failed = {}
    for r in range(repeat):
        order = names[r % len(names):] + names[:r % len(names)] if names else []
        for k in order:
            if k in failed:
                continue
            log = os.path.join(log_dir, f"log_{k}.txt") if log_dir else None
            w, m, rc, text = run_child(cmds[k], cwd, env, log)
            if rc != 0:
                failed[k] = text
                print(f"    [{r + 1}/{repeat}] {labels.get(k, k)}: FAILED (rc={rc})")
                print("      " + "\n      ".join(text.strip().splitlines()[-15:]))
                continue
            walls[k].append(w)
            rss[k].append(m)
            print(f"    [{r + 1}/{repeat}] {labels.get(k, k):<36} {w:8.2f} s  {m:8.1f} MiB",
                  flush=True)
    return walls, rss, failed


def print_timing_table(walls, rss, labels=None, base=None):
    """Median / min / max seconds and peak RSS per tool, and each tool's time over
    ``base``'s (the deteval row)."""
    labels = labels or {}
    print(f"\n  {'tool':<36}{'median s':>10}{'min s':>10}{'max s':>10}{'peak MiB':>10}"
          f"{'x ' + labels.get(base, base or '') if base else '':>16}")
    rows = {}
    for k in walls:
        if not walls[k]:
            continue
        rows[k] = (median(walls[k]), min(walls[k]), max(rss[k]))
    for k, (med, lo, peak) in rows.items():
        ratio = f"{med / rows[base][0]:.2f}x" if base in rows else ""
        print(f"  {labels.get(k, k):<36}{med:>10.2f}{lo:>10.2f}{max(walls[k]):>10.2f}"
              f"{peak:>10.1f}{ratio:>16}")
    return rows
