// Scaffolding shared by the in-memory stores (FakeDispatchStore, FakeStatusStore): one mutex over
// all of a store's state, fault injection, the deletion-confirmed notifications, and visiting
// copies outside the lock.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/store/dispatch_store.h"

namespace mmi::store::testing {

// Thread-safe.
class FakeLockedStore {
 public:
  // Every following call fails with `status` until cleared with OkStatus().
  void FailWithForTest(absl::Status status) {
    absl::MutexLock lock(&mu_);
    fault_ = std::move(status);
  }

  // Payloads of the deletion-confirmed notifications sent, in order.
  std::vector<std::string> notifications() const {
    absl::MutexLock lock(&mu_);
    return notifications_;
  }

 protected:
  FakeLockedStore() = default;
  ~FakeLockedStore() = default;

  // Returns the injected fault, or else appends values to a vector with `collect` under the lock
  // (annotate it ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)) and then calls `fn` on each of them without
  // it, so `fn` may call back into the store.
  template <typename T, typename Collect>
  absl::Status VisitCopies(Collect collect, const std::function<void(const T&)>& fn) {
    std::vector<T> copy;
    {
      absl::MutexLock lock(&mu_);
      if (!fault_.ok()) {
        return fault_;
      }
      collect(copy);
    }
    for (const T& value : copy) {
      fn(value);
    }
    return absl::OkStatus();
  }

  // Marks `resource_id` in `resources` (when present) kDeleteConfirmed and sends its
  // notification. As the PostgreSQL stores: only a resource being deleted is confirmed (and
  // notified); false for a live or unknown one.
  template <typename Resources>
  bool ConfirmDeletionLocked(Resources& resources, const std::string& resource_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = resources.find(resource_id);
    if (it == resources.end() || it->second.deletion_state == DeletionState::kLive) {
      return false;
    }
    it->second.deletion_state = DeletionState::kDeleteConfirmed;
    notifications_.push_back(resource_id);
    return true;
  }

  mutable absl::Mutex mu_;
  absl::Status fault_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> notifications_ ABSL_GUARDED_BY(mu_);

 private:
  FakeLockedStore(const FakeLockedStore&) = delete;
  FakeLockedStore& operator=(const FakeLockedStore&) = delete;
};

}  // namespace mmi::store::testing
