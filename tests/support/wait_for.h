// Waiting in a test for something another thread or process does: WaitFor polls a condition
// until it holds or a time limit passes, so that a test neither sleeps a fixed time nor hangs.
#pragma once

#include <chrono>
#include <thread>

namespace vgpu::testing {

// True as soon as `done()` is true, polling every `poll`; false when `limit` passes first
// (`done()` is asked once more at the limit). The default limit is long enough for a loaded
// 2-core machine; a test that passes waits only as long as its condition takes.
template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(10),
             std::chrono::milliseconds poll = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace vgpu::testing
