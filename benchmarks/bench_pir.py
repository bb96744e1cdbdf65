"""Server online latency and throughput of VIPIR's protocols (hybrid, ExpPack(S), double-packing).

    python benchmarks/bench_pir.py --gib 1 4 16 --batches 1 32 --out pir.json      # GPU
    python benchmarks/bench_pir.py --gib 16 --protocols hybrid --results           # update the page
    python benchmarks/bench_pir.py --quick                                         # CPU smoke run

For each protocol, DB size (the paper's layouts: hybrid/double D / D_0 = 2^20, ExpPack(S)
D_0 = sqrt(D)) and batch, the full jitted ``answer`` is timed (median of --reps after warm-up):
latency (ms), QPS = B / latency, the DB GEMM alone (first fold) and its share, the DB GEMM's
int8 tensor-core utilisation (4 planes x 2 x rows x D_0 x B ops over --int8-ops), and the
ratio of the latency to the HBM floor (DB + hint planes read once, over --bandwidth).
Peak device memory comes from ``memory_stats()`` where the backend reports it.
Targets (issue #3, H100): hybrid 16 GiB batch 1 <= 25 ms; batch 32 at 16 GiB > 219.6 QPS.
The DB is random bytes generated on the device (never zeros); the hint is computed for it.
``--results`` merges the rows into benchmarks/results/pir.json, from which ``results_page.py``
renders benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring
from jax_fhe.rns import HostRandom

from db_gemm import bench  # benchmarks/ sibling: one timing loop for the PIR benchmarks
from results import add_argument as add_results_argument
from results import entry as result_entry
from results import merge as merge_results
from results import refuse_quick_default

#: the H100's measured copy rate, bytes/s (the floors' default bandwidth)
H100_COPY_BYTES_PER_S = 3.0e12


def peak_bytes():
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


#: Bytes of the random DB drawn per step: jax.random.bits holds ~3 temporaries the size of its
#: output (CPU compile of one 16 GiB draw: 48 GiB of temporaries), so the DB is drawn in steps.
DB_STEP_BYTES = 1 << 26


@functools.partial(jax.jit, static_argnums=(0, 1))
def random_db(rows, cols, seed):
    """Random bytes int8[rows, cols] (cols % 4 == 0; not an all-zero DB) in ONE jitted call that
    allocates only the DB plus one step's temporaries: uint32 words drawn DB_STEP_BYTES at a
    time (one key per step) and bitcast to bytes inside the jit (eagerly, as before, the
    bitcast and the reshape each returned a DB-sized copy)."""
    step = max(d for d in range(1, rows + 1) if rows % d == 0 and d * cols <= max(DB_STEP_BYTES, cols))
    keys = jax.random.split(jax.random.key(seed), rows // step)

    def draw(key):  # bitcast per step: on the stacked words it would copy the whole DB
        words = jax.random.bits(key, (step, cols // 4), jnp.uint32)
        return jax.lax.bitcast_convert_type(words, jnp.int8).reshape(step, cols)

    return jax.lax.map(draw, keys).reshape(rows, cols)


def build_server(params, tables, seed):
    """A Server for a random DB: the DB and its hint planes are the only large buffers."""
    db = random_db(params.rows, params.cols, seed)
    planes = pr.compute_hint(params, db, tables, progress=False)
    return pr.Server(db=db, planes=planes, tables=tables, params=params)


def planes_bytes(params) -> int:
    """Bytes of the server's hint planes (int8[N, limbs, 4 blocks, n])."""
    return params.ring.n * params.ring.limbs * 4 * params.blocks * params.lwe.n


def pir_entry(params, batch: int, seconds: float, device_kind: str, bandwidth: float) -> dict:
    """One answer timing in the results format (benchmarks/results.py); floor: the DB and the
    hint planes read once at ``bandwidth``."""
    size = (f"{params.db_bytes / 2**30:g} GiB" if params.db_bytes >= 1 << 28
            else f"{params.db_bytes >> 10} KiB (toy)")
    hbm = params.db_bytes + planes_bytes(params)
    floor_s = hbm / bandwidth
    return result_entry(
        f"pir/{params.protocol}/{size.replace(' ', '')}/B={batch}", "PIR answer (server, online)",
        f"{params.protocol}, DB {size} (D_0 = {params.cols}), batch {batch}", device_kind,
        unit="ms", time=round(seconds * 1e3, 2), clock="wall", qps=round(batch / seconds, 1),
        ratio=round(seconds / floor_s, 2),
        floor=dict(time=round(floor_s * 1e3, 2),
                   basis=f"DB + hint planes ({hbm / 2**30:.3g} GiB) read once at {bandwidth / 1e12:g} TB/s"))


