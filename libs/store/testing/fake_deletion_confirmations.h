// DeletionConfirmations for tests: Confirm() delivers a confirmation on the caller's thread.
#pragma once

#include <atomic>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "libs/store/deletion_confirmations.h"

namespace mmi::store::testing {

class FakeDeletionConfirmations final : public DeletionConfirmations {
 public:
  void Start(Callback on_confirmed) override {
    absl::MutexLock lock(&mu_);
    on_confirmed_ = std::move(on_confirmed);
    started_ = true;
  }
  void Stop() override {
    absl::MutexLock lock(&mu_);
    on_confirmed_ = nullptr;
  }
  bool connected() const override { return connected_.load(); }

  // Delivers `resource_id` to the callback given to Start(); false when not started or stopped.
  bool Confirm(const std::string& resource_id) {
    absl::MutexLock lock(&mu_);
    if (!on_confirmed_) {
      return false;
    }
    on_confirmed_(resource_id);
    return true;
  }
  void set_connected(bool connected) { connected_.store(connected); }
  bool started() const {
    absl::MutexLock lock(&mu_);
    return started_;
  }

 private:
  mutable absl::Mutex mu_;
  Callback on_confirmed_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> connected_{false};
};

}  // namespace mmi::store::testing
