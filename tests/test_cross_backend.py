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


@pytest.mark.parametrize("log_n, batch, bits", [(12, 2, 30), (12, 4, 30), (14, 8, 30), (15, 8, 30),
                                                 (16, 8, 30), (16, 4, 31), (16, 24, 30), (16, 20, 30),
                                                 (15, 1, 30), (15, 2, 31), (16, 1, 30), (16, 2, 30),
                                                 (16, 1, 31), (16, 2, 31), (15, 3, "30+31"), (16, 1, "30+31"),
                                                 (16, 2, "30+31"), (16, 4, "30+31"), (14, 2, "30+31")])
def test_ntt_paths_cpu_equals_gpu(log_n, batch, bits, devices, rng):
    """Every GPU NTT path the library selects, on 7 limbs, gives the CPU's bits (forward, and the
    inverse of its result, which must be the input):
    - N = 2^12: the one-block kernel (the forward at 1, the inverse at 2 polynomials per thread);
    - N = 2^14, 2^15, and 2^16 below 128 polynomials (56) or with a prime of 2^30 or more: the two
      phases, at 4 polynomials per thread (batch 8, 4), and at 1 and 2 (batch 1, 2: the rows
      phase computes its twiddles at P = 2 and in the inverse at P = 1, lazy and canonical);
    - N = 2^16 from 128 polynomials with primes below 2^30 (168 and 140), on sm_90: the cluster
      kernel, its last polynomials run beside it by the streamed kernel (the tail, here starting
      inside a limb: batch 24 and 20 are multiples of 4); elsewhere the two phases.
    - "30+31": 30- and 31-bit primes interleaved in one call, as the n16-boot chain has them: one
      prime at or above LAZY_PRIME_BOUND puts the whole call on the canonical butterflies.
    (tests/ntt_cluster_check.py covers more cluster shapes: uneven ranges, limb changes, a new
    prime at every item, batches without a tail.)"""
    n = 1 << log_n
    if bits == "30+31":  # interleaved, as the n16-boot chain has them
        lo, hi = rns.ntt_primes(30, 4, n), rns.ntt_primes(31, 3, n)
        ps = [lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], lo[3]]
    else:
        ps = rns.ntt_primes(bits, 7, n)
    x = np.stack([rng.integers(0, q, size=(batch, n), dtype=np.uint64) for q in ps], axis=1).astype(np.uint32)
    outs = []
    for dev in devices:
        c, xd = jax.device_put(rns.make_context(ps, n), dev), jax.device_put(jnp.asarray(x), dev)
        X = ops.ntt(xd, c)
        outs.append([np.asarray(X), np.asarray(ops.intt(X, c))])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(outs[0][1], x)


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
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL"
                        " --xla_gpu_graph_min_graph_size=1").strip()
    r = subprocess.run([sys.executable, "-c", _NTT_GRAPH_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "graph ok" in r.stdout, r.stdout + r.stderr
