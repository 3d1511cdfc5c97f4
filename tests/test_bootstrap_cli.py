"""`deteval coco|voc --bootstrap`, `deteval compare` on bootstrapped reports, and the
streaming metric's ``compute(bootstrap=...)``.

Reports come from the shipped fixtures (COCO: 4 classes; VOC2007: 6 classes) and a copy
of the COCO results with every other `person` detection dropped (a real regression).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.compare import compare_reports

from test_compare import cli, run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VOC_ROOT = FIXTURES / "voc" / "VOC2007"
VOC_RESULTS = FIXTURES / "voc" / "results"
COCO_GT = FIXTURES / "coco" / "instances_val.json"
COCO_RESULTS = FIXTURES / "coco" / "results.json"
SAMPLES = 60


def q(c=0.95):
    """The documented percentile points: ``[100 * (1 - c) / 2, 100 * (1 + c) / 2]``."""
    return [100 * (1 - c) / 2, 100 * (1 + c) / 2]


@pytest.fixture(scope="module")
def boot_reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("boot")
    results = json.loads(COCO_RESULTS.read_text())
    worse = [d for i, d in enumerate(results) if not (d["category_id"] == 1 and i % 2 == 0)]
    (tmp / "worse.json").write_text(json.dumps(worse))
    # a tiny change: one detection's score nudged (a drop far inside the noise)
    nudged = [dict(d) for d in results]
    nudged[0]["score"] = nudged[0]["score"] * 0.5
    (tmp / "nudged.json").write_text(json.dumps(nudged))
    jobs = {
        "coco": ("coco", COCO_GT, COCO_RESULTS, "--bootstrap", SAMPLES),
        "coco_worse": ("coco", COCO_GT, tmp / "worse.json", "--bootstrap", SAMPLES),
        "coco_nudged": ("coco", COCO_GT, tmp / "nudged.json", "--bootstrap", SAMPLES),
        "coco_seed1": ("coco", COCO_GT, tmp / "worse.json", "--bootstrap", SAMPLES,
                       "--seed", 1),
        "coco_n30": ("coco", COCO_GT, tmp / "worse.json", "--bootstrap", 30),
        "coco_plain": ("coco", COCO_GT, tmp / "worse.json"),
        "voc": ("voc", VOC_ROOT, VOC_RESULTS, "--imageset", "test", "--bootstrap", SAMPLES,
                "--confidence", "0.9"),
    }
    out = {}
    for name, args in jobs.items():
        path = tmp / f"{name}.json"
        p = cli(*args, "--json", path)
        assert p.returncode == 0, (name, p.stderr)
        out[name] = path
        out[name + ".stdout"] = p.stdout
    return out


def load(path):
    return json.loads(Path(path).read_text())


def test_coco_report_section_and_table(boot_reports):
    rep = load(boot_reports["coco"])
    u = rep["uncertainty"]
    assert u["method"] == "image bootstrap" and u["samples"] == SAMPLES and u["seed"] == 0
    assert u["confidence"] == 0.95
    assert set(u["intervals"]) == set(rep["stats"]) == set(u["replicates"])
    assert set(u["null_replicates"]) == set(rep["stats"])
    assert set(u["per_class_intervals"]) == {c["name"] for c in rep["classes"]}
    for name, reps in u["replicates"].items():
        ok = np.array([v for v in reps if v is not None])
        assert len(reps) == SAMPLES and u["null_replicates"][name] == SAMPLES - ok.shape[0]
        assert u["intervals"][name] == list(np.percentile(ok, q()))
        assert u["intervals"][name][0] <= u["intervals"][name][1]
    # the same evaluation through the API gives the same section
    api = deteval.evaluate_coco(COCO_GT, COCO_RESULTS, bootstrap=SAMPLES).to_dict()
    assert api["uncertainty"] == u
    lo, hi = u["intervals"]["AP"]
    line = [ln for ln in boot_reports["coco.stdout"].splitlines()
            if ln.strip().startswith("AP ")][0]
    assert line.split() == ["AP", f"{rep['stats']['AP']:.4f}", f"[{lo:.4f},", f"{hi:.4f}]"]
    assert "image-bootstrap percentile interval (60 replicates, seed 0)" in \
        boot_reports["coco.stdout"]


def test_voc_report_section_and_table(boot_reports):
    rep = load(boot_reports["voc"])
    u = rep["uncertainty"]
    assert u["confidence"] == 0.9 and set(u["replicates"]) == {"mAP"}
    assert set(u["per_class_intervals"]) == {c["name"] for c in rep["classes"]}
    ok = np.array([v for v in u["replicates"]["mAP"] if v is not None])
    assert u["intervals"]["mAP"] == list(np.percentile(ok, [100 * (1 - 0.9) / 2,
                                                            100 * (1 + 0.9) / 2]))
    lo, hi = u["intervals"]["mAP"]
    assert f"{rep['mAP']:.4f} [{lo:.4f}, {hi:.4f}]" in boot_reports["voc.stdout"]
    clo, chi = u["per_class_intervals"]["cat"]["AP"]
    cat = [ln for ln in boot_reports["voc.stdout"].splitlines() if ln.startswith("cat ")][0]
    assert cat.endswith(f"[{clo:.4f}, {chi:.4f}]")


# ---------------------------------------------------------------------------- compare

def test_paired_delta_intervals_and_json(boot_reports, tmp_path):
    out = tmp_path / "cmp.json"
    p = cli("compare", boot_reports["coco"], boot_reports["coco_worse"], "--max-drop", "0.01",
            "--json", out)
    assert p.returncode == 1, p.stdout + p.stderr
    got = load(out)
    assert set(got) >= {"passed", "figures", "classes"} and got["passed"] is False
    base = load(boot_reports["coco"])
    cand = load(boot_reports["coco_worse"])
    for name, fig in got["figures"].items():
        assert set(fig) >= {"baseline", "candidate", "delta", "delta_interval", "significant"}
        assert fig["baseline"] == base["stats"][name]
        assert fig["candidate"] == cand["stats"][name]
        assert fig["delta"] == pytest.approx(fig["candidate"] - fig["baseline"], abs=0)
        b = np.array([np.nan if v is None else v for v in base["uncertainty"]["replicates"][name]])
        c = np.array([np.nan if v is None else v for v in cand["uncertainty"]["replicates"][name]])
        d = (c - b)[~np.isnan(c - b)]
        assert fig["delta_interval"] == list(np.percentile(d, q()))
        lo, hi = fig["delta_interval"]
        assert fig["significant"] == (hi < 0 or lo > 0)
    assert got["figures"]["AP50"]["significant"] is True
    assert got["figures"]["AP50"]["delta_interval"][1] < 0
    assert "delta interval" in p.stdout and "paired image-bootstrap" in p.stdout


def test_significant_fails_only_on_significant_drops(boot_reports):
    base, nudged = boot_reports["coco"], boot_reports["coco_nudged"]
    plain = compare_reports(base, nudged, max_drop=0.0)
    dropped = [r for r in plain.rows if r.regressed]
    assert dropped, "the nudge should lower some figure"
    assert any(not r.significant for r in dropped)
    sig = compare_reports(base, nudged, max_drop=0.0, significant=True)
    for r in sig.rows:
        assert r.regressed == (r.baseline - r.candidate > 0 and r.delta_interval[1] < 0)
    assert len(sig.regressions) < len(dropped)
    # a real regression stays a regression
    p = cli("compare", base, boot_reports["coco_worse"], "--max-drop", "0.01", "--significant")
    assert p.returncode == 1 and "REGRESSED" in p.stdout and "significant drops only" in p.stdout


def test_significant_with_synthetic_replicates():
    """A drop beyond --max-drop whose interval straddles zero passes with --significant."""
    def report(ap, reps):
        return {"protocol": "coco", "stats": {"AP": ap}, "classes": [], "params": {},
                "inputs": {"ground_truth_sha256": "sha256:x"},
                "uncertainty": {"method": "image bootstrap", "samples": len(reps), "seed": 0,
                                "confidence": 0.95, "replicates": {"AP": reps}}}
    rng = np.random.default_rng(0)
    b = rng.normal(0.5, 0.02, 200)
    noisy = report(0.49, list(b + rng.normal(-0.01, 0.02, 200)))
    clear = report(0.49, list(b - 0.01 + rng.normal(0, 0.001, 200)))
    base = report(0.5, list(b))
    assert not compare_reports(base, noisy, max_drop=0.005).passed
    assert compare_reports(base, noisy, max_drop=0.005, significant=True).passed
    assert not compare_reports(base, clear, max_drop=0.005, significant=True).passed
    assert compare_reports(base, clear, max_drop=0.02, significant=True).passed


@pytest.mark.parametrize("other,what", [("coco_seed1", "seed"), ("coco_n30", "samples")])
def test_mismatched_draws_are_refused(boot_reports, other, what):
    p = cli("compare", boot_reports["coco"], boot_reports[other])
    assert p.returncode == 2, p.stdout + p.stderr
    assert "deteval: error:" in p.stderr and f"uncertainty.{what}" in p.stderr
    assert p.stdout == ""


def test_mismatched_ground_truth_is_refused(boot_reports, tmp_path):
    gt = json.loads(COCO_GT.read_text())
    gt["annotations"][0]["bbox"][2] += 1.0
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    other = tmp_path / "other.json"
    assert cli("coco", path, COCO_RESULTS, "--bootstrap", SAMPLES, "--json", other
               ).returncode == 0
    p = cli("compare", boot_reports["coco"], other)
    assert p.returncode == 2 and "ground truth" in p.stderr


def test_one_side_without_replicates_keeps_the_plain_rule(boot_reports):
    p = cli("compare", boot_reports["coco"], boot_reports["coco_plain"], "--max-drop", "0.01",
            "--significant")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "delta interval" not in p.stdout.splitlines()[0]
    assert "only the baseline has bootstrap replicates" in p.stdout
    assert "--significant needs bootstrap replicates" in p.stdout


def test_per_class_rows_in_json(boot_reports, tmp_path):
    out = tmp_path / "cmp.json"
    cli("compare", boot_reports["coco"], boot_reports["coco_worse"], "--per-class",
        "--metrics", "AP50", "--json", out)
    got = load(out)
    assert set(got["figures"]) == {"AP50"}
    assert set(got["classes"]) == {c["name"] for c in load(boot_reports["coco"])["classes"]}
    assert got["classes"]["person"]["AP50"]["delta"] < 0
    assert got["classes"]["person"]["AP50"]["delta_interval"] is None


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,needle", [
    (("--bootstrap", "0"), "`--bootstrap` to be an integer >= 1"),
    (("--bootstrap", "-5"), "`--bootstrap` to be an integer >= 1"),
    (("--bootstrap", "10", "--confidence", "0"), "open interval (0, 1)"),
    (("--bootstrap", "10", "--confidence", "1"), "open interval (0, 1)"),
    (("--bootstrap", "10", "--confidence", "1.5"), "open interval (0, 1)"),
    (("--bootstrap", "10", "--confidence", "-0.2"), "open interval (0, 1)"),
    (("--bootstrap", "10", "--seed", "-1"), "`--seed` to be an integer >= 0"),
    (("--confidence", "0.9"), "only with `--bootstrap N`"),
])
@pytest.mark.parametrize("kind", ["coco", "voc"])
def test_bad_bootstrap_options_exit_2_and_write_nothing(tmp_path, kind, args, needle):
    out = tmp_path / "r.json"
    base = (("coco", COCO_GT, COCO_RESULTS) if kind == "coco"
            else ("voc", VOC_ROOT, VOC_RESULTS, "--imageset", "test"))
    p = cli(*base, *args, "--json", out)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == "" and not out.exists()


def test_bad_bootstrap_in_a_real_process(tmp_path):
    p = run("coco", COCO_GT, COCO_RESULTS, "--bootstrap", "0")
    assert p.returncode == 2 and "integer >= 1" in p.stderr and p.stdout == ""


def test_api_bad_parameters_raise_input_error():
    with pytest.raises(deteval.InputError, match="bootstrap"):
        deteval.evaluate_coco(COCO_GT, COCO_RESULTS, bootstrap=0)
    with pytest.raises(deteval.InputError, match="confidence"):
        deteval.evaluate_voc(VOC_ROOT, VOC_RESULTS, imageset="test", bootstrap=5,
                             confidence=1.0)


# ---------------------------------------------------------------------------- streaming

def _metric_from_fixture(protocol="coco"):
    gt = json.loads(COCO_GT.read_text())
    results = json.loads(COCO_RESULTS.read_text())
    ids = [im["id"] for im in gt["images"]]
    tgt = {i: {"boxes": [], "labels": [], "iscrowd": [], "area": []} for i in ids}
    prd = {i: {"boxes": [], "scores": [], "labels": []} for i in ids}
    for a in gt["annotations"]:
        t = tgt[a["image_id"]]
        t["boxes"].append(a["bbox"])
        t["labels"].append(a["category_id"])
        t["iscrowd"].append(a.get("iscrowd", 0))
        t["area"].append(a["area"])
    for d in results:
        p = prd[d["image_id"]]
        p["boxes"].append(d["bbox"])
        p["scores"].append(d["score"])
        p["labels"].append(d["category_id"])

    def arrays(d):
        return {k: np.array(v, dtype=np.float64).reshape(-1, 4) if k == "boxes" else np.array(v)
                for k, v in d.items()}

    metric = deteval.MeanAveragePrecision(
        "coco", box_format="xywh", class_names={c["id"]: c["name"] for c in gt["categories"]})
    order = ids[::-1]  # any update order: images are drawn by ascending id
    for s in range(0, len(order), 3):
        batch = order[s:s + 3]
        metric.update([arrays(prd[i]) for i in batch], [arrays(tgt[i]) for i in batch],
                      image_ids=batch)
    return metric


def test_streaming_metric_bootstrap_equals_cli(boot_reports):
    metric = _metric_from_fixture()
    rep = metric.compute(bootstrap=SAMPLES, seed=0).to_dict()
    want = load(boot_reports["coco"])["uncertainty"]
    got = rep["uncertainty"]
    assert got["intervals"] == want["intervals"]
    assert got["per_class_intervals"] == want["per_class_intervals"]
    for name in want["replicates"]:
        assert got["replicates"][name] == want["replicates"][name]
    assert metric.compute().uncertainty is None  # plain compute unchanged
    with pytest.raises(deteval.InputError, match="bootstrap"):
        metric.compute(bootstrap=0)


def test_streaming_metric_voc_bootstrap():
    rng = np.random.default_rng(0)
    metric = deteval.MeanAveragePrecision("voc12", class_names=["a", "b"])
    for i in range(20):
        boxes = rng.integers(0, 50, (3, 2)).astype(float)
        gt_boxes = np.hstack([boxes, boxes + 10])
        det = gt_boxes + rng.integers(-3, 4, gt_boxes.shape)
        metric.update([{"boxes": det, "scores": rng.random(3), "labels": rng.integers(0, 2, 3)}],
                      [{"boxes": gt_boxes, "labels": rng.integers(0, 2, 3)}], image_ids=[i])
    rep = metric.compute(bootstrap=40, seed=3)
    u = rep.uncertainty
    assert u["samples"] == 40 and set(u["replicates"]) == {"mAP"}
    ok = np.array([v for v in u["replicates"]["mAP"] if v is not None])
    assert u["intervals"]["mAP"] == list(np.percentile(ok, q()))
    assert u["intervals"]["mAP"][0] <= rep.mAP + 0.2
