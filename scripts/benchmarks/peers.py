"""Child runners shared by the COCO-family modes: pycocotools and faster-coco-eval on one
iouType, each writing its summary figures (``stats``, -1 as null) to a JSON file."""
import json


def _write(out, stats):
    vals = [None if (float(v) == -1.0 or v != v) else float(v) for v in stats]
    with open(out, "w") as f:
        json.dump({"stats_list": vals}, f)


def run_pycocotools(gt, dt, out, iou_type):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    cgt = COCO(gt)
    ev = COCOeval(cgt, cgt.loadRes(dt), iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    _write(out, ev.stats)


def run_fce(gt, dt, out, iou_type):
    from faster_coco_eval import COCO, COCOeval_faster
    cgt = COCO(gt)
    ev = COCOeval_faster(cgt, cgt.loadRes(dt), iouType=iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    _write(out, ev.stats)


def read(out, deteval_tool):
    """The figures of a run, in pycocotools' order (deteval's report: its stats by order)."""
    with open(out) as f:
        rep = json.load(f)
    return list(rep["stats"].values()) if deteval_tool else rep["stats_list"]


def compare(cmds, outs, d, env, repeat, labels):
    """Time every tool, then print the table, the ratios and the agreement."""
    from benchmarks import runner
    walls, rss, failed = runner.time_tools(cmds, d, env, repeat, labels)
    rows = runner.print_timing_table(walls, rss, labels, base="deteval")
    figs = {k: read(outs[k], k == "deteval") for k in cmds if k not in failed}
    ok = not failed
    if "deteval" in figs:
        for other in ("pycocotools", "fce"):
            if other in figs:
                diff = runner.max_abs_diff(figs["deteval"], figs[other][:len(figs["deteval"])])
                flag = "" if other != "pycocotools" or diff <= 1e-12 else "   <<<< FAIL"
                ok = ok and not flag
                print(f"  max |deteval - {labels[other]}|: {diff:.3g}{flag}")
        if "pycocotools" in rows:
            print(f"  deteval time / pycocotools: {rows['deteval'][0] / rows['pycocotools'][0]:.3f}"
                  f"   peak RSS deteval / pycocotools: "
                  f"{rows['deteval'][2] / rows['pycocotools'][2]:.2f}")
        if "fce" in rows:
            print(f"  deteval time / faster-coco-eval: {rows['deteval'][0] / rows['fce'][0]:.3f}"
                  f"   peak RSS deteval / faster-coco-eval: {rows['deteval'][2] / rows['fce'][2]:.2f}")
    return ok
