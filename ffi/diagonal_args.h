// Argument checks and the launch plan shared by the CPU and CUDA diagonal-sum handlers.
//
// The giant steps of a BSGS linear transform (jax_fhe.circuits.lintrans): for giant step
// g = 0..G-1, both ciphertext parts c = 0, 1, output row j and batch entry b,
//
//   out_g[b, c, j] = sum_i pts[index[g, i], j] * x_i[b, c, j]  mod p_j
//
// over the baby steps i = 0..K-1 with index[g, i] >= 0 (-1: giant step g has no diagonal for
// baby step i). Each baby rotation x_i is read where it lies (never stacked) and each diagonal
// once; products are summed in 64 bits and reduced every four terms (a reduced sum below p plus
// four products below (p - 1)^2 stays below 2^64 for p < 2^31), so the result is the canonical
// sum whatever the order.
//
// Operands (uint32, NTT domain, canonical residues):
//   pts   [D, R, M]          the diagonals (leading axes of size 1 allowed: vmap's expand_dims);
//                            M = N / 2^s: word t of a row stands for the 2^s coefficients
//                            t 2^s .. (t + 1) 2^s - 1 (the NTT of a plaintext packing n < N/2
//                            slots repeats each value N / 2n times in adjacent positions, so
//                            sparse diagonals are held once: pts[d, j, t >> s])
//   x_i   [B..., 2, R, N]    K operands, each with the output's batch entries or a single one
//   out_g [B..., 2, R, N]    G results
// Attributes: index int32[G * K] (row-major [G, K]), moduli int64[R] (odd primes below 2^31).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "modarith.h"

