// The single-pass cluster NTT kernel (N = 2^16, sm_90; geometry and layouts in
// ntt_cluster_smem.cuh, design in docs/kernels.md): each CTA's halves run different phases of
// the same two slices, one item apart. Included by ntt_cluster_dispatch.cu only.
//
// Forward: the column half (rounds A, B) sends its blocks by TMA into the row halves' tiles; the
// row half (rounds C, D and the output) tells the column halves when an input buffer's blocks
// have landed (sent[]: it may be refilled) and when a mid buffer is free again (freed[]). The two
// halves must not wait on each other: the row half tells sent[] as soon as it sees the blocks
// (also during the item before), and the column half reloads after round A, by when the blocks
// it sent at the end of the previous item have landed. Inverse: the row half (rounds D, C) sends
// by st.async, the column half (rounds B, A with N^-1, and the output) frees the mid buffers.
// Both directions compute their row tables (compute_tw_row) from factors staged one item ahead.
#pragma once

#include "ntt_cluster_smem.cuh"

namespace jax_fhe {
namespace ntt_cuda {

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// compute_tw_row's factors of table row `row` for both row slices of CTA `cta`:
// pairs 0..127, then the bases of rows 32 cta .. 32 cta + 31 (8 each). Not inlined, like the
// other code that runs at limb changes only.
__device__ __noinline__ void split_stage_row_factors(uint32_t* fac, const Tables& t, int row, int cta, int tid) {
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  issue_table_pairs(fac, tw, tws, 128, tid);
  issue_row_bases(fac + 256, tw, 2 * cta, tid);
  issue_row_bases(fac + 384, tw, 2 * cta + 1, tid);
}

// The inverse's first phase (rounds D, C of row slices 2 cta, 2 cta + 1), sent by st.async to the
// column halves that own each element's column.
template <typename Take, typename Sync>
__device__ __forceinline__ void split_inverse_rows(SplitSmem& sm, const uint32_t* src, const Tables& t, int n,
                                                   int cta, int tid, WorkItem cur, WorkItem nxt, Take& take,
                                                   Sync half_sync) {
  using G = Cluster;
  constexpr int S = 16, kThreads = 256;
  constexpr uint32_t kMid = G::kMidBytes;
  const int rho = tid >> 4, s = tid & 15;  // owned row (in both slices), thread within the row
  int off_c[8], off_d[4];
#pragma unroll
  for (int h = 0; h < 8; ++h) off_c[h] = G::row_tile(rho, s + 16 * h);
#pragma unroll
  for (int v = 0; v < 4; ++v) off_d[v] = G::row_tile(rho, 16 * s + 4 * v);
  // element e (column s + 16 e) goes to column slice e: the column half of CTA e / 2, its
  // mid[.][e % 2], column-tile row 16 (2 cta + j) + rho, column s
  const uint32_t mid0 = map_rank(&sm.mid[0][0][0], 0);
  const uint32_t rank_stride = map_rank(&sm.mid[0][0][0], 1) - mid0;
  const uint32_t full_delta = smem_addr(&sm.full[0]) - smem_addr(&sm.mid[0][0][0]);
  uint32_t remote_off[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) remote_off[j] = 4u * static_cast<uint32_t>(G::col_tile(S * (2 * cta + j) + rho, s));
  constexpr int kRowStep = kThreads / 64;
  const int in_tile = G::row_tile(tid >> 6, 4 * (tid & 63));
  auto prefetch = [&](int64_t poly, int b) {
    const uint32_t* p = src + poly * kN;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int in_poly = (S * (2 * cta + j) + (tid >> 6)) * kSide + 4 * (tid & 63);
#pragma unroll
      for (int u = 0; u < 4; ++u)
        copy_async<16>(sm.in[b][j] + in_tile + 256 * kRowStep * u, p + in_poly + kSide * kRowStep * u);
    }
  };
  auto row_slot_c = [](int t_, int m) { return (1 << t_) + m; };
  auto row_slot_d = [&](int t_, int m) { return tw_row_slot(t_ + 4, (s << t_) + m); };
  int row_tab = -1, staged = cur.row;
  split_stage_row_factors(sm.row_fac, t, cur.row, cta, tid);
  prefetch(cur.poly, 0);
  copy_async_commit();
  cluster_sync_all();
  for (int i = 0; i < n; ++i) {
    const int b = i & 1;
    copy_async_wait<0>();  // item i's slices (and its row's factors where new)
    half_sync();           // ... visible to all; every thread is done with item i - 1
    if (row_tab != cur.row) {
      compute_tw_row(sm.tw_row, sm.row_fac, sm.row_fac + 256, cur.q, tid);
      compute_tw_row(sm.tw_row + S * kTwRowWords, sm.row_fac, sm.row_fac + 384, cur.q, tid);
      row_tab = cur.row;
      half_sync();
    }
    if (i + 1 < n) {
      prefetch(nxt.poly, b ^ 1);
      if (staged != nxt.row) split_stage_row_factors(sm.row_fac, t, nxt.row, cta, tid), staged = nxt.row;
    }
    copy_async_commit();
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round D, in place
      uint32_t x[16];
      uint32_t* tile = sm.in[b][j];
      const uint32_t* twr = sm.tw_row + (S * j + rho) * kTwRowWords;
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const uint4 u = *reinterpret_cast<const uint4*>(tile + off_d[v]);
        x[4 * v] = u.x, x[4 * v + 1] = u.y, x[4 * v + 2] = u.z, x[4 * v + 3] = u.w;
      }
      radix16<true>(x, cur.q, twr, row_slot_d);
#pragma unroll
      for (int v = 0; v < 4; ++v)
        *reinterpret_cast<uint4*>(tile + off_d[v]) = make_uint4(x[4 * v], x[4 * v + 1], x[4 * v + 2], x[4 * v + 3]);
    }
    __syncwarp();  // rounds D and C exchange within a row, whose 16 threads are in one warp
    if (i >= 2) mbar_wait(&sm.freed[b], ((i - 2) >> 1) & 1);  // the owners are done with item i - 2
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round C, to the owners
      uint32_t x[16];
      const uint32_t* tile = sm.in[b][j];
      const uint32_t* twr = sm.tw_row + (S * j + rho) * kTwRowWords;
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_c[e & 7] + 128 * (e >> 3)];
      radix16<true>(x, cur.q, twr, row_slot_c);
