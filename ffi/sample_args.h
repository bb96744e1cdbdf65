// Small signed polynomials (ternary v, Gaussian noise) drawn on the device from a 256-bit key,
// shared by the CPU and CUDA handlers so that both give the same bits.
//
// Keystream: ChaCha20 (RFC 8439: 20 rounds, 32-bit block counter, 96-bit nonce) keyed by `key`
// (uint32[8], drawn by the host from os.urandom), nonce (stream, 0, 0): a key draws several
// independent polynomials, one `stream` each. Coefficient j takes keystream word pair (2j, 2j+1)
// of the stream (block j / 8) as u = ((hi << 32 | lo) >> 11), a 53-bit uniform, and outputs
// #{k : thresholds[k] <= u} - bound (inversion of a cumulative table scaled to 2^53, as
// HostRandom.gaussian does on the host). The table is scanned whole (no branch on u), so the
// time does not depend on the secret values.
#pragma once

#include <cstdint>
#include <string>

#include "common.h"
#include "modarith.h"

namespace jax_fhe {

constexpr int kMaxSampleTable = 256;   // thresholds (a Gaussian with sigma 3.2, tail 6: 38)
constexpr int kSampleWordsPerBlock = 8;  // coefficients per 64-byte ChaCha20 block

FHE_HD uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

FHE_HD void chacha_quarter(uint32_t* s, int a, int b, int c, int d) {
  s[a] += s[b]; s[d] = rotl32(s[d] ^ s[a], 16);
  s[c] += s[d]; s[b] = rotl32(s[b] ^ s[c], 12);
  s[a] += s[b]; s[d] = rotl32(s[d] ^ s[a], 8);
  s[c] += s[d]; s[b] = rotl32(s[b] ^ s[c], 7);
}

// One ChaCha20 block (RFC 8439 section 2.3): out[16] for key[8], counter, nonce[3].
FHE_HD void chacha20_block(const uint32_t* key, uint32_t counter, uint32_t n0, uint32_t n1,
                           uint32_t n2, uint32_t* out) {
  uint32_t s[16] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u,
                    key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
                    counter, n0, n1, n2};
  uint32_t x[16];
  for (int i = 0; i < 16; ++i) x[i] = s[i];
  for (int round = 0; round < 10; ++round) {
    chacha_quarter(x, 0, 4, 8, 12);
    chacha_quarter(x, 1, 5, 9, 13);
    chacha_quarter(x, 2, 6, 10, 14);
    chacha_quarter(x, 3, 7, 11, 15);
    chacha_quarter(x, 0, 5, 10, 15);
    chacha_quarter(x, 1, 6, 11, 12);
    chacha_quarter(x, 2, 7, 8, 13);
    chacha_quarter(x, 3, 4, 9, 14);
  }
  for (int i = 0; i < 16; ++i) out[i] = x[i] + s[i];
}

// The table sample of one 53-bit uniform: #{k : t[k] <= u} - bound, every entry compared.
FHE_HD int32_t table_sample(uint64_t u, const int64_t* t, int count, int32_t bound) {
  int32_t below = 0;
  for (int k = 0; k < count; ++k) below += static_cast<int32_t>(static_cast<uint64_t>(t[k]) <= u);
  return below - bound;
}

// emit(j, w) for each value j of keystream block `block` below `total`, w its 64-bit keystream
// word (little-endian pair 2j, 2j + 1 of the stream).
template <typename Emit>
FHE_HD void for_block_words(const uint32_t* key, uint32_t stream, int64_t block, int64_t total,
                            Emit emit) {
  uint32_t words[16];
  chacha20_block(key, static_cast<uint32_t>(block), stream, 0u, 0u, words);
  const int64_t first = block * kSampleWordsPerBlock;
  for (int w = 0; w < kSampleWordsPerBlock; ++w) {
    if (first + w >= total) break;
    emit(first + w, (static_cast<uint64_t>(words[2 * w + 1]) << 32) | words[2 * w]);
  }
}

