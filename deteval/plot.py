"""Publication figures of a JSON report, with matplotlib (the ``deteval[plot]`` extra).

:func:`write_figures` writes, for the sections the report has:

=============================  ===========================================================
``pr_mean.<fmt>``              mean precision-recall curve at each IoU in ``curves``
``pr_per_class_NN.<fmt>``      per-class curves, small multiples, 30 classes a file
``ap_per_class.<fmt>``         AP by class, sorted, bootstrap intervals as error bars
                               (LVIS: bars hatched by frequency group)
``figures.<fmt>``              headline figures with their intervals (``uncertainty``)
``tide.<fmt>``                 TIDE dAP bars (``tide``)
``confusion.<fmt>``            confusion heatmap with counts (``confusion``)
=============================  ===========================================================

Every figure has labelled axes and a legend where there is more than one series, and reads in
black-and-white print: series differ by line style and marker, not only colour; bars carry
hatches; the heatmap is grey-scale with its counts written in.
Files go through :func:`deteval.outfile.write_output` (never half-written).
"""
from __future__ import annotations

import io
import os
from typing import Callable, List, Optional

import numpy as np

from .errors import InputError, expected
from .outfile import write_output

__all__ = ["write_figures", "FORMATS"]

FORMATS = ("png", "svg", "pdf")
PER_PAGE = 30
_STYLES = [dict(color="#0072B2", linestyle="-", marker="o"),
           dict(color="#D55E00", linestyle="--", marker="s"),
           dict(color="#009E73", linestyle=":", marker="^"),
           dict(color="#CC79A7", linestyle="-.", marker="D")]
