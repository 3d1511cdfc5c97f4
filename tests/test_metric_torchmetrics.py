"""deteval.MeanAveragePrecision called as torchmetrics' against torchmetrics itself
(pycocotools backend): the same keys, shapes, -1 conventions and values to 1e-6."""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.metric import MeanAveragePrecision

sys.path.insert(0, str(Path(__file__).parent))
from tm_oracle import torchmetrics_map  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def make_batch(seed, n_images=25, n_labels=4, label_values=None, crowd=True, area=False,
               empty_preds=False, tensor=True):
    import torch
    rng = np.random.default_rng(seed)
    labels_pool = np.array(label_values if label_values is not None else range(n_labels))
    preds, target = [], []
    for i in range(n_images):
        g = int(rng.integers(0, 6)) if i % 7 else 0  # some images without targets
        d = 0 if empty_preds and i % 2 else int(rng.integers(0, 12))
        gb = rng.uniform(0, 200, (g, 2))
        gb = np.concatenate([gb, gb + rng.uniform(5, 100, (g, 2))], 1)
        db = rng.uniform(0, 300, (d, 4))
        k = min(d, g)
        db[:k] = gb[:k] + rng.normal(0, 4, (k, 4))
        db[:, 2:] = np.maximum(db[:, 2:], db[:, :2] + 1)
        p = dict(boxes=torch.tensor(db, dtype=torch.float32),
                 scores=torch.tensor(np.round(rng.random(d), 1), dtype=torch.float32),
                 labels=torch.tensor(rng.choice(labels_pool, d)))
        t = dict(boxes=torch.tensor(gb, dtype=torch.float32),
                 labels=torch.tensor(rng.choice(labels_pool, g)))
        if crowd and i % 3 == 0:
            t["iscrowd"] = torch.tensor(rng.random(g) < 0.25).long()
        if area:
            t["area"] = torch.tensor(np.where(rng.random(g) < 0.5, 0.0,
                                              rng.uniform(10, 20000, g)), dtype=torch.float32)
        if not tensor:
            p = {k: v.numpy() for k, v in p.items()}
            t = {k: v.numpy() for k, v in t.items()}
        preds.append(p)
        target.append(t)
    return preds, target


def assert_same(ours, ref):
    import torch
    assert set(ours) == set(ref), set(ours) ^ set(ref)
    for k in ours:
        a, b = ours[k], ref[k]
        if k.endswith("ious"):
            assert set(a) == set(b), set(a) ^ set(b)
            for key in b:
                if isinstance(b[key], list):
                    assert a[key] == b[key] == [], key
                else:
                    assert tuple(a[key].shape) == tuple(b[key].shape), key
                    assert torch.allclose(a[key], b[key], atol=1e-6, rtol=0), key
            continue
        if not isinstance(a, torch.Tensor):
            a = torch.from_numpy(np.asarray(a))
        assert tuple(a.shape) == tuple(b.shape), (k, a.shape, b.shape)
        assert a.dtype == b.dtype or k in ("precision", "recall"), (k, a.dtype, b.dtype)
        assert torch.allclose(a.double(), b.double(), atol=1e-6, rtol=0), (k, a, b)


CASES = [
    {}, dict(box_format="xywh"), dict(box_format="cxcywh"),
    dict(iou_thresholds=[0.3, 0.5, 0.75]), dict(iou_thresholds=[0.6, 0.8]),
    dict(rec_thresholds=[0.0, 0.25, 0.5, 0.75, 1.0]),
    dict(max_detection_thresholds=[1, 5, 50]), dict(max_detection_thresholds=[100, 1, 10]),
    dict(class_metrics=True), dict(extended_summary=True), dict(average="micro"),
    dict(average="micro", class_metrics=True),
]


@pytest.mark.parametrize("kwargs", CASES, ids=[str(c) for c in CASES])
def test_equals_torchmetrics(kwargs):
    TM = torchmetrics_map()
    preds, target = make_batch(1)
    ours = MeanAveragePrecision(**kwargs)
    ours.update(preds, target)
    ref = TM(**kwargs)
    ref.update(preds, target)
    assert_same(ours.compute(), ref.compute())


