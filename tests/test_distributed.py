"""deteval.distributed on a real LocalCluster (2 worker processes): bit-identical reports.

Every report is compared with the single-process ``deteval.evaluate_coco`` on the shards'
concatenation (their order is the tie order), with ``==`` on the whole JSON report.
"""
import copy
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed", reason="the Dask extra (deteval[dask]) is not installed")

import deteval  # noqa: E402
from deteval import distributed as dd  # noqa: E402
from deteval.errors import InputError  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import coco_gen  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_GT = ROOT / "fixtures" / "coco" / "instances_val.json"
FIXTURE_RES = ROOT / "fixtures" / "coco" / "results.json"


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    import logging
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _single(gt, results):
    return deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results)).to_dict()


def _comparable(report):
    d = dict(report)
    d.pop("engine", None)
    d["inputs"] = {k: v for k, v in d["inputs"].items() if k not in ("results", "ground_truth")}
    return d


def _write_shards(folder, results, cuts, fmt="json"):
    folder.mkdir(parents=True, exist_ok=True)
    parts = np.split(np.arange(len(results)), cuts)
    paths = []
    for i, rows in enumerate(parts):
        recs = [results[j] for j in rows]
        path = folder / f"part-{i:03d}.{fmt}"
        if fmt == "json":
            path.write_text(json.dumps(recs))
        elif fmt == "jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        else:
            pa = pytest.importorskip("pyarrow")
            import pyarrow.parquet as pq
            table = pa.table({"image_id": [r["image_id"] for r in recs],
                              "category_id": [r["category_id"] for r in recs],
                              "score": pa.array([float(r["score"]) for r in recs], pa.float64()),
                              "bbox": pa.array([[float(v) for v in r["bbox"]] for r in recs],
                                               pa.list_(pa.float64()))})
            pq.write_table(table, path)
        paths.append(path)
    return paths


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_uneven_shuffled_shards_equal_single_process(client, tmp_path, seed):
    case = coco_gen.generate_case(seed)
    results = coco_gen.shuffle_results(case.results, seed)  # images spread over shards
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, len(results) + 1, rng.integers(1, 6)))  # uneven, maybe empty
    paths = _write_shards(tmp_path, results, cuts)
    one = _single(case.gt, results)
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case.gt))
    rep = dd.evaluate_coco(gt_path, [str(p) for p in paths], client=client,
                           partitions=int(rng.integers(1, 5))).to_dict()
    assert _comparable(rep) == _comparable(one)
    assert rep["engine"]["name"] == "dask" and rep["engine"]["workers"] == 2
    assert rep["engine"]["shards"] == len(paths)


def test_ties_across_shards_follow_the_concatenated_order(client, tmp_path):
    gt = json.loads(FIXTURE_GT.read_text())
    results = json.loads(FIXTURE_RES.read_text())
    for r in results:  # few distinct scores: many ties, across images and shards
        r["score"] = round(r["score"], 1)
    rng = np.random.default_rng(7)
    results = [results[i] for i in rng.permutation(len(results))]
    paths = _write_shards(tmp_path, results, [10, 10, 50, 200])  # an empty shard too
    rep = dd.evaluate_coco(gt, [str(p) for p in paths], client=client, partitions=3,
                           class_partitions=2).to_dict()
    assert _comparable(rep) == _comparable(_single(gt, results))
    # another shard order is another concatenation: equal to that one's single run
    rev = dd.evaluate_coco(gt, [str(p) for p in paths[::-1]], client=client).to_dict()
    flat = [r for p in paths[::-1] for r in json.loads(p.read_text())]
    assert _comparable(rev) == _comparable(_single(gt, flat))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_json_lines_and_parquet_shards(client, tmp_path, fmt):
    gt = json.loads(FIXTURE_GT.read_text())
    results = json.loads(FIXTURE_RES.read_text())
    paths = _write_shards(tmp_path, results, [30, 90], fmt)
    rep = dd.evaluate_coco(gt, str(tmp_path / f"part-*.{fmt}"), client=client).to_dict()
    assert _comparable(rep) == _comparable(_single(gt, results))
    assert rep["inputs"]["results"] == [str(p) for p in paths]