#pragma unroll
      for (int e = 0; e < 16; ++e) {
        const uint32_t base = mid0 + static_cast<uint32_t>(e >> 1) * rank_stride;
        store_async(base + (2 * b + (e & 1)) * kMid + remote_off[j], x[e], base + full_delta + 8 * b);
      }
    }
    cur = nxt;
    if (i + 2 < n) nxt = take();
  }
}

// The inverse's second phase (rounds B, A with the N^-1 scaling, of column slices 2 cta, 2 cta + 1)
// and the output.
template <typename Take, typename Sync>
__device__ __forceinline__ void split_inverse_columns(SplitSmem& sm, uint32_t* dst, const Tables& t, int n,
                                                      int cta, int tid, WorkItem cur, WorkItem nxt, Take& take,
                                                      Sync half_sync) {
  using G = Cluster;
  constexpr int S = 16;
  constexpr uint32_t kMid = G::kMidBytes;
  const int col = tid % S, g = tid / S;
  int off_a[2], off_b[2];
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    off_a[p] = G::col_tile(g + 16 * p, col) - 16 * S * p;
    off_b[p] = G::col_tile(16 * g + p, col) - S * p;
  }
  auto col_slot_a = [](int t_, int m) { return (1 << t_) + m; };
  auto col_slot_b = [&](int t_, int m) { return (16 << t_) + (g << t_) + m; };
  int col_tab0 = -1, col_tab1 = -1;
  bool due0 = false, due1 = false;
  auto issue_col = [&](int b, int row) {
    if ((b ? col_tab1 : col_tab0) == row) return;
    issue_tw_col_inverse(sm.tw_col[b], sm.scale[b], t, row, tid);
    if (b) col_tab1 = row, due1 = true; else col_tab0 = row, due0 = true;
  };
  issue_col(0, cur.row);
  copy_async_commit();
  cluster_sync_all();
  for (int i = 0; i < n; ++i) {
    const int b = i & 1;
    copy_async_wait<0>();  // item i's column table
    half_sync();           // ... visible to all; every thread is done with item i - 1
    if (i >= 1 && i + 1 < n && tid < 8)  // mid[b ^ 1] (item i - 1) is free for item i + 1
      mbar_arrive_remote(map_rank(&sm.freed[b ^ 1], static_cast<uint32_t>(tid)));
    if (b ? due1 : due0) {  // (read by round A, after the barrier below)
      if (tid == 0) finish_scale(sm.scale[b], sm.tw_col[b], cur.q);
      if (b) due1 = false; else due0 = false;
    }
    if (i + 1 < n) issue_col(b ^ 1, nxt.row);
    copy_async_commit();
    mbar_wait(&sm.full[b], (i >> 1) & 1);
    if (tid == 0 && i + 2 < n) mbar_expect(&sm.full[b], 2 * kMid);
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round B, in place
      uint32_t x[16];
      uint32_t* tile = sm.mid[b][j];
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_b[e & 1] + S * e];
      radix16<true>(x, cur.q, sm.tw_col[b], col_slot_b);
