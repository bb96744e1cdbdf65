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