// The table samples of block `block`: u = the word's top 53 bits.
FHE_HD void sample_block(const uint32_t* key, uint32_t stream, int64_t block, int64_t total,
                         const int64_t* t, int count, int32_t bound, int32_t* out) {
  for_block_words(key, stream, block, total,
                  [&](int64_t j, uint64_t w) { out[j] = table_sample(w >> 11, t, count, bound); });
}

// Uniform residues: value j (of [..., L, N] flattened) is the 64-bit keystream word j of the
// stream reduced mod its limb's prime (q_l, l = (j / N) mod L), as HostRandom.uniform_mod
// reduces host words: within q / 2^64 < 2^-32 of uniform per value.
FHE_HD void uniform_block(const uint32_t* key, uint32_t stream, int64_t block, int64_t total,
                          const uint32_t* moduli, int64_t limbs, int log_n, uint32_t* out) {
  for_block_words(key, stream, block, total, [&](int64_t j, uint64_t w) {
    out[j] = static_cast<uint32_t>(w % static_cast<uint64_t>(moduli[(j >> log_n) % limbs]));
  });
}

inline ffi::Error check_stream(int64_t stream) {
  if (stream < 0 || stream >= (int64_t{1} << 32))
    return ffi::Error::InvalidArgument("sample: stream must be in [0, 2^32)");
  return ffi::Error::Success();
}

inline ffi::Error check_uniform_args(const ffi::AnyBuffer::Dimensions& key,
                                     const ffi::AnyBuffer::Dimensions& moduli,
                                     const ffi::AnyBuffer::Dimensions& out, int64_t stream,
                                     PolyShape* p) {
  if (auto e = check_stream(stream); e.failure()) return e;
  if (key.size() != 1 || key[0] != 8)
    return ffi::Error::InvalidArgument("sample_uniform: the key must be uint32[8]");
  if (auto e = decode_poly_shape(out, "sample_uniform output", p); e.failure()) return e;
  if (auto e = expect_count(moduli, 1, p->limbs, "sample_uniform moduli"); e.failure()) return e;
  if ((p->polys * p->n + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock > (int64_t{1} << 32))
    return ffi::Error::InvalidArgument("sample_uniform: more than 2^35 values from one stream");
  return ffi::Error::Success();
}

inline ffi::Error check_sample_args(const ffi::AnyBuffer::Dimensions& key, int64_t total,
                                    ffi::Span<const int64_t> thresholds, int64_t bound,
                                    int64_t stream) {
  if (auto e = check_stream(stream); e.failure()) return e;
  if (key.size() != 1 || key[0] != 8)
    return ffi::Error::InvalidArgument("sample_small: the key must be uint32[8]");
  const int64_t count = static_cast<int64_t>(thresholds.size());
  if (count < 1 || count > kMaxSampleTable)
    return ffi::Error::InvalidArgument("sample_small: the table must have 1 to " +
                                       std::to_string(kMaxSampleTable) + " thresholds, got " +
                                       std::to_string(count));
  for (int64_t k = 0; k < count; ++k) {
    if (thresholds[k] < 0 || thresholds[k] > (int64_t{1} << 53) || (k && thresholds[k] < thresholds[k - 1]))
      return ffi::Error::InvalidArgument("sample_small: thresholds must be sorted, in [0, 2^53]");
  }
  if (bound < 0 || bound > count)
    return ffi::Error::InvalidArgument("sample_small: bound must be in [0, thresholds]");
  if ((total + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock > (int64_t{1} << 32))
    return ffi::Error::InvalidArgument("sample_small: more than 2^35 coefficients from one stream");
  return ffi::Error::Success();
}

inline int64_t element_count(const ffi::AnyBuffer::Dimensions& dims) {
  int64_t total = 1;
  for (size_t i = 0; i < dims.size(); ++i) total *= dims[i];
  return total;
}

}  // namespace jax_fhe
