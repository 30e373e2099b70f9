#include "services/status-sink/executor.h"

namespace mmi::status_sink {

ThreadPool::ThreadPool(std::string name, int threads) : name_(std::move(name)) {
  threads_.reserve(static_cast<size_t>(std::max(threads, 1)));
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this] { Run(); });
  }
}

ThreadPool::~ThreadPool() { Stop(); }

void ThreadPool::Submit(Work work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(work));
      cv_.notify_one();
      return;
    }
  }
  std::move(work)();
}

void ThreadPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

void ThreadPool::Run() {
  while (true) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(work)();
  }
}

}  // namespace mmi::status_sink