_HATCHES = ["//", "\\\\", "xx", "..", "oo", "--", "++", "**"]
#: LVIS frequency groups in the AP-by-class figure: (label, fill, hatch), print-safe.
_FREQ_STYLE = {"r": ("rare", "#ffffff", "xx"), "c": ("common", "#d9d9d9", ".."),
               "f": ("frequent", "#8c8c8c", "//")}


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise InputError("Expected matplotlib for `deteval plot` but it is not installed: "
                         "pip install 'deteval[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, folder: str, name: str, fmt: str) -> str:
    buf = io.BytesIO()
    # no creation date in the files: the same report gives the same bytes
    meta = {"png": {"Software": None}, "svg": {"Date": None},
            "pdf": {"CreationDate": None}}.get(fmt)
    fig.savefig(buf, format=fmt, dpi=200, bbox_inches="tight", metadata=meta)
    plt.close(fig)
    path = os.path.join(folder, f"{name}.{fmt}")
    write_output(path, buf.getvalue(), what="--out")
    return path


def _curve_kw(j: int, n_points: int) -> dict:
    st = dict(_STYLES[j % len(_STYLES)])
    st.update(linewidth=1.6, markersize=4, markevery=max(n_points // 10, 1),
              markerfacecolor="white")
    return st


def write_figures(report: dict, out_dir: str, fmt: str = "png",
                  progress: Optional[Callable] = None, per_page: int = PER_PAGE) -> List[str]:
    """Write the figures of ``report`` into ``out_dir``; return the paths written.

    Parameters
    ----------
    report : dict
        A JSON report (see :mod:`deteval.html` for the sections used).
    out_dir : str
        Created if missing (its parent must exist).
    fmt : {"png", "svg", "pdf"}
    progress : callable, optional
        ``progress(iterable, total)`` wrapping the per-class pages (a progress bar).
    per_page : int
        Classes per ``pr_per_class_NN`` file.

    Raises
    ------
    InputError
        matplotlib missing (names the extra), an unknown format, an unusable folder, or a
        report with nothing to plot.
    """
    if fmt not in FORMATS:
        raise InputError(expected("--format", "one of " + ", ".join(FORMATS), fmt))
    plt = _matplotlib()
    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir):
        parent = os.path.dirname(os.path.abspath(out_dir))
        if os.path.exists(out_dir) or not os.path.isdir(parent):
            raise InputError(expected("--out", "a folder (or a new one in an existing folder)",
                                      out_dir))
        try:
            os.mkdir(out_dir)
        except OSError as exc:
            raise InputError(expected("--out", "a folder that can be created",
                                      f"{out_dir} ({exc.strerror})")) from None
    from .html import _class_intervals, _figures, _headline_class_key, _intervals, _num
    written: List[str] = []
    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9,
                         "legend.fontsize": 8, "svg.hashsalt": "deteval"})
    curves = report.get("curves") if isinstance(report.get("curves"), dict) else None
    names = [str(c.get("name")) for c in report.get("classes") or []]
    if curves and curves.get("iou"):
        rec = np.asarray(curves.get("recall") or np.linspace(0, 1, 101))
        ious = list(curves["iou"])
        fig, ax = plt.subplots(figsize=(4.2, 3.6))
        for j, iou in enumerate(ious):
            mean = curves["iou"][iou].get("mean")
            if mean is not None:
                ax.plot(rec, mean, label=f"IoU {iou} (AP {np.mean(mean):.3f})",
                        **_curve_kw(j, rec.size))
        _pr_axes(ax, "mean precision-recall over classes")
        ax.legend(loc="lower left", frameon=True)
        written.append(_save(plt, fig, out_dir, "pr_mean", fmt))
        best = curves.get("best_f1") or {}
        pages = [names[i:i + per_page] for i in range(0, len(names), per_page)]
        it = progress(enumerate(pages), len(pages)) if progress and len(pages) > 3 \
            else enumerate(pages)
        for p, page in it:
            cols = 6
            rows = (len(page) + cols - 1) // cols
            fig, axes = plt.subplots(rows, cols, figsize=(2.0 * cols, 1.85 * rows + 0.5),
                                     sharex=True, sharey=True, squeeze=False)
            for ax, name in zip(axes.flat, page):
                for j, iou in enumerate(ious):
                    vals = (curves["iou"][iou].get("per_class") or {}).get(name)
                    if vals is not None:
                        ax.plot(rec, vals, label=f"IoU {iou}", **_curve_kw(j, rec.size))
                b = best.get(name)
                if b:
                    ax.plot([b["recall"]], [b["precision"]], linestyle="none", marker="*",
                            markersize=8, color="black", label="best F1")
                ax.set_title(name, fontsize=8)
                ax.set_xlim(0, 1)
                ax.set_ylim(0, 1.02)
                ax.grid(True, linewidth=0.4, alpha=0.5)
            for ax in list(axes.flat)[len(page):]:
                ax.set_visible(False)
            for ax in axes[-1]:
                ax.set_xlabel("recall")
            for ax in axes[:, 0]:
                ax.set_ylabel("precision")
            handles, labels = axes.flat[0].get_legend_handles_labels()
            for ax in axes.flat:
                h, lab = ax.get_legend_handles_labels()
                if len(lab) > len(labels):
                    handles, labels = h, lab
            if handles:
                fig.legend(handles, labels, loc="upper center", ncol=len(labels),
                           bbox_to_anchor=(0.5, 1.0), frameon=False)
            fig.tight_layout(rect=(0, 0, 1, 0.96))
            written.append(_save(plt, fig, out_dir, f"pr_per_class_{p + 1:02d}", fmt))
    hk = _headline_class_key(report)
    ci = _class_intervals(report)
    rows = [(str(c.get("name")), _num(c.get(hk))) for c in report.get("classes") or []]
    rows = sorted([r for r in rows if r[1] is not None], key=lambda r: (-r[1], r[0]))
    if len(rows) >= 2:
        shown = rows if len(rows) <= 60 else rows[:30] + rows[-30:]
        labels = [n for n, _ in shown]
        vals = np.array([v for _, v in shown])
        err = None
        if ci:
            lo = [(ci.get(n, {}).get(hk) or ci.get(n, {}).get(hk.upper()) or (v, v))[0]
                  for n, v in shown]
            hi = [(ci.get(n, {}).get(hk) or ci.get(n, {}).get(hk.upper()) or (v, v))[1]
                  for n, v in shown]
            err = np.array([vals - np.array(lo), np.array(hi) - vals]).clip(min=0)
        fig, ax = plt.subplots(figsize=(5.0, 0.8 + 0.17 * len(shown)))
        y = np.arange(len(shown))
        freq = {str(c.get("name")): c.get("frequency") for c in report.get("classes") or []}
        groups = np.array([str(freq.get(n)) for n in labels])
        bar_kw = dict(edgecolor="black", linewidth=0.5,
                      error_kw=dict(ecolor="black", capsize=2, linewidth=0.8))
        if np.isin(groups, list(_FREQ_STYLE)).any():  # LVIS: one hatch per frequency group
            for code, (group, color, hatch) in _FREQ_STYLE.items():
                sel = np.flatnonzero(groups == code)
                if sel.size:
                    ax.barh(y[sel], vals[sel], xerr=None if err is None else err[:, sel],
                            color=color, hatch=hatch, label=group + (
                                " (bootstrap interval)" if ci else ""), **bar_kw)
        else:
            ax.barh(y, vals, xerr=err, color="#bfbfbf", hatch="//",
                    label="AP" + (" with bootstrap interval" if ci else ""), **bar_kw)
        ax.set_yticks(y, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("AP")
        title = "AP by class" + ("" if len(rows) <= 60 else
                                 f" (30 best and 30 worst of {len(rows)})")
        ax.set_title(title)
        ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)
        ax.legend(loc="lower right")
        written.append(_save(plt, fig, out_dir, "ap_per_class", fmt))
    figs, iv = _figures(report), _intervals(report)
    with_iv = [k for k in figs if k in iv and figs[k] is not None]
    if with_iv:
        fig, ax = plt.subplots(figsize=(4.6, 0.8 + 0.28 * len(with_iv)))
        v = np.array([figs[k] for k in with_iv])
        lo = np.array([iv[k][0] for k in with_iv])
        hi = np.array([iv[k][1] for k in with_iv])
        y = np.arange(len(with_iv))
        ax.errorbar(v, y, xerr=np.array([v - lo, hi - v]).clip(min=0), fmt="o", color="black",
                    markerfacecolor="white", capsize=3,
                    label=f"{100 * float(report['uncertainty'].get('confidence', 0.95)):g}% "
                          "bootstrap interval")
        ax.set_yticks(y, with_iv)
        ax.invert_yaxis()
        ax.set_xlabel("value")
        ax.set_title("figures with bootstrap intervals")
        ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)
        ax.legend(loc="lower right")
        written.append(_save(plt, fig, out_dir, "figures", fmt))
    tide = report.get("tide")
    if isinstance(tide, dict) and (tide.get("main") or tide.get("special")):
        fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.8), gridspec_kw={"width_ratios": [3, 1]})
        for ax, group, title in ((axes[0], "main", "main errors"),
                                 (axes[1], "special", "special")):
            items = [(k, _num(v)) for k, v in (tide.get(group) or {}).items()]
            items = [(k, v) for k, v in items if v is not None]
            x = np.arange(len(items))
            for i, (k, v) in enumerate(items):
                ax.bar(i, v, color="white", edgecolor="black", hatch=_HATCHES[i % len(_HATCHES)],
                       label=k)
                ax.text(i, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
            ax.set_xticks(x, [k for k, _ in items])
            if group == "main":
                ax.set_ylabel("dAP (AP50 gained, 0-100)")
            ax.set_xlabel("error type")
            ax.margins(y=0.12)
            ax.set_title(title)
            ax.grid(True, axis="y", linewidth=0.4, alpha=0.5)
        fig.suptitle("TIDE error breakdown", fontsize=10)
        fig.tight_layout()
        written.append(_save(plt, fig, out_dir, "tide", fmt))
    conf = report.get("confusion")
    if isinstance(conf, dict) and conf.get("matrix"):
        from .html import MAX_HEATMAP_CLASSES
        cnames = [str(n) for n in conf.get("classes") or []]
        m = np.asarray(conf["matrix"], dtype=np.int64)
        K = len(cnames) - 1
        idx = list(range(K + 1))
        title = "confusion matrix (rows: ground truth, columns: predicted)"
        if K > MAX_HEATMAP_CLASSES:
            off = m.copy()
            np.fill_diagonal(off, 0)
            mass = off[:K, :].sum(axis=1) + off[:, :K].sum(axis=0)
            idx = sorted(np.argsort(-mass[:K], kind="stable")[:MAX_HEATMAP_CLASSES].tolist()) + [K]
            title += f", {MAX_HEATMAP_CLASSES} most confused of {K} classes"
        sub = m[np.ix_(idx, idx)]
        share = sub / np.maximum(m[idx].sum(axis=1, keepdims=True), 1)
        n = len(idx)
        fig, ax = plt.subplots(figsize=(1.6 + 0.32 * n, 1.4 + 0.3 * n))
        im = ax.imshow(share, cmap="Greys", vmin=0, vmax=1)
        for i in range(n):
            for j in range(n):
                if sub[i, j]:
                    ax.text(j, i, str(sub[i, j]), ha="center", va="center", fontsize=6,
                            color="white" if share[i, j] > 0.5 else "black")
        ax.set_xticks(range(n), [cnames[i] for i in idx], rotation=90, fontsize=7)
        ax.set_yticks(range(n), [cnames[i] for i in idx], fontsize=7)
        ax.set_xlabel("predicted class")
        ax.set_ylabel("ground-truth class")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.04, label="share of the ground-truth row")
        written.append(_save(plt, fig, out_dir, "confusion", fmt))
    if not written:
        raise InputError("Expected a report with something to plot (curves, classes with AP, "
                         "intervals, tide or confusion) but found none", None)
    return written


def _pr_axes(ax, title: str) -> None:
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_title(title)
    ax.grid(True, linewidth=0.4, alpha=0.5)