#pragma unroll
      for (int e = 0; e < 16; ++e) tile[off_b[e & 1] + S * e] = x[e];
    }
    half_sync();  // rounds B and A exchange within a column, across warps
    uint32_t* out = dst + cur.poly * kN;
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round A with N^-1, to dst
      uint32_t x[16];
      const uint32_t* tile = sm.mid[b][j];
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_a[e & 1] + 16 * S * e];
      radix16<true, true>(x, cur.q, sm.tw_col[b], col_slot_a, sm.scale[b]);
      uint32_t* o = out + g * kSide + S * (2 * cta + j) + col;
#pragma unroll
      for (int e = 0; e < 16; ++e) o[16 * e * kSide] = x[e];
    }
    cur = nxt;
    if (i + 2 < n) nxt = take();
  }
}
#endif

template <bool INVERSE>
__global__ void __launch_bounds__(512, 1)
    ntt_split_kernel(const uint32_t* src, uint32_t* dst, Tables t, int64_t polys, int64_t batch) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using G = Cluster;
  constexpr int S = 16, kThreads = 256;
  constexpr uint32_t kMid = G::kMidBytes;  // one slice's tile: 16 KB
  extern __shared__ __align__(16) uint32_t smem_words[];
  SplitSmem& sm = *reinterpret_cast<SplitSmem*>(smem_words);
  const bool second_half = threadIdx.x >= kThreads;  // the first half runs the first phase
  const int tid = static_cast<int>(threadIdx.x) & (kThreads - 1);
  const int cta = static_cast<int>(cluster_rank());  // slices 2 cta, 2 cta + 1
  const int64_t clusters = gridDim.x / 8, cid = blockIdx.x / 8;
  allow_dependents();
  const int64_t first = cid * polys / clusters;
  const int n = static_cast<int>((cid + 1) * polys / clusters - first);
  if (n == 0) return;

  const int limb0 = static_cast<int>(first / batch);
  const int span = static_cast<int>((first + n - 1) / batch) - limb0 + 1;
  for (int k = threadIdx.x; k < span; k += 2 * kThreads) {
    const int row = t.rows[limb0 + k];
    sm.limb_row[k] = row, sm.limb_q[k] = t.moduli[row];
  }
  if (threadIdx.x == 0) {
    mbar_init(&sm.full[0], 1), mbar_init(&sm.full[1], 1);
    mbar_init(&sm.sent[0], 8), mbar_init(&sm.sent[1], 8);
    mbar_init(&sm.freed[0], 8), mbar_init(&sm.freed[1], 8);
    mbar_init_fence();
    mbar_expect(&sm.full[0], 2 * kMid);
    if (n > 1) mbar_expect(&sm.full[1], 2 * kMid);
  }
  __syncthreads();
  ItemCursor ahead = {first % batch, 0};
  auto take = [&]() {
    const WorkItem w = ahead.item(limb0, t.limbs, sm.limb_row, sm.limb_q);
    ahead.advance(batch);
    return w;
  };
  auto half_sync = [second_half]() {
    asm volatile("bar.sync %0, %1;" ::"r"(1 + static_cast<int>(second_half)), "n"(kThreads) : "memory");
  };
  WorkItem cur = take();
  WorkItem nxt = n > 1 ? take() : cur;

  if constexpr (INVERSE) {
    if (!second_half) split_inverse_rows(sm, src, t, n, cta, tid, cur, nxt, take, half_sync);
    else split_inverse_columns(sm, dst, t, n, cta, tid, cur, nxt, take, half_sync);
  } else if (!second_half) {
    // ---------------------------------------------------------------- forward, column half
    // (inline here, not a function like the inverse's halves: moved into one, the forward's
    // code compiled to another schedule, not measured)
    const int col = tid % S, g = tid / S;  // owned column, row group = the owner slice of rows 16 g ..
    int off_a[2], off_b[2], stage_off[2][2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      off_a[p] = G::col_tile(g + 16 * p, col) - 16 * S * p;
      off_b[p] = G::col_tile(16 * g + p, col) - S * p;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int rank = 2 * cta + j;
        stage_off[j][p] = G::bulk_tile(g & 1, p, S * rank + col) - 256 * rank - 16 * p;
      }
    }
    const uint32_t remote_mid = map_rank(&sm.mid[0][g & 1][0], static_cast<uint32_t>(g >> 1));
    const uint32_t remote_full = map_rank(&sm.full[0], static_cast<uint32_t>(g >> 1));
    auto prefetch = [&](int64_t poly, int b) {
      const uint32_t* p = src + poly * kN;
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int chunk = tid + u * kThreads, r = chunk / (S / 4), c = 4 * (chunk % (S / 4));
          copy_async<16>(sm.in[b][j] + G::col_tile(r, c), p + r * kSide + S * (2 * cta + j) + c);
        }
    };
    int col_tab0 = -1, col_tab1 = -1;
    auto issue_col = [&](int b, int row) {
      if ((b ? col_tab1 : col_tab0) == row) return;
      issue_tw_col<false>(sm.tw_col[b], nullptr, t, row, tid);
      if (b) col_tab1 = row; else col_tab0 = row;
    };
    auto col_slot_a = [](int t_, int m) { return (1 << t_) + m; };
    auto col_slot_b = [&](int t_, int m) { return (16 << t_) + (g << t_) + m; };
    prefetch(cur.poly, 0);
    issue_col(0, cur.row);
    copy_async_commit();
    cluster_sync_all();  // every CTA's barriers are initialised before any remote operation
    for (int i = 0; i < n; ++i) {
      const int b = i & 1;
      copy_async_wait<0>();  // item i's slices and column table
      half_sync();           // ... visible to all; every thread is done with item i - 1
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round A, in place
        uint32_t x[16];
        uint32_t* tile = sm.in[b][j];
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_a[e & 1] + 16 * S * e];
        radix16<false, false, true>(x, cur.q, sm.tw_col[b], col_slot_a);
