"""CPU and GPU give identical bits for every kernel (skipped without a GPU)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_fhe
from jax_fhe import ops, rns

from conftest import random_residues

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def devices():
    if not jax_fhe.gpu_available():
        pytest.skip("no CUDA device visible to JAX (or CUDA kernels not built)")
    return jax.devices("cpu")[0], jax.devices("gpu")[0]


@pytest.mark.parametrize("log_n", [10, 15, 16])
def test_all_kernels_cpu_equals_gpu(log_n, devices, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(31, 4, n)
    extra = rns.ntt_primes(30, 6, n)
    ctx = rns.make_context(ps, n)
    table = rns.make_bconv_table(ps, extra)
    x = random_residues(rng, ps, n, batch=(3,))
    g = ops.galois_element(7, n)

    def run(dev):
        put = lambda t: jax.device_put(t, dev)  # noqa: E731
        c, tb, xd = put(ctx), put(table), put(jnp.asarray(x))
        X = ops.ntt(xd, c)
        return [X, ops.intt(X, c), ops.intt(xd, c), ops.bconv(xd, tb), ops.automorphism_ntt(X, g),
                ops.automorphism_coeff(xd, g, c), ops.mul_mod(X, xd, c)]

    for a, b in zip(run(devices[0]), run(devices[1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("width", [30, 31])  # lazy and canonical butterflies
@pytest.mark.parametrize("batch", [8, 6, 5])  # the GPU NTT runs 4, 2 or 1 polynomials per thread
def test_batched_ntt_and_bconv_cpu_equals_gpu(width, batch, devices, rng):
    """N = 2^16, batches whose size makes the GPU NTT run 4, 2 or 1 polynomials of one prime per
    thread; BConv with a folding (31-bit, 9 inputs) and an overflow-free table and input counts
    that are not multiples of 4 (the kernel zero-pads its 16-byte table rows)."""
    n = 1 << 16
    ps = rns.ntt_primes(width, 9, n)
    ctx = rns.make_context(ps, n)
    x = random_residues(rng, ps, n, batch=(batch,))
    out_primes = rns.ntt_primes(width, 13, n, exclude=ps)
    tables = [rns.make_bconv_table(ps[:lin], out_primes) for lin in (9, 3)]

    def run(dev):
        put = lambda t: jax.device_put(t, dev)  # noqa: E731
        c, xd = put(ctx), put(jnp.asarray(x))
        X = ops.ntt(xd, c)
        outs = [X, ops.intt(X, c), ops.intt(xd, c)]
        for t in tables:
            outs.append(ops.bconv(xd[:, :len(t.src)], put(t)))
        return outs

    for a, b in zip(run(devices[0]), run(devices[1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


_NTT_VARIANT_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
from jax_fhe import ops, rns
rng = np.random.default_rng(3)
for log_n, batch, bits in ((12, 2, 30), (12, 4, 30), (14, 8, 30), (15, 8, 30), (16, 8, 30),
                           (16, 4, 31), (16, 24, 30)):
    n = 1 << log_n
    ps = rns.ntt_primes(bits, 7, n)
    x = np.stack([rng.integers(0, q, size=(batch, n), dtype=np.uint64) for q in ps], axis=1).astype(np.uint32)
    outs = []
    for dev in (jax.devices("cpu")[0], jax.devices("gpu")[0]):
        c, xd = jax.device_put(rns.make_context(ps, n), dev), jax.device_put(jnp.asarray(x), dev)
        X = ops.ntt(xd, c)
        outs.append([np.asarray(X), np.asarray(ops.intt(X, c))])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(outs[0][1], x)
print("variant ok")
"""


@pytest.mark.parametrize("variant", ["default", "two-phase", "chunked", "cluster-2", "cluster-3", "cluster-8", "cluster-16",
                                     "cluster-no-tail", "cluster-tail-40", "cluster-gathered-rows",
                                     "cluster-8-gathered-rows", "min-blocks-2", "min-blocks-3", "no-whole",
                                     "streamed"])
