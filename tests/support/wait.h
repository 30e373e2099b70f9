// Waiting on conditions with deadlines (never a bare sleep in a test).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace mmi::testing {

// Polls `condition` every `poll` until it returns true or `timeout` passes. Returns the last
// result, so tests write ASSERT_TRUE(WaitFor(...)) << "what we waited for".
inline bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(100)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace mmi::testing
