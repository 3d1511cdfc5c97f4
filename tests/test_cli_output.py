"""What the CLI prints and writes on success."""
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOC = REPO / "fixtures" / "voc"


def run(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def test_unused_result_file_is_named(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(VOC / "results", results)
    shutil.copy(results / "comp4_det_test_car.txt", results / "comp4_det_test_sofa.txt")
    out = tmp_path / "r.json"
    proc = run("voc", VOC / "VOC2007", results, "--imageset", "test", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "comp4_det_test_sofa.txt" in proc.stdout
    report = json.loads(out.read_text())
    assert report["inputs"]["unused_detection_files"] == ["comp4_det_test_sofa.txt"]
    assert "sofa" not in [c["name"] for c in report["classes"]]


def test_json_report_has_the_usual_permissions(tmp_path):
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        proc = run("voc", VOC / "VOC2007", VOC / "results", "--imageset", "test", "--json", out)
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".deteval-")]


def test_table_and_json_agree(tmp_path):
    out = tmp_path / "r.json"
    proc = run("voc", VOC / "VOC2007", VOC / "results", "--imageset", "test", "--metric",
               "voc07", "--json", out)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert f"mAP       {report['mAP']:.4f}" in proc.stdout
    for c in report["classes"]:
        assert f"{c['ap']:.4f}" in proc.stdout
    assert report["metric"] == "voc07" and report["inputs"]["num_images"] == 40


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("deteval ")


def test_closed_pipe_is_not_a_traceback(monkeypatch, capsys):
    """`deteval ... | head -1`: the reader has closed the pipe; deteval stops quietly with
    the shell's SIGPIPE status instead of a BrokenPipeError traceback."""
    from deteval.cli import main
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away
    pipe = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", pipe)
    try:
        code = main(["voc", str(VOC / "VOC2007"), str(VOC / "results"), "--imageset", "test"])
    finally:
        monkeypatch.undo()
        try:
            pipe.close()
        except OSError:
            pass
    assert code == 141
    assert "Traceback" not in capsys.readouterr().err
