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


def make_mesh(devices=None, axis: str = "d") -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices of the default backend)."""
    devices = jax.devices() if devices is None else list(devices)
    arr = np.empty(len(devices), dtype=object)
    arr[:] = devices
    return Mesh(arr, (axis,))


def shard_server(server: pr.Server, mesh: Mesh) -> pr.Server:
    """Place the DB row-sharded over the mesh axis (each row chunk split over the devices) and
    the hint planes/tables replicated. This copies a server built on one device; at scale build
    it shard by shard with :func:`server_setup` instead."""
    axis = mesh.axis_names[0]
    d = mesh.shape[axis]
    chunks = server.db if isinstance(server.db, (tuple, list)) else (server.db,)
    if server.params.rows % (d * len(chunks)):
        raise ValueError(f"shard_server: {server.params.rows} DB rows do not split over {d} devices"
                         + (f" x {len(chunks)} chunks" if len(chunks) > 1 else ""))
    rep = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P(axis, None))
    db = jax.device_put(server.db, rows) if len(chunks) == 1 else tuple(jax.device_put(c, rows) for c in chunks)
    return pr.Server(db=db, planes=jax.device_put(server.planes, rep),
                     tables=jax.device_put(server.tables, rep), params=server.params)


def server_setup(params: pr.VIPIRParams, records, tables, mesh: Mesh, *,
                 chunking: pr.Chunking | None = None, progress: bool | None = None,
                 blocks_per_step: int = 8) -> pr.Server:
    """Build the sharded server shard by shard: device d encodes (or draws, when ``records`` is
    a callable ``rows(r0, r1)``) only its rows of each DB chunk, computes their hint planes, and
    the planes are copied into every device's replica in place. No device ever holds the whole
    DB, and the host only one part at a time (besides ``records``). Same layout and answers as
    :func:`shard_server` of ``protocols.server_setup(params, records, tables, chunking=...)``."""
    pr._check_params(params, "sharded.server_setup")
    pr._check_tables(params, tables, "sharded.server_setup")
    axis = mesh.axis_names[0]
    devices = list(mesh.devices.flat)
    db, planes = pr.build_parts(params, records, tables, chunking, devices, progress=progress,
                                blocks_per_step=blocks_per_step)
    rows = NamedSharding(mesh, P(axis, None))
    rep = NamedSharding(mesh, P())
    per = params.rows // len(db)
    db = tuple(jax.make_array_from_single_device_arrays((per, params.cols), rows, parts) for parts in db)
    planes = tuple(jax.make_array_from_single_device_arrays(tuple(parts[0].shape), rep, parts) for parts in planes)
    one = lambda t: t[0] if len(t) == 1 else t  # noqa: E731
    return pr.Server(db=one(db), planes=one(planes), tables=jax.device_put(tables, rep), params=params)


def answer(server: pr.Server, keys: pr.PublicKeys, query: pr.Query, mesh: Mesh, *,
           chunking: pr.Chunking | None = None) -> pr.Answer:
    """The batch answer on all devices of ``mesh``; B is padded to a multiple of the device
    count (the padding answers are dropped). The returned answers sit on the first device.
    ``chunking``: the streams and packing bound (per device), as in ``protocols.answer``."""
    pr._check_answer_args(server, keys, query)
    stages = pr._stages(chunking)
    axis = mesh.axis_names[0]
    d = mesh.shape[axis]
    bsz = query.b.shape[0]
    pad = -bsz % d
    if pad:
        query = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]), query)
    with _gspmd_lowering():
        out = _sharded(server, keys, query, mesh, stages)
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


@functools.partial(jax.jit, static_argnums=(3, 4))
def _sharded(server, keys, query, mesh, stages):
    axis = mesh.axis_names[0]
    d = mesh.shape[axis]
    chunked = isinstance(server.db, (tuple, list))
    k = len(server.db) if chunked else 1
    db_spec = tuple(P(axis, None) for _ in range(k)) if chunked else P(axis, None)
    planes_spec = tuple(P() for _ in server.planes) if isinstance(server.planes, (tuple, list)) else P()
    specs_server = pr.Server(db=db_spec, planes=planes_spec, tables=P(), params=server.params)
    specs_query = pr.Query(b=P(), ct=P(axis), b2=None if query.b2 is None else P(axis),
                           params=query.params)

    def body(srv, keys, q):
        y_local = pr.fold_chunks(srv.db, q.b)                         # [B, K rows / (K D)]
        y = jax.lax.all_to_all(y_local, axis, 0, 1, tiled=True)       # [B / D, D K r]: (device, chunk, r)
        if k > 1:  # global row order is (chunk, device, r)
            b_loc = y.shape[0]
            y = y.reshape(b_loc, d, k, -1).transpose(0, 2, 1, 3).reshape(b_loc, -1)
        return pr.after_first_fold(srv, keys, q, y, stages)

    spec_out = pr.Answer(ct=P(axis), params=server.params)
    return jax.shard_map(body, mesh=mesh, in_specs=(specs_server, P(), specs_query),
                         out_specs=spec_out, check_vma=False)(server, keys, query)