def quick_params(protocol, rng):
    """Tiny insecure instance for CPU smoke runs (toy ring N = 1024, toy LWE)."""
    return pr.make_params(protocol, blocks=4, cols=64, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, nargs="+", default=[1, 4, 16])
    ap.add_argument("--protocols", nargs="+", default=["hybrid", "exppack", "double"], choices=pr.PROTOCOLS)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--bandwidth", type=float, default=H100_COPY_BYTES_PER_S, help="HBM bytes/s (H100 copy rate)")
    ap.add_argument("--int8-ops", type=float, default=890e12, help="int8 tensor-core ops/s")
    ap.add_argument("--quick", action="store_true", help="tiny insecure toy instances (CPU smoke run)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    add_results_argument(ap, "pir")
    a = ap.parse_args()
    refuse_quick_default(ap, a.results, a.quick, "pir")
    rng = HostRandom.insecure_deterministic(1)
    if a.quick:
        rp, a.batches, a.reps = ring.RING_TOY, [1, 2], 2
        configs = [(proto, None, quick_params(proto, rng)) for proto in a.protocols]
    else:
        rp = ring.RING_N4096
        configs = [(proto, g, pr.paper_params(proto, g, rng=rng)) for g in a.gib for proto in a.protocols]
    tables = ring.make_tables(rp)
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}); jax {jax.__version__}")
    head = (f"{'protocol':>8} {'DB':>8} {'B':>3} {'ms':>9} {'QPS':>8} {'gemm ms':>8} {'gemm%':>6} "
            f"{'TC util':>7} {'floor ms':>8} {'ratio':>6} {'peak GiB':>8}")
    print(head)
    rows, entries = [], []
    for proto, gib, params in configs:
        server = build_server(params, tables, 7)
        keys = pr.client_keygen(params, tables, rng)
        pub = jax.device_put(keys.public)
        for b in a.batches:
            idx = [int(i) for i in rng.uint64((b,)) % np.uint64(params.num_records)]
            query, _ = pr.client_query(keys, tables, idx, rng)
            query = jax.device_put(query)
            t = bench(lambda s, k, q: pr.answer(s, k, q).ct, (server, pub, query), a.reps)
            fold = jax.jit(pr.first_fold)
            tg = bench(fold, (server, query), a.reps)
            gemm_ops = 4 * 2 * params.rows * params.cols * b
            hbm = params.db_bytes + server.planes.size
            floor = max(hbm / a.bandwidth, gemm_ops / a.int8_ops)
            peak = peak_bytes()
            row = dict(protocol=proto, db_bytes=params.db_bytes, blocks=params.blocks, cols=params.cols,
                       batch=b, ms=t * 1e3, qps=b / t, gemm_ms=tg * 1e3, gemm_share=tg / t,
                       tensor_core_util=gemm_ops / tg / a.int8_ops, floor_ms=floor * 1e3,
                       floor_ratio=t / floor, peak_bytes=peak, comm=params.communication(),
                       device=dev.device_kind)
            rows.append(row)
            entries.append(pir_entry(params, b, t, dev.device_kind, a.bandwidth))
            size = f"{params.db_bytes / 2**30:.3g}G" if params.db_bytes >= 1 << 28 else f"{params.db_bytes >> 10}K"
            pk = f"{peak / 2**30:.1f}" if peak else "n/a"
            print(f"{proto:>8} {size:>8} {b:>3} {t * 1e3:>9.2f} {b / t:>8.1f} {tg * 1e3:>8.2f} "
                  f"{100 * tg / t:>5.1f}% {100 * row['tensor_core_util']:>6.1f}% {floor * 1e3:>8.2f} "
                  f"{t / floor:>6.2f} {pk:>8}")
        del server
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
        print(f"wrote {a.out}")
    if a.results:
        merge_results(a.results, "pir", entries)
        print(f"merged {len(entries)} rows into {a.results}; python benchmarks/results_page.py renders RESULTS.md")


if __name__ == "__main__":
    main()
