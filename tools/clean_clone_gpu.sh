#!/usr/bin/env bash
# On the device machine: install a clean clone of main with the README's command and run an
# example from it (issue #39: "the GPU example runs from a clean clone with the README's
# commands"). The device's own git metadata may be stale, so the clone comes from a bundle made
# here:
#   echo /.cc/ >> .git/info/exclude; mkdir -p .cc && git bundle create .cc/main.bundle main
# then two calls on one warm machine (the build outlives the first call in .ccbuild/, which git
# ignores and no carry replaces), the second issued at once:
#   run(command="bash tools/clean_clone_gpu.sh build", carry=[".cc"])
#   run(command="bash tools/clean_clone_gpu.sh run examples/encrypted_resnet20.py --images 4", carry=[".cc"])
# The machine has no network, so pip installs with --no-build-isolation --no-deps (the build
# and runtime dependencies are already there); otherwise the README's `pip install .`.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
WORK=$PWD/.ccbuild
case "${1:-}" in
  build)  # again after a cut build: the clone and its build folder stay (FRESH=1 starts over)
    unset PYTHONPATH
    [ -n "${FRESH:-}" ] && rm -rf "$WORK"
    if [ ! -d "$WORK/jax_fhe" ]; then
      mkdir -p "$WORK" && git clone -q -b main .cc/main.bundle "$WORK/jax_fhe" || exit 2
      python3 -m venv --system-site-packages "$WORK/env" || exit 2
      # the machine's python3 is itself a venv, whose packages a nested venv does not see
      python3 -c "import site; print('\n'.join(site.getsitepackages()))" \
        > "$("$WORK/env/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/_outer_env.pth"
    fi
    git -C "$WORK/jax_fhe" log --oneline -1 | tee "$OUT/clone.log"
    . "$WORK/env/bin/activate"
    cd "$WORK/jax_fhe"
    t=$(date +%s)
    timeout ${BUILD_TIMEOUT:-560} pip install --no-build-isolation --no-deps . > "$OUT/install.log" 2>&1
    rc=$?
    echo "pip install rc=$rc in $(( $(date +%s) - t )) s" | tee -a "$OUT/clone.log"
    tail -5 "$OUT/install.log"
    (cd /tmp && python3 -c "import jax_fhe; print('installed', jax_fhe.__file__, 'cuda kernels:', jax_fhe.built_with_cuda(), 'gpu:', jax_fhe.gpu_available())") 2>&1 | tee -a "$OUT/clone.log"
    exit $rc
    ;;
  run)
    shift
    unset PYTHONPATH
    . "$WORK/env/bin/activate" || exit 2
    cd "$WORK/jax_fhe"
    export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
    (cd /tmp && python3 -c "import jax_fhe; print('running against', jax_fhe.__file__)") | tee "$OUT/example.log"
    timeout ${RUN_TIMEOUT:-570} python3 "$@" 2>&1 | tr '\r' '\n' | grep -v -E "(key|layer)/s\]|s/(key|layer)\]" >> "$OUT/example.log"
    rc=${PIPESTATUS[0]}
    echo "rc=$rc" >> "$OUT/example.log"
    tail -40 "$OUT/example.log"
    exit $rc
    ;;
  *)
    echo "usage: $0 build | run SCRIPT [ARGS...]"; exit 2 ;;
esac
