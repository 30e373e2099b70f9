// WorkQueue: the bounded, de-duplicating queue of object keys between informer handlers and a
// reconcile loop, with client-go's workqueue rules:
//   * a key is queued at most once: adding a key that waits already does nothing;
//   * Get() hands a key out and marks it being processed until Done(key); a key added again
//     meanwhile is not handed out a second time but queued again by Done(), so one key is never
//     processed twice at once and no change to it is missed;
//   * at most `capacity` keys wait (queued, or added again while processed). Beyond, Add() drops
//     the key and the queue remembers it overflowed: once it has drained, TakeOverflow() tells
//     the caller (once) to resync every object, which brings the dropped keys back;
//   * a key added as urgent (a change an informer just saw, as against a resync of everything)
//     is handed out before every key that is not, also when it was queued as not urgent before:
//     a change never waits behind a resync of 300,000 unchanged objects.
//
//   kube::WorkQueue queue(10'000);
//   queue.Add("argocd/guestbook");                       // informer thread
//   while (auto key = queue.Get()) { Reconcile(*key); queue.Done(*key); }   // loop thread
//   if (queue.TakeOverflow()) { AddEveryKey(); }
//
// Thread-safe. Keys are handed out in the order they were first queued, urgent ones first.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace mmi::kube {

class WorkQueue {
 public:
  enum class AddResult {
    kAdded,          // queued (or, being processed, queued again by Done())
    kAlreadyQueued,  // waits already: nothing changed
    kOverflowed,     // full: dropped; the first drop since the queue last drained
    kDropped,        // full: dropped; the queue had overflowed already
  };

  // `capacity` >= 1: keys waiting at most.
  explicit WorkQueue(size_t capacity);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Any thread. After ShutDown(), keys are still taken (and handed out by Get()). An urgent key
  // that waits already as not urgent moves ahead (kAlreadyQueued all the same).
  AddResult Add(const std::string& key, bool urgent = false);

  // The next queued key, now marked as being processed; nullopt when none is queued.
  std::optional<std::string> Get();
  // `key` (from Get()) is processed: when it was added again meanwhile, it is queued again.
  // A key that is not being processed is ignored.
  void Done(const std::string& key);
  // True once after keys were dropped for want of room and no key is queued any more: the
  // caller resyncs every object. False otherwise.
  bool TakeOverflow();

  // Blocks until a key is queued, TakeOverflow() would return true or ShutDown() was called,
  // for `timeout` at most.
  void Wait(std::chrono::nanoseconds timeout) const;
  // Wakes Wait() for good.
  void ShutDown();
  bool ShuttingDown() const;

  // Keys waiting: queued, or added again while being processed.
  size_t Len() const;

 private:
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pops the first entry of `lane` that is a waiting key (skipping entries moved ahead).
  std::optional<std::string> PopLocked(std::deque<std::string>& lane)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  // The two lanes, urgent_ handed out first. A key moved ahead stays in queue_ as well and is
  // skipped there (it is no longer dirty, or is being processed, when that entry comes up).
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> urgent_ ABSL_GUARDED_BY(mu_);
  // Keys waiting: in a lane, or being processed and added again (queued by Done()).
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  // Dirty keys in urgent_ or to be queued there by Done().
  absl::flat_hash_set<std::string> urgent_keys_ ABSL_GUARDED_BY(mu_);
  // Dirty keys not being processed: those Get() can hand out.
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  bool overflowed_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::kube
