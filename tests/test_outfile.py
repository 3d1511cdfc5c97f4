"""Writing outputs never clobbers what the user points at (deteval.outfile, CLI --json)."""
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from deteval.errors import InputError
from deteval.outfile import write_output

ROOT = Path(__file__).resolve().parents[1]
VOC = ["voc", str(ROOT / "fixtures" / "voc" / "VOC2007"), str(ROOT / "fixtures" / "voc" / "results"),
       "--imageset", "test"]


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kw)


def _no_temp_files(folder):
    return not [p for p in os.listdir(folder) if p.startswith(".deteval-")]


def test_new_file_and_atomic_replace_keeps_permission_bits(tmp_path):
    target = tmp_path / "r.json"
    write_output(target, "one")
    assert target.read_text() == "one"
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    write_output(target, b"two")
    assert target.read_text() == "two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # replaced by a rename, never written in place
    assert _no_temp_files(tmp_path)


def test_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "later.json")
    write_output(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "later.json").read_text() == "made"
    assert _no_temp_files(tmp_path)


def test_fifo_is_written_directly(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as fh:
            got["data"] = fh.read()

    t = threading.Thread(target=reader)
    t.start()
    write_output(fifo, "through the pipe")
    t.join(10)
    assert got["data"] == b"through the pipe"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO
    assert _no_temp_files(tmp_path)


def test_character_device_is_written_directly():
    write_output("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("bad, reason", [
    ("folder", "is a folder"),
    ("missing/r.json", "does not exist"),
])
def test_unwritable_targets_raise_and_touch_nothing(tmp_path, bad, reason):
    (tmp_path / "folder").mkdir()
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(InputError, match=reason):
        write_output(tmp_path / bad, "x")
    assert sorted(os.listdir(tmp_path)) == before


def test_read_only_location_is_an_input_error():
    # /proc refuses new files even to root (chmod-based cases cannot work as root)
    with pytest.raises(InputError, match="writing it failed"):
        write_output("/proc/deteval-report.json", "x")


def test_cli_dash_writes_the_json_report_alone_to_stdout(tmp_path):
    p = run(*VOC, "--json", "-")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)  # nothing else on stdout
    assert report["protocol"] == "voc"
    assert "mAP" in p.stderr  # the table went to stderr
    assert not (ROOT / "-").exists()


def test_cli_dev_stdout_is_not_replaced(tmp_path):
    p = run(*VOC, "--json", "/dev/stdout")
    assert p.returncode == 0, p.stderr
    first = p.stdout[:p.stdout.index("\n}\n") + 2]  # the report, then the table
    assert json.loads(first)["protocol"] == "voc"
    assert os.path.islink("/dev/stdout")  # not replaced by a regular file
    # redirected to a regular file, /dev/stdout writes into that open file (no rename)
    out = tmp_path / "shell-redirect.txt"
    with open(out, "w") as fh:
        p = subprocess.run([sys.executable, "-m", "deteval", *VOC, "--json", "/dev/stdout"],
                           cwd=ROOT, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert text.startswith("{") and "mAP" in text


@pytest.mark.parametrize("target, message", [
    ("folder", "is a folder"),
    ("missing/r.json", "does not exist"),
    ("/proc/deteval-report.json", "failed"),
])
def test_cli_bad_json_target_exits_2_without_traceback(tmp_path, target, message):
    (tmp_path / "folder").mkdir()
    path = target if target.startswith("/") else tmp_path / target
    p = run(*VOC, "--json", path)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1


def test_cli_failed_evaluation_leaves_existing_report_alone(tmp_path):
    report = tmp_path / "r.json"
    report.write_text("precious")
    p = run("coco", tmp_path / "absent.json", ROOT / "fixtures" / "coco" / "results.json",
            "--json", report)
    assert p.returncode == 2
    assert report.read_text() == "precious"
    assert _no_temp_files(tmp_path)


def test_version_reports_the_native_path(tmp_path):
    import shutil
    p = run("--version")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert lines[0].startswith("deteval ") and lines[-1].startswith("numpy ")
    from deteval._native import status
    assert ("in use" in p.stdout) == (not any(status().values()))
    # a source tree without the built extensions says so, and why
    import deteval
    shutil.copytree(Path(deteval.__file__).parent, tmp_path / "deteval",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "DETEVAL_REQUIRE_NATIVE"}
    # the copy, not an editable install's finder, must be what imports
    child = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
             "(type(f).__module__ + repr(f)).lower()]; sys.path.insert(0, {0!r}); "
             "{1}").format(str(tmp_path), "{}")
    p = subprocess.run([sys.executable, "-c", child.format(
        "from deteval.cli import main; sys.exit(main(['--version']))")], cwd=tmp_path,
        capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "NOT in use" in p.stdout and "_kernels" in p.stdout, p.stdout
    env["DETEVAL_REQUIRE_NATIVE"] = "1"
    p = subprocess.run([sys.executable, "-c", child.format("import deteval.match")],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode != 0 and "DETEVAL_REQUIRE_NATIVE" in p.stderr
