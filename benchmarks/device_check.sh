#!/usr/bin/env bash
# Every GPU check of the performance issue in one go, on a GPU host without warp-lang (see
# ../shared/device/README.md; a device session's first call stages .devwarp1/part00, this one
# carries .devwarp2). Runs from the project root:
#
#     bash benchmarks/device_check.sh            # results and logs under $OUT (default out/device)
#
# 1. warp unpacked into /tmp/site (unless warp imports already), the GPU and Warp's view of it;
# 2. python benchmarks/run.py --device cuda:0: every section a GPU run makes, at the issue's
#    131072 envs (results.json, results.md and throughput.png in $OUT/run, written after each
#    section, so that a run cut short by its limit keeps what it measured);
# 3. the tests marked cuda (a module that fails to import there, e.g. one that builds CPU envs at
#    collection where that Warp has no CPU compiler, does not stop the others).
# Each part has a time limit (BENCH_LIMIT_S, TESTS_LIMIT_S) that keeps the whole under the device
# tool's 10 minutes a command. At most 8 files come back: device.txt, run.log, run/results.{json,md},
# run/throughput.png, pytest-cuda.log. DEVICE (default cuda:0) and BENCH_ARGS (more arguments of
# run.py) are for trying the script elsewhere (tests/test_benchmarks.py runs it on the CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/device}"
mkdir -p "$OUT"
if [ ! -d /tmp/site/warp ] && ! python3 -c "import warp" 2>/dev/null; then  # not unpacked by an earlier call
    bash .devwarp2/unpack.sh || { echo "warp could not be unpacked (see ../shared/device/README.md)" >&2; exit 3; }
fi
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
    date -u
    nvidia-smi || true
    python3 -c "import warp as wp; wp.init(); print('warp', wp.__version__, [str(d) for d in wp.get_cuda_devices()])"
} > "$OUT/device.txt" 2>&1
timeout "${BENCH_LIMIT_S:-390}" python3 benchmarks/run.py --device "${DEVICE:-cuda:0}" --out "$OUT/run" \
    ${BENCH_ARGS:-} > "$OUT/run.log" 2>&1
echo "benchmarks/run.py exit $? (124: cut at ${BENCH_LIMIT_S:-390} s; results.json holds the sections done)" >> "$OUT/run.log"
timeout "${TESTS_LIMIT_S:-150}" python3 -m pytest -q -m cuda -p no:cacheprovider --continue-on-collection-errors tests > "$OUT/pytest-cuda.log" 2>&1
echo "pytest exit $? (124: cut at ${TESTS_LIMIT_S:-150} s)" >> "$OUT/pytest-cuda.log"
tail -n 3 "$OUT/run.log" "$OUT/pytest-cuda.log"
