// Where blocking work (hub PATCHes, database calls) runs, so that the sink's loop thread never
// blocks (STYLE.md §5). ThreadPool is the production executor; InlineExecutor runs work on the
// submitting thread, which makes unit tests deterministic.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace mmi::status_sink {

using Work = absl::AnyInvocable<void() &&>;

// Thread-safe.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `work` once, eventually. Work submitted after Stop() is run on the caller's thread.
  virtual void Submit(Work work) = 0;
};

// A fixed set of threads sharing one FIFO queue. The queue is bounded by its callers (the sink
// caps writes and store calls in flight).
class ThreadPool final : public Executor {
 public:
  // `name` appears in logs only.
  ThreadPool(std::string name, int threads);
  ~ThreadPool() override;  // Stop()
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(Work work) override;
  // Runs what is queued, then joins the threads. Idempotent.
  void Stop();

 private:
  void Run();

  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;  // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::vector<std::thread> threads_;
};

// Runs work immediately on the submitting thread.
class InlineExecutor final : public Executor {
 public:
  void Submit(Work work) override { std::move(work)(); }
};

}  // namespace mmi::status_sink
