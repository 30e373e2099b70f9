#include "libs/transport/internal/serial_executor.h"

#include <pthread.h>

#include <utility>

namespace mmi::transport::internal {

SerialExecutor::SerialExecutor(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { Run(); });
  // Linux limits thread names to 15 characters.
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

SerialExecutor::~SerialExecutor() { Stop(); }

void SerialExecutor::Post(absl::AnyInvocable<void() &&> task) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      return;
    }
  }
  std::move(task)();
}

void SerialExecutor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

void SerialExecutor::Run() {
  while (true) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](SerialExecutor* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace mmi::transport::internal
