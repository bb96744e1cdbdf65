// Modular arithmetic on 32-bit words, shared by the CPU and CUDA kernels.
//
// Every modulus q is odd and below 2^31, so 2q fits in a uint32 and a product of two
// residues fits in a uint64. All functions return canonical residues in [0, q) unless
// their name says "lazy".
//
// Two multiplication flavours:
//  * Shoup: multiply by a constant w known ahead of time, with w' = floor(w * 2^32 / q)
//    precomputed on the host (jax_fhe/rns/tables.py). Three 32-bit multiplies, valid for
//    any 32-bit left operand. Used for twiddles and per-limb constants.
//  * 64-bit reduction of a BConv accumulator (any uint64) with two Shoup products.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FHE_HD __host__ __device__ __forceinline__
#else
#define FHE_HD inline
#endif

namespace jax_fhe {

FHE_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// x in [0, 2q) -> [0, q). For x < q, x - q wraps above x, so min() keeps x.
FHE_HD uint32_t csub(uint32_t x, uint32_t q) {
  uint32_t y = x - q;
  return y < x ? y : x;
}

FHE_HD uint32_t add_mod(uint32_t a, uint32_t b, uint32_t q) { return csub(a + b, q); }

FHE_HD uint32_t sub_mod(uint32_t a, uint32_t b, uint32_t q) { return csub(a + q - b, q); }

// Shoup product a * w mod q in [0, 2q), for any a < 2^32 and w < q.
FHE_HD uint32_t mul_shoup_lazy(uint32_t a, uint32_t w, uint32_t w_shoup, uint32_t q) {
  uint32_t qhat = mulhi32(a, w_shoup);
  return a * w - qhat * q;  // exact value < 2q, so the wrap-around cancels
}

FHE_HD uint32_t mul_shoup(uint32_t a, uint32_t w, uint32_t w_shoup, uint32_t q) {
  return csub(mul_shoup_lazy(a, w, w_shoup, q), q);
}

// w' = floor(w * 2^32 / p), the Shoup companion of a constant w < p (a 64-bit division: for
// values derived at run time; tables get theirs on the host, jax_fhe/rns/tables.py).
FHE_HD uint32_t shoup_companion(uint64_t w, uint64_t p) {
  return static_cast<uint32_t>((w << 32) / p);
}

// Reduction constants for a 64-bit accumulator modulo p:
//   r32 = 2^32 mod p (with its Shoup companion) and the Shoup companion of 1.
struct Reduce64 {
  uint32_t p, r32, r32_shoup, one_shoup;
};

// x mod p for any 64-bit x: x = hi * 2^32 + lo  ==>  x = hi * r32 + lo (mod p).
FHE_HD uint32_t reduce64(uint64_t x, const Reduce64& c) {
  uint32_t hi = static_cast<uint32_t>(x >> 32);
  uint32_t lo = static_cast<uint32_t>(x);
  uint32_t a = mul_shoup(hi, c.r32, c.r32_shoup, c.p);
  uint32_t b = mul_shoup(lo, 1u, c.one_shoup, c.p);
  return add_mod(a, b, c.p);
}

// Montgomery product a * b * 2^-32 mod q in [0, q), for a * b < q * 2^32 (q odd, < 2^31) and
// neg_qinv = -q^-1 mod 2^32. The low words of a b and m q sum to 0 or 2^32, so the carry into
// the high word is (lo != 0). The same steps as jax_fhe/ops/modarith.py's _mont.
FHE_HD uint32_t mont_mul(uint32_t a, uint32_t b, uint32_t q, uint32_t neg_qinv) {
  const uint32_t lo = a * b;
  const uint32_t m = lo * neg_qinv;
  return csub(mulhi32(a, b) + mulhi32(m, q) + (lo != 0u ? 1u : 0u), q);
}

// Negacyclic NTT butterflies on canonical residues.
// Cooley-Tukey (forward): (a, b) -> (a + w b, a - w b).
FHE_HD void ct_butterfly(uint32_t& a, uint32_t& b, uint32_t w, uint32_t w_shoup, uint32_t q) {
  uint32_t t = mul_shoup(b, w, w_shoup, q);
  uint32_t a0 = a;
  a = add_mod(a0, t, q);
  b = sub_mod(a0, t, q);
}

// Gentleman-Sande (inverse): (a, b) -> (a + b, (a - b) w).
FHE_HD void gs_butterfly(uint32_t& a, uint32_t& b, uint32_t w, uint32_t w_shoup, uint32_t q) {
  uint32_t a0 = a;
  a = add_mod(a0, b, q);
  b = mul_shoup(a0 + q - b, w, w_shoup, q);  // a0 + q - b < 2q < 2^32
}

// Harvey's lazy butterflies, for q < 2^30 so that 4q fits in a word. two_q = 2q is a
// parameter so that a kernel can keep it in a register (see ntt_device.cuh: then a - 2q and
// x - t + 2q are single adds, and csub a single VIADDMNMX, 6 instructions per butterfly).
// Forward: inputs and outputs in [0, 4q). A_BELOW_2Q: the caller knows a < 2q (for example a
// transform's first stage on canonical inputs), so the conditional subtraction is skipped.
template <bool A_BELOW_2Q = false>
FHE_HD void ct_butterfly_lazy(uint32_t& a, uint32_t& b, uint32_t w, uint32_t w_shoup, uint32_t q,
                              uint32_t two_q) {
  if (A_BELOW_2Q) {  // (this order is the measured one: x = a above changed the cluster
                     // kernel's register allocation)
    const uint32_t t = mul_shoup_lazy(b, w, w_shoup, q);
    b = a - t + two_q;
    a += t;
    return;
  }
  uint32_t x = csub(a, two_q);                          // [0, 2q)
  uint32_t t = mul_shoup_lazy(b, w, w_shoup, q);        // [0, 2q), any 32-bit b
  a = x + t;
  b = x - t + two_q;
}

// Inverse: inputs and outputs in [0, 2q).
FHE_HD void gs_butterfly_lazy(uint32_t& a, uint32_t& b, uint32_t w, uint32_t w_shoup, uint32_t q,
                              uint32_t two_q) {
  uint32_t a0 = a;
  a = csub(a0 + b, two_q);
  b = mul_shoup_lazy(a0 - b + two_q, w, w_shoup, q);
}

// Position of the source coefficient for the automorphism X -> X^g in the NTT domain.
// NTT outputs are in bit-reversed order: slot k holds the evaluation at psi^(2*brev(k)+1).
// sigma_g(a)(psi^e) = a(psi^(e*g)), so slot k reads slot brev(((2*brev(k)+1)*g mod 2N - 1)/2).
FHE_HD uint32_t bitrev(uint32_t x, int bits) {
#if defined(__CUDA_ARCH__)
  return __brev(x) >> (32 - bits);
#else
  uint32_t r = 0;
  for (int i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1u);
    x >>= 1;
  }
  return r;
#endif
}

FHE_HD uint32_t automorphism_ntt_source(uint32_t k, uint32_t galois, int log_n) {
  const uint32_t two_n_mask = (2u << log_n) - 1u;
  uint32_t e = 2u * bitrev(k, log_n) + 1u;
  uint32_t src_e = (e * galois) & two_n_mask;  // galois < 2N, e < 2N: product < 2^34 wraps
  // (wrap is harmless: 2N divides 2^32 for N <= 2^31, so the mask is taken mod 2^32 exactly)
  return bitrev((src_e - 1u) >> 1, log_n);
}

}  // namespace jax_fhe