def test_ntt_variants_cpu_equals_gpu(variant, devices):
    """The GPU NTT's optional paths, each selected through an environment variable read once per
    process, give the CPU's bits at N = 2^12 (the one-block kernel, 2 polynomials per thread at
    both batch sizes) and 2^14..2^16:
    - the default kernels (on sm_90 the single-pass cluster kernel in its split form: 16 slices
      on clusters of 8 CTAs, each CTA's halves running one phase of two slices each, for the
      last shape's 168 polynomials, the last 8 of them run by its
      tail, the streamed kernel on the SMs the clusters leave idle; the two-phase kernels for the
      56 of the shape before);
    - the two-phase kernels only (JAX_FHE_NTT_CLUSTER=0), also at every size
      (JAX_FHE_NTT_WHOLE=0), and their L2-sized chunking (JAX_FHE_NTT_CHUNK_BYTES: a budget of 6
      polynomials, i.e. chunks of one limb x 4 batch entries at P = 4);
    - the sm_90 single-pass cluster kernel in its four forms for both directions: 16 slices on
      clusters of 8 CTAs of two halves, the same split by phase, clusters of 8 CTAs, of 16 CTAs
      (JAX_FHE_NTT_CLUSTER=2 / 3 / 8 / 16; N = 2^16 with primes below 2^30, 56 and 168 polynomials over
      the clusters; other sizes and the 31-bit primes fall back; tools/ntt_cluster_check.py
      covers more shapes); that kernel without its tail (JAX_FHE_NTT_TAIL=0) and with a tail
      of 40 polynomials, which starts inside a limb (for both N = 2^16 shapes; the split form);
      its forward, in the halves form and on clusters of 8 CTAs, gathering its row tables from psi with
      cp.async (JAX_FHE_NTT_ROW_BULK=0, as for tables without psi_rows) instead of one bulk copy
      of psi_rows per limb change;
    - the N = 2^16 kernels compiled for 2 or 3 resident blocks per SM (JAX_FHE_NTT_MIN_BLOCKS;
      the default mixes them by kernel);
    - the streamed two-phase kernel (JAX_FHE_NTT_STREAM=1; N = 2^16 at 4 polynomials per thread)
      with chunks of one polynomial group, so that the second phase's tiles wait on 14 chunks."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("JAX_FHE_NTT_CLUSTER", None)  # "default": the library's own choice
    env.pop("JAX_FHE_NTT_TAIL", None)
    env.pop("JAX_FHE_NTT_ROW_BULK", None)
    if variant.endswith("gathered-rows"):
        env["JAX_FHE_NTT_CLUSTER"] = "8" if variant.startswith("cluster-8") else "2"
        env["JAX_FHE_NTT_ROW_BULK"] = "0"
    elif variant.startswith("cluster-") and "tail" in variant:  # the default form, its tail set
        env["JAX_FHE_NTT_CLUSTER"] = "3"
        env["JAX_FHE_NTT_TAIL"] = "0" if variant == "cluster-no-tail" else variant.rsplit("-", 1)[1]
    elif variant != "default":  # the cluster kernel forced on (2, 3, 8, 16) or off
        env["JAX_FHE_NTT_CLUSTER"] = variant.split("-")[1] if variant.startswith("cluster") else "0"
    if variant == "chunked":
        env["JAX_FHE_NTT_CHUNK_BYTES"] = str(6 * (1 << 16) * 4)
    if variant.startswith("min-blocks-"):
        env["JAX_FHE_NTT_MIN_BLOCKS"] = variant.rsplit("-", 1)[1]
    if variant == "no-whole":
        env["JAX_FHE_NTT_WHOLE"] = "0"
    if variant == "streamed":
        env["JAX_FHE_NTT_STREAM"] = "1"
        env["JAX_FHE_NTT_STREAM_CHUNK_BYTES"] = str(4 * (1 << 16) * 4)
    r = subprocess.run([sys.executable, "-c", _NTT_VARIANT_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "variant ok" in r.stdout, r.stdout + r.stderr


_NTT_GRAPH_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
from jax_fhe import ops, rns
n, batch, limbs = 1 << 16, 8, 20
ps = rns.ntt_primes(30, limbs, n)
rng = np.random.default_rng(5)
xs = [np.stack([rng.integers(0, q, size=(batch, n), dtype=np.uint64) for q in ps], axis=1).astype(np.uint32)
      for _ in range(3)]
ctx = jax.device_put(rns.make_context(ps, n), jax.devices("gpu")[0])
xd = [jnp.asarray(x) for x in xs]
# one executable with a chain of transforms (XLA_FLAGS below capture it as a CUDA graph), against
# the CPU
f = jax.jit(lambda c, *v: [ops.intt(ops.ntt(ops.ntt(u, c), c), c) for u in v] + [ops.ntt(u, c) for u in v])
got = f(ctx, *xd)
cpu = jax.devices("cpu")[0]
cc = jax.device_put(rns.make_context(ps, n), cpu)
for i, x in enumerate(xs):
    xc = jax.device_put(jnp.asarray(x), cpu)
    X = ops.ntt(xc, cc)
    np.testing.assert_array_equal(np.asarray(got[i]), np.asarray(ops.intt(ops.ntt(X, cc), cc)))
    np.testing.assert_array_equal(np.asarray(got[len(xs) + i]), np.asarray(X))
print("graph ok")
"""


def test_ntt_chain_in_cuda_graph_equals_cpu(devices):
    """A jitted chain of N = 2^16 transforms (160 polynomials each: on sm_90 the cluster kernel
    with its tail, whose launch is programmatic-dependent and whose state the previous launch
    reset), captured by XLA as a CUDA graph (command buffers forced on for custom calls at any
    size; on an H100 the trace showed each call captured as a child graph and one
    cuGraphLaunch), gives the CPU's bits."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    for k in ("JAX_FHE_NTT_CLUSTER", "JAX_FHE_NTT_TAIL", "JAX_FHE_NTT_ROW_BULK"):
        env.pop(k, None)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL"
                        " --xla_gpu_graph_min_graph_size=1").strip()
    r = subprocess.run([sys.executable, "-c", _NTT_GRAPH_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "graph ok" in r.stdout, r.stdout + r.stderr
