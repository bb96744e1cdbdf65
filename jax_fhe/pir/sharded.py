"""Multi-device VIPIR server (§4.5): the DB row-sharded over devices, queries broadcast,
an all-to-all after the first fold, the hint replicated.

Every device multiplies its rows of the DB by all B queries (its share of the only large
operand), then one ``all_to_all`` turns the [rows / D, B] partial answers into [rows, B / D]:
from there each device owns B / D whole queries and runs expansion, packing and the later folds
with its replicated copy of the hint planes, with no further communication. The answers are
bit-identical to :func:`jax_fhe.pir.protocols.answer` on one device.
"""
from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from . import protocols as pr
from .db_gemm import db_gemm


def make_mesh(devices=None, axis: str = "d") -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices of the default backend)."""
    devices = jax.devices() if devices is None else list(devices)
    arr = np.empty(len(devices), dtype=object)
    arr[:] = devices
    return Mesh(arr, (axis,))


def shard_server(server: pr.Server, mesh: Mesh) -> pr.Server:
    """Place the DB row-sharded over the mesh axis and the hint planes/tables replicated."""
    axis = mesh.axis_names[0]
    d = mesh.shape[axis]
    if server.params.rows % d:
        raise ValueError(f"shard_server: {server.params.rows} DB rows do not split over {d} devices")
    rep = NamedSharding(mesh, P())
    return pr.Server(db=jax.device_put(server.db, NamedSharding(mesh, P(axis, None))),
                     planes=jax.device_put(server.planes, rep),
                     tables=jax.device_put(server.tables, rep), params=server.params)


def answer(server: pr.Server, keys: pr.PublicKeys, query: pr.Query, mesh: Mesh) -> pr.Answer:
    """The batch answer on all devices of ``mesh``; B is padded to a multiple of the device
    count (the padding answers are dropped). The returned answers sit on the first device."""
    pr._check_answer_args(server, keys, query)
    axis = mesh.axis_names[0]
    d = mesh.shape[axis]
    bsz = query.b.shape[0]
    pad = -bsz % d
    if pad:
        query = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]), query)
    with _gspmd_lowering():
        out = _sharded(server, keys, query, mesh)
    # gathered onto the mesh's first device: answers go back to clients, and element-wise
    # mulhi on a sharded array hits the same lowering bug outside this function
    ct = jax.device_put(out.ct, mesh.devices.flat[0])[:bsz]
    return pr.Answer(ct=ct, params=out.params)


def _gspmd_lowering():
    """Lower with the GSPMD partitioner instead of Shardy. Workaround (jax 0.10, CPU): under
    ``shard_map`` with Shardy, ``lax.mulhi`` (used by every Montgomery/Shoup product) fails to
    lower ("failed to legalize operation 'mhlo.unknown'"). Uses the public config flag, restored
    on exit; a no-op where the flag does not exist."""
    return _shardy_off()


@contextlib.contextmanager
def _shardy_off():
    name = "jax_use_shardy_partitioner"
    try:
        before = getattr(jax.config, name)
    except AttributeError:  # pragma: no cover - a jax without the flag
        yield
        return
    jax.config.update(name, False)
    try:
        yield
    finally:
        jax.config.update(name, before)


@functools.partial(jax.jit, static_argnums=3)
def _sharded(server, keys, query, mesh):
    axis = mesh.axis_names[0]
    specs_server = pr.Server(db=P(axis, None), planes=P(), tables=P(), params=server.params)
    specs_query = pr.Query(b=P(), ct=P(axis), b2=None if query.b2 is None else P(axis),
                           params=query.params)

    def body(srv, keys, q):
        y_local = db_gemm(srv.db, q.b.T).T                            # [B, rows / D]
        y = jax.lax.all_to_all(y_local, axis, 0, 1, tiled=True)       # [B / D, rows]
        return pr.after_first_fold(srv, keys, q, y)

    spec_out = pr.Answer(ct=P(axis), params=server.params)
    return jax.shard_map(body, mesh=mesh, in_specs=(specs_server, P(), specs_query),
                         out_specs=spec_out, check_vma=False)(server, keys, query)
