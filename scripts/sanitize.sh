#!/usr/bin/env bash
# Build deteval's C extensions with AddressSanitizer + UndefinedBehaviorSanitizer into a
# scratch copy of the tree and run the C tests and the fuzz corpus under them.
#
#   scripts/sanitize.sh                      # the default fuzz budget
#   DETEVAL_FUZZ_EXAMPLES=3000 scripts/sanitize.sh
#
# Any ASan/UBSan report aborts the run (halt_on_error, -fno-sanitize-recover): exit 0 = clean.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/deteval" "$here/tests" "$here/fixtures" "$here/setup.py" "$here/pyproject.toml" "$work/"
find "$work/deteval" -name '*.so' -delete
cd "$work"
CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g" \
LDFLAGS="-fsanitize=address,undefined" \
    "$python" setup.py -q build_ext --inplace 2>&1 | grep -v '^copying' || true
for so in deteval/_kernels*.so deteval/_textscan*.so; do
    ldd "$so" | grep -q libasan || { echo "sanitize: $so is not built with ASan" >&2; exit 1; }
done
asan="$(gcc -print-file-name=libasan.so)"
ubsan="$(gcc -print-file-name=libubsan.so)"
export LD_PRELOAD="$asan $ubsan"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export DETEVAL_REQUIRE_NATIVE=1
"$python" -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_fuzz.py \
    tests/test_scan_files.py tests/test_coco_scan.py tests/test_segm_scan.py tests/test_textscan.py tests/test_xmlscan.py \
    tests/test_segm_keypoints.py tests/test_hostile.py tests/test_bootstrap_weighted.py \
    tests/test_bootstrap_cli.py
echo "sanitize: clean (ASan + UBSan)"
