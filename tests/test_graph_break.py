"""ops.graph_break: the identity, eager, under jit (aliased or copied) and vmap, on every backend."""
import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops


def test_identity(device, put):
    x = put(jnp.arange(12, dtype=jnp.uint32).reshape(3, 4))
    np.testing.assert_array_equal(np.asarray(ops.graph_break(x)), np.asarray(x))
    f = jax.jit(lambda a: ops.graph_break(a) + a)            # a stays live: XLA copies for the alias
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * np.asarray(x))
    np.testing.assert_array_equal(np.asarray(jax.vmap(ops.graph_break)(x)), np.asarray(x))
    y = put(jnp.linspace(0, 1, 5, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(jax.jit(ops.graph_break)(y)), np.asarray(y))
