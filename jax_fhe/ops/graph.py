"""``graph_break``: where a long program's CUDA graph should end and the next begin.

XLA captures a jitted program's kernels in command buffers (CUDA graphs); one graph of about
1,300 kernels (a bootstrap) took 2.5-3 ms of host time in ``cuGraphLaunch`` before its first
kernel ran. ``graph_break(x)`` returns x unchanged through a custom call that is not
command-buffer compatible, so XLA splits its graphs there: the GPU runs the first while the host
launches the next. Identity on every backend. In the full-slot n16-boot bootstrap (breaks after
CtS and EvalMod) it saved 0.8-1.4 ms of 23 on an H200 (three interleaved A/B rounds)."""
from __future__ import annotations

import jax


def graph_break(x: jax.Array) -> jax.Array:
    """x, unchanged (the output aliases the input); a command-buffer boundary on the GPU."""
    call = jax.ffi.ffi_call("jax_fhe_graph_break", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            input_output_aliases={0: 0}, vmap_method="expand_dims")
    return call(x)