namespace jax_fhe {

// Per launch (the plan travels as a kernel parameter, under 4 KB).
constexpr int kDiagMaxBaby = 32;
constexpr int kDiagMaxGiant = 16;
constexpr int kDiagMaxRows = 64;

struct DiagonalShape {
  int64_t batch = 0, rows = 0, n = 0, diags = 0, baby = 0, giant = 0;
  int log_repeat = 0;   // s: pts holds N >> s words per row
  std::vector<bool> x_batched;
};

inline ffi::Error diag_error(const std::string& msg) {
  return ffi::Error::InvalidArgument("diagonal_sums: " + msg);
}

// Leading element count of a [B..., 2, R, N] operand with R and N checked.
inline ffi::Error diag_ct_batch(const ffi::AnyBuffer::Dimensions& d, int64_t rows, int64_t n,
                                const std::string& what, int64_t* batch) {
  const size_t r = d.size();
  if (r < 3 || d[r - 3] != 2 || d[r - 2] != rows || d[r - 1] != n)
    return diag_error(what + " must be [B..., 2, " + std::to_string(rows) + ", " +
                      std::to_string(n) + "]");
  int64_t b = 1;
  for (size_t i = 0; i + 3 < r; ++i) b *= d[i];
  *batch = b;
  return ffi::Error::Success();
}

inline ffi::Error check_diagonal_args(const ffi::AnyBuffer::Dimensions& pts,
                                      const std::vector<ffi::AnyBuffer::Dimensions>& xs,
                                      const std::vector<ffi::AnyBuffer::Dimensions>& outs,
                                      ffi::Span<const int32_t> index,
                                      ffi::Span<const int64_t> moduli, DiagonalShape* s) {
  if (pts.size() < 3) return diag_error("pts must be [D, R, M]");
  for (size_t i = 0; i + 3 < pts.size(); ++i)
    if (pts[i] != 1) return diag_error("pts cannot carry a batch axis");
  if (outs.empty()) return diag_error("give at least one giant step");
  PolyShape ps;
  if (auto e = decode_poly_shape(outs[0], "diagonal_sums out 0", &ps); e.failure()) return e;
  s->n = ps.n;
  s->rows = pts[pts.size() - 2];
  const int64_t m = pts[pts.size() - 1];
  s->log_repeat = 0;
  while (s->log_repeat < ps.log_n && (m << s->log_repeat) < s->n) ++s->log_repeat;
  if (m < 1 || (m << s->log_repeat) != s->n)
    return diag_error("pts rows hold " + std::to_string(m) + " words; expected N = " +
                      std::to_string(s->n) + " divided by a power of two");
  s->diags = pts[pts.size() - 3];
  s->baby = static_cast<int64_t>(xs.size());
  s->giant = static_cast<int64_t>(outs.size());
  if (s->baby < 1) return diag_error("give at least one baby rotation");
  if (s->rows < 1) return diag_error("pts has no rows");
  if (static_cast<int64_t>(moduli.size()) != s->rows)
    return diag_error("moduli must hold one prime per row (" + std::to_string(s->rows) + ")");
  for (int64_t j = 0; j < s->rows; ++j)
    if (moduli[j] < 3 || moduli[j] >= (int64_t{1} << 31) || moduli[j] % 2 == 0)
      return diag_error("moduli must be odd primes below 2^31");
  if (static_cast<int64_t>(index.size()) != s->giant * s->baby)
    return diag_error("index must hold giant * baby = " + std::to_string(s->giant * s->baby) +
                      " entries, got " + std::to_string(index.size()));
  for (int32_t d : index)
    if (d < -1 || d >= s->diags)
      return diag_error("index entry " + std::to_string(d) + " outside [-1, " +
                        std::to_string(s->diags) + ")");
  if (auto e = diag_ct_batch(outs[0], s->rows, s->n, "out 0", &s->batch); e.failure()) return e;
  for (size_t g = 1; g < outs.size(); ++g) {
    if (outs[g].size() != outs[0].size()) return diag_error("the outputs' shapes differ");
    for (size_t a = 0; a < outs[0].size(); ++a)
      if (outs[g][a] != outs[0][a]) return diag_error("the outputs' shapes differ");
  }
  s->x_batched.clear();
  for (size_t i = 0; i < xs.size(); ++i) {
    int64_t b = 0;
    const std::string what = "x " + std::to_string(i);
    if (auto e = diag_ct_batch(xs[i], s->rows, s->n, what, &b); e.failure()) return e;
    if (b != s->batch && b != 1)
      return diag_error(what + " has " + std::to_string(b) + " batch entries, the output " +
                        std::to_string(s->batch));
    s->x_batched.push_back(b == s->batch && s->batch > 1);
  }
  return ffi::Error::Success();
}

// The reduction constants of one row's prime (host code: a 64-bit division).
inline Reduce64 diag_row(int64_t p) {
  const uint64_t q = static_cast<uint64_t>(p);
  const uint32_t r32 = static_cast<uint32_t>((uint64_t{1} << 32) % q);
  return Reduce64{static_cast<uint32_t>(q), r32, shoup_companion(r32, q), shoup_companion(1, q)};
}

// One output coefficient: the sum over baby steps of w_i * x_i, reduced every four terms.
// load(i) returns the pair (diagonal word, x word) of baby step i or false where absent.
template <typename Load>
FHE_HD uint32_t diag_sum(int64_t baby, const Reduce64& red, Load&& load) {
  uint64_t acc = 0;
  int terms = 0;
  for (int64_t i = 0; i < baby; ++i) {
    uint32_t w = 0, x = 0;
    if (!load(i, &w, &x)) continue;
    if (terms == 4) {
      acc = reduce64(acc, red);  // (p - 1) + 4 (p - 1)^2 < 2^64 for p < 2^31
      terms = 0;
    }
    acc += static_cast<uint64_t>(w) * x;
    ++terms;
  }
  return reduce64(acc, red);
}

// A decoded call: shapes, the per-row reduction constants, the operand and result pointers.
struct DiagonalCall {
  DiagonalShape s;
  std::vector<Reduce64> rows;
  std::vector<const uint32_t*> x;
  std::vector<uint32_t*> out;
};

// Decodes the baby rotations (remaining arguments) and giant-step sums (remaining results) and
// checks every argument: the part of the CPU and CUDA handlers that is the same.
inline ffi::Error decode_diagonal_args(const ffi::Buffer<ffi::U32>& pts, const ffi::RemainingArgs& xs,
                                       const ffi::RemainingRets& outs, ffi::Span<const int32_t> index,
                                       ffi::Span<const int64_t> moduli, DiagonalCall* c) {
  std::vector<ffi::AnyBuffer::Dimensions> xd, od;
  c->x.clear();
  c->out.clear();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto x = xs.get<ffi::Buffer<ffi::U32>>(i);
    if (x.has_error()) return diag_error("the baby rotations must be uint32 arrays");
    xd.push_back(x->dimensions());
    c->x.push_back(x->typed_data());
  }
  for (size_t g = 0; g < outs.size(); ++g) {
    auto o = outs.get<ffi::Buffer<ffi::U32>>(g);
    if (o.has_error()) return diag_error("the results must be uint32 arrays");
    od.push_back((*o)->dimensions());
    c->out.push_back((*o)->typed_data());
  }
  if (auto e = check_diagonal_args(pts.dimensions(), xd, od, index, moduli, &c->s); e.failure())
    return e;
  c->rows.clear();
  for (int64_t p : moduli) c->rows.push_back(diag_row(p));
  return ffi::Error::Success();
}

}  // namespace jax_fhe