#pragma unroll
        for (int e = 0; e < 16; ++e) tile[off_a[e & 1] + 16 * S * e] = x[e];
      }
      // item i + 1's loads, once item i - 1's blocks have left in[b ^ 1] (after round A, so
      // that its blocks, sent at the end of the previous item, have had time to land)
      if (i + 1 < n) {
        if (i >= 1) mbar_wait(&sm.sent[b ^ 1], ((i - 1) >> 1) & 1);
        prefetch(nxt.poly, b ^ 1);
        issue_col(b ^ 1, nxt.row);
      }
      copy_async_commit();
      half_sync();
      if (i >= 2) mbar_wait(&sm.freed[b], ((i - 2) >> 1) & 1);  // the owners are done with item i - 2
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round B, then the blocks to their owners
        uint32_t x[16];
        uint32_t* tile = sm.in[b][j];
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_b[e & 1] + S * e];
        radix16<false>(x, cur.q, sm.tw_col[b], col_slot_b);
        uint32_t* blk = tile + 16 * S * g;
        __syncwarp();
#pragma unroll
        for (int e = 0; e < 16; ++e) blk[stage_off[j][e & 1] + 16 * e] = x[e];
        fence_proxy_async_smem();
        __syncwarp();
        if (col == 0)
          bulk_copy_remote(remote_mid + b * 2 * kMid + G::kBlockBytes * static_cast<uint32_t>(2 * cta + j), blk,
                           G::kBlockBytes, remote_full + 8 * b);
      }
      cur = nxt;
      if (i + 2 < n) nxt = take();
    }
  } else {
    // ---------------------------------------------------------------- forward, row half
    const int rho = tid >> 4, s = tid & 15;  // slice j: row rho ^ j (so both slices share offsets)
    int off_c[8], off_d[4];
#pragma unroll
    for (int h = 0; h < 8; ++h) off_c[h] = G::bulk_tile(0, rho, s + 16 * h);
#pragma unroll
    for (int v = 0; v < 4; ++v) off_d[v] = G::bulk_tile(0, rho, 16 * s + 4 * v);
    auto row_slot_c = [](int t_, int m) { return (1 << t_) + m; };
    auto row_slot_d = [&](int t_, int m) { return tw_row_slot(t_ + 4, (s << t_) + m); };
    // The row tables are computed (compute_tw_row, as the inverse does) from factors staged one
    // item ahead: copied ones (64 KB per CTA and row, in shared-memory order) were 3-6 us slower
    // at L = 48, batch 16, mostly in the start's burst of loads (H100).
    int row_tab = cur.row, staged = cur.row;
    bool row_due = true;
    split_stage_row_factors(sm.row_fac, t, cur.row, cta, tid);
    copy_async_commit();
    cluster_sync_all();
    // sent[]: thread r < 8 tells CTA r's column half that its blocks of an item have landed
    // here. It tells as soon as it sees them, also while the previous item is still being
    // processed (arrived_next), so that the column half can reload its input buffer early.
    bool arrived_next = false;
    auto tell_next_landed = [&](int i) {
      const int bn = (i + 1) & 1;
      if (tid < 8 && !arrived_next && i + 1 < n && mbar_test(&sm.full[bn], ((i + 1) >> 1) & 1)) {
        mbar_arrive_remote(map_rank(&sm.sent[bn], static_cast<uint32_t>(tid)));
        arrived_next = true;
      }
    };
    for (int i = 0; i < n; ++i) {
      const int b = i & 1;
      mbar_wait(&sm.full[b], (i >> 1) & 1);
      if (tid == 0 && i + 2 < n) mbar_expect(&sm.full[b], 2 * kMid);
      if (tid < 8 && !arrived_next) mbar_arrive_remote(map_rank(&sm.sent[b], static_cast<uint32_t>(tid)));
      arrived_next = false;
      if (row_due) {  // (every reader of the old table is past the barrier at the end)
        copy_async_wait<0>();
        half_sync();
        compute_tw_row(sm.tw_row, sm.row_fac, sm.row_fac + 256, cur.q, tid);
        compute_tw_row(sm.tw_row + S * kTwRowWords, sm.row_fac, sm.row_fac + 384, cur.q, tid);
        half_sync();
        row_due = false;
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round C, in place
        uint32_t x[16];
        uint32_t* tile = sm.mid[b][j];
        const uint32_t* twr = sm.tw_row + (S * j + (rho ^ j)) * kTwRowWords;
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_c[e & 7] + 2048 * (e >> 3)];
        radix16<false>(x, cur.q, twr, row_slot_c);
#pragma unroll
        for (int e = 0; e < 16; ++e) tile[off_c[e & 7] + 2048 * (e >> 3)] = x[e];
      }
      tell_next_landed(i);
      __syncwarp();  // rounds C and D exchange within a row, whose 16 threads are in one warp
      uint32_t* out = dst + cur.poly * kN;
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round D, staged, to dst
        uint32_t x[16];
        uint32_t* tile = sm.mid[b][j];
        const uint32_t* twr = sm.tw_row + (S * j + (rho ^ j)) * kTwRowWords;
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const uint4 u = *reinterpret_cast<const uint4*>(tile + off_d[v]);
          x[4 * v] = u.x, x[4 * v + 1] = u.y, x[4 * v + 2] = u.z, x[4 * v + 3] = u.w;
        }
        radix16<false>(x, cur.q, twr, row_slot_d);
        const uint32_t two_q = register_two_q(cur.q);
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = csub(csub(x[e], two_q), cur.q);
#pragma unroll
        for (int v = 0; v < 4; ++v)
          *reinterpret_cast<uint4*>(tile + off_d[v]) = make_uint4(x[4 * v], x[4 * v + 1], x[4 * v + 2], x[4 * v + 3]);
        __syncwarp();
        const int lane = tid & 31, r0 = tid >> 5 << 1;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int r = r0 + (u >> 1), c = 4 * lane + 128 * (u & 1);
          *reinterpret_cast<uint4*>(out + (S * (2 * cta + j) + r) * kSide + c) =
              *reinterpret_cast<const uint4*>(tile + G::bulk_tile(j, r, c));
        }
      }
      tell_next_landed(i);
      half_sync();  // every row thread is done reading mid[b] and tw_row
      if (tid < 8 && i + 2 < n) mbar_arrive_remote(map_rank(&sm.freed[b], static_cast<uint32_t>(tid)));
      if (i + 1 < n && nxt.row != row_tab) {
        if (nxt.row != staged) {
          split_stage_row_factors(sm.row_fac, t, nxt.row, cta, tid);
          copy_async_commit();
          staged = nxt.row;
        }
        row_tab = nxt.row;
        row_due = true;
      }
      cur = nxt;
      if (i + 2 < n) nxt = take();
    }
  }
  cluster_sync_all();  // no CTA leaves while data or arrivals of the cluster may be in flight
#else
  __trap();
#endif
}

}  // namespace

}  // namespace ntt_cuda
}  // namespace jax_fhe