def test_custom_parameters(client, tmp_path):
    gt = json.loads(FIXTURE_GT.read_text())
    results = json.loads(FIXTURE_RES.read_text())
    paths = _write_shards(tmp_path, results, [40])
    kw = dict(iou_thresholds=[0.3, 0.5, 0.7], max_dets=[1, 5, 50],
              area_ranges={"all": (0, 1e10), "tiny": (0, 400)})
    rep = dd.evaluate_coco(gt, [str(p) for p in paths], client=client, **kw).to_dict()
    one = deteval.evaluate_coco(gt, results, **kw).to_dict()
    assert _comparable(rep) == _comparable(one)


def test_missing_and_bad_shards_are_named(client, tmp_path):
    gt = json.loads(FIXTURE_GT.read_text())
    with pytest.raises(InputError, match=r"nope-\*\.json.*matches no file"):
        dd.expand_shards(str(tmp_path / "nope-*.json"))
    with pytest.raises(InputError, match=r"missing"):
        dd.expand_shards([str(tmp_path / "absent.json")])
    results = json.loads(FIXTURE_RES.read_text())
    results[5]["image_id"] = 987654321
    paths = _write_shards(tmp_path, results, [3])
    with pytest.raises(InputError, match=r"part-001\.json.*results\[2\].*987654321"):
        dd.evaluate_coco(gt, [str(p) for p in paths], client=client)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"image_id": 1}\n{not json\n')
    with pytest.raises(InputError, match=r"broken\.jsonl.*line 2"):
        dd.evaluate_coco(gt, [str(broken)], client=client)


def test_a_killed_worker_is_retried_and_the_result_is_unchanged(tmp_path):
    from distributed import Client, LocalCluster
    import logging
    case = coco_gen.generate_case(11)
    results = coco_gen.shuffle_results(case.results, 11)
    paths = _write_shards(tmp_path, results, list(range(5, len(results), 5)))  # many shards
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    c = Client(cluster)
    try:
        pids = list(c.run(os.getpid).values())
        out = {}

        def run():
            out["report"] = dd.evaluate_coco(copy.deepcopy(case.gt), [str(p) for p in paths],
                                             client=c, partitions=4).to_dict()

        t = threading.Thread(target=run)
        t.start()
        os.kill(pids[0], 9)  # the nanny restarts it; its tasks are recomputed
        t.join(120)
        assert not t.is_alive()
        assert set(c.run(os.getpid).values()) != set(pids)  # the worker really died
        assert _comparable(out["report"]) == _comparable(_single(case.gt, results))
    finally:
        c.close()
        cluster.close()


def test_cli_local_cluster_and_missing_extra(tmp_path):
    results = json.loads(FIXTURE_RES.read_text())
    _write_shards(tmp_path, results, [100])
    out = tmp_path / "report.json"
    p = subprocess.run([sys.executable, "-m", "deteval", "coco", str(FIXTURE_GT),
                        str(tmp_path / "part-*.json"), "--dask", "local:2", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rep = json.loads(out.read_text())
    assert rep["engine"]["workers"] == 2 and rep["engine"]["shards"] == 2
    assert _comparable(rep) == _comparable(_single(json.loads(FIXTURE_GT.read_text()), results))
    # without the extra: exit 2 naming it, nothing written
    code = ("import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None; "
            "from deteval.cli import main; sys.exit(main(sys.argv[1:]))")
    out2 = tmp_path / "none.json"
    p = subprocess.run([sys.executable, "-c", code, "coco", str(FIXTURE_GT),
                        str(tmp_path / "part-*.json"), "--dask", "local:2", "--json", str(out2)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "deteval[dask]" in p.stderr and "Traceback" not in p.stderr
    assert not out2.exists()
    p = subprocess.run([sys.executable, "-m", "deteval", "coco", str(FIXTURE_GT),
                        str(FIXTURE_RES), "--dask", "local:zero"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "local:N" in p.stderr


# ------------------------------------------------------------------------------ VOC

VOC_ANN = ROOT / "fixtures" / "voc" / "VOC2007"
VOC_DET = ROOT / "fixtures" / "voc" / "results"


def _voc_shards(tmp_path, n_shards, seed, tie=False):
    """Split every class file's lines into ``n_shards`` folders (contiguous runs, some
    empty); with ``tie`` the scores are rounded first (ties across shards)."""
    rng = np.random.default_rng(seed)
    whole = tmp_path / "whole"
    whole.mkdir()
    folders = [tmp_path / f"shard-{i:02d}" for i in range(n_shards)]
    for f in folders:
        f.mkdir()
    for path in sorted(VOC_DET.glob("*.txt")):
        lines = path.read_text().splitlines(keepends=True)
        if tie:
            lines = [" ".join([p[0], f"{float(p[1]):.1f}", *p[2:]]) + "\n"
                     for p in (ln.split() for ln in lines)]
        (whole / path.name).write_text("".join(lines))
        cuts = np.sort(rng.integers(0, len(lines) + 1, n_shards - 1))
        for f, part in zip(folders, np.split(np.arange(len(lines)), cuts)):
            if part.size or rng.random() < 0.5:  # a class may be absent from a shard
                (f / path.name).write_text("".join(lines[i] for i in part))
    return whole, folders


@pytest.mark.parametrize("compat", ["devkit", "detectron2"])
@pytest.mark.parametrize("metric", ["voc07", "voc12"])
def test_voc_shards_equal_single_process(client, tmp_path, compat, metric):
    whole, folders = _voc_shards(tmp_path, 4, 3, tie=True)
    kw = dict(imageset="test", metric=metric, compat=compat)
    one = deteval.evaluate_voc(VOC_ANN, whole, **kw).to_dict()
    rep = dd.evaluate_voc(VOC_ANN, str(tmp_path / "shard-*"), client=client, **kw).to_dict()
    assert rep["engine"]["shards"] == 4
    for d in (one, rep):
        d.pop("engine", None)
        d["inputs"].pop("detections")
    assert rep == one


def test_voc_cli_and_missing_shard(tmp_path):
    whole, folders = _voc_shards(tmp_path, 3, 5)
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "deteval", "voc", str(VOC_ANN),
                        str(tmp_path / "shard-*"), "--imageset", "test", "--dask", "local:2",
                        "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    one = deteval.evaluate_voc(VOC_ANN, whole, imageset="test").to_dict()
    assert json.loads(out.read_text())["mAP"] == one["mAP"]
    with pytest.raises(InputError, match="missing"):
        from distributed import Client  # noqa: F401
        dd.evaluate_voc(VOC_ANN, [str(tmp_path / "absent")], client=None)


def test_streaming_metrics_reduced_on_the_cluster(client):
    """Per-rank metrics reduced on the cluster equal merging them and computing."""
    gt = json.loads(FIXTURE_GT.read_text())
    results = json.loads(FIXTURE_RES.read_text())
    by_image = {}
    for a in gt["annotations"]:
        by_image.setdefault(a["image_id"], ([], []))[0].append(a)
    for r in results:
        by_image.setdefault(r["image_id"], ([], []))[1].append(r)
    ids = [im["id"] for im in gt["images"]]
    names = {c["id"]: c["name"] for c in gt["categories"]}

    def inputs(i):
        anns, res = by_image.get(i, ([], []))
        return ({"boxes": np.array([r["bbox"] for r in res]).reshape(-1, 4),
                 "scores": np.array([r["score"] for r in res]),
                 "labels": np.array([r["category_id"] for r in res], dtype=np.int64)},
                {"boxes": np.array([a["bbox"] for a in anns]).reshape(-1, 4),
                 "labels": np.array([a["category_id"] for a in anns], dtype=np.int64),
                 "iscrowd": np.array([a.get("iscrowd", 0) for a in anns]),
                 "area": np.array([a["area"] for a in anns])})

    ranks = []
    for r in range(3):
        m = deteval.MeanAveragePrecision("coco", "xywh", class_names=names)
        mine = ids[r::3]
        pairs = [inputs(i) for i in mine]
        m.update([p for p, _ in pairs], [t for _, t in pairs], image_ids=mine)
        ranks.append(m)
    got = dd.compute_metric(ranks, client=client).to_dict()
    merged = copy.deepcopy(ranks[0]).merge(ranks[1]).merge(ranks[2]).compute().to_dict()
    got.pop("engine")
    assert got == merged
    assert got["stats"] == deteval.evaluate_coco(FIXTURE_GT, FIXTURE_RES).to_dict()["stats"]
