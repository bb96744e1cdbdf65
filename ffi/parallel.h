// A small parallel-for for the CPU handlers: splits [0, n) over hardware threads when the
// work is large enough to pay for thread start-up; runs inline otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace jax_fhe {

template <typename F>
void parallel_for(int64_t n, int64_t work_per_item, F&& fn) {
  const int64_t kMinWorkPerThread = int64_t{1} << 18;
  int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t threads = std::min<int64_t>({hw, n, std::max<int64_t>(1, n * work_per_item / kMinWorkPerThread)});
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int64_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += threads) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace jax_fhe