@pytest.mark.parametrize("variant", ["area", "empty_preds", "noncontiguous", "batches"])
def test_equals_torchmetrics_on_variants(variant):
    TM = torchmetrics_map()
    kw = dict(area=variant == "area", empty_preds=variant == "empty_preds",
              label_values=[3, 17, 42, 1000] if variant == "noncontiguous" else None)
    preds, target = make_batch(2, **kw)
    ours, ref = MeanAveragePrecision(class_metrics=True), TM(class_metrics=True)
    if variant == "batches":  # several update() calls give what one call gives
        for s in range(0, len(preds), 6):
            ours.update(preds[s:s + 6], target[s:s + 6])
    else:
        ours.update(preds, target)
    ref.update(preds, target)
    assert_same(ours.compute(), ref.compute())


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_equals_torchmetrics_sweep(seed):
    TM = torchmetrics_map()
    kwargs = CASES[seed % len(CASES)]
    preds, target = make_batch(100 + seed, area=seed % 2 == 0)
    ours, ref = MeanAveragePrecision(**kwargs), TM(**kwargs)
    ours.update(preds, target)
    ref.update(preds, target)
    assert_same(ours.compute(), ref.compute())


def test_numpy_in_numpy_out_without_importing_torch():
    code = ("import sys, numpy as np\n"
            "from deteval import MeanAveragePrecision\n"
            "m = MeanAveragePrecision()\n"
            "m.update([dict(boxes=np.array([[0, 0, 10, 10.]]), scores=np.array([.9]),"
            " labels=np.array([1]))], [dict(boxes=np.array([[0, 0, 10, 10.]]),"
            " labels=np.array([1]))])\n"
            "r = m.compute()\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "assert isinstance(r['map'], np.ndarray) and r['map'].shape == () and r['map'] == 1\n"
            "assert r['classes'].dtype == np.int32 and r['mar_100_per_class'] == -1\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_defaults_and_argument_errors():
    pytest.importorskip("torch")
    m = MeanAveragePrecision()
    assert isinstance(m, MeanAveragePrecision) and m.box_format == "xyxy"
    assert deteval.MeanAveragePrecision is MeanAveragePrecision
    assert m.iou_thresholds[1] == 0.550000011920929 and len(m.rec_thresholds) == 101
    with pytest.raises(ValueError, match="Unexpected keyword arguments: `foo`"):
        MeanAveragePrecision(foo=1)
    with pytest.raises(ValueError, match="Expected argument `box_format` to be one of"):
        MeanAveragePrecision(box_format="yxyx")
    with pytest.raises(ValueError, match="should have length 3"):
        MeanAveragePrecision(max_detection_thresholds=[1, 10])
    with pytest.raises(ValueError, match="`average` to be one of"):
        MeanAveragePrecision(average="weighted")
    MeanAveragePrecision(backend="faster_coco_eval", dist_sync_on_step=False)  # accepted
    # deteval's own face when its keywords select it
    native = MeanAveragePrecision(protocol="coco", box_format="xywh")
    assert type(native) is MeanAveragePrecision and native.protocol == "coco"


def test_forward_merge_pickle_and_reset():
    TM = torchmetrics_map()
    preds, target = make_batch(3)
    m = MeanAveragePrecision()
    batch_value = m(preds[:10], target[:10])
    ref = TM()
    assert_same(batch_value, ref(preds[:10], target[:10]))
    other = MeanAveragePrecision()
    other.update(preds[10:], target[10:])
    m.merge(pickle.loads(pickle.dumps(other)))
    ref.update(preds[10:], target[10:])
    assert_same(m.compute(), ref.compute())
    state = m.state_dict()
    fresh = MeanAveragePrecision()
    fresh.load_state_dict(state)
    assert_same(fresh.compute(), ref.compute())
    m.reset()
    assert float(m.compute()["map"]) == -1


_DIST = r'''
import os, sys, numpy as np, torch, torch.distributed as dist
sys.path.insert(0, sys.argv[3])
from test_metric_torchmetrics import make_batch
from deteval import MeanAveragePrecision
rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=rank, world_size=2)
preds, target = make_batch(5)
m = MeanAveragePrecision(class_metrics=True)
half = len(preds) // 2
sl = slice(0, half) if rank == 0 else slice(half, None)
m.update(preds[sl], target[sl])
r = m.compute()
print("RESULT", float(r["map"]), float(r["mar_100"]), r["map_per_class"].tolist())
dist.destroy_process_group()
'''


def test_distributed_two_processes_gloo(tmp_path):
    TM = torchmetrics_map()
    pytest.importorskip("torch.distributed")
    script = tmp_path / "dist_child.py"
    script.write_text(_DIST)
    init = tmp_path / "init"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(init),
                               str(ROOT / "tests")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
             for r in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    results = [next(ln for ln in out.splitlines() if ln.startswith("RESULT")) for out, _ in outs]
    assert results[0] == results[1]  # every rank gets the global figures
    preds, target = make_batch(5)
    ref = TM(class_metrics=True)
    ref.update(preds, target)
    r = ref.compute()
    got = results[0].split(maxsplit=3)
    assert abs(float(got[1]) - float(r["map"])) <= 1e-6
    assert abs(float(got[2]) - float(r["mar_100"])) <= 1e-6


def _mask_batch(seed, n_images=8, h=24, w=20):
    import torch
    rng = np.random.default_rng(seed)
    preds, target = [], []
    for i in range(n_images):
        g, d = int(rng.integers(1, 4)), int(rng.integers(0, 5))

        def masks(n, around=None):
            m = np.zeros((n, h, w), dtype=np.uint8)
            for j in range(n):
                if around is not None and j < len(around):
                    base = around[j].copy()
                    shift = rng.integers(-2, 3, 2)
                    m[j] = np.roll(np.roll(base, shift[0], 0), shift[1], 1)
                else:
                    y, x = rng.integers(0, h - 4), rng.integers(0, w - 4)
                    m[j, y:y + rng.integers(3, h - y), x:x + rng.integers(3, w - x)] = 1
            return m

        gm = masks(g)
        dm_ = masks(d, gm)
        preds.append(dict(masks=torch.tensor(dm_, dtype=torch.bool),
                          scores=torch.tensor(np.round(rng.random(d), 1), dtype=torch.float32),
                          labels=torch.tensor(rng.integers(0, 2, d))))
        target.append(dict(masks=torch.tensor(gm, dtype=torch.bool),
                           labels=torch.tensor(rng.integers(0, 2, g))))
    return preds, target


@pytest.mark.parametrize("seed", range(3))
def test_segm_equals_torchmetrics(seed):
    TM = torchmetrics_map()
    preds, target = _mask_batch(seed)
    ours, ref = MeanAveragePrecision(iou_type="segm"), TM(iou_type="segm")
    ours.update(preds, target)
    ref.update(preds, target)
    assert_same(ours.compute(), ref.compute())


def test_bbox_and_segm_together_equal_torchmetrics():
    import torch
    TM = torchmetrics_map()
    preds, target = _mask_batch(7)
    for item in preds + target:  # boxes around the masks (some loose), as a detector gives
        m = item["masks"].numpy()
        boxes = []
        for mask in m:
            ys, xs = np.nonzero(mask)
            boxes.append([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1] if ys.size
                         else [0, 0, 1, 1])
        item["boxes"] = torch.tensor(np.array(boxes, dtype=np.float32).reshape(-1, 4))
    ours = MeanAveragePrecision(iou_type=("bbox", "segm"), class_metrics=True)
    ref = TM(iou_type=("bbox", "segm"), class_metrics=True)
    ours.update(preds, target)
    ref.update(preds, target)
    assert_same(ours.compute(), ref.compute())
