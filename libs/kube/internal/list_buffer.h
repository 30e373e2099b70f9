// ListBuffer: the state of a list being completed or applied on an Informer's list worker, and
// the watch's events meanwhile (see the top of informer.h for why the watch never waits for a
// list). While a paged list's pages are read the watch applies its events itself and the buffer
// remembers which objects it touched (the replace keeps the cache's newer state of those); while
// the list is applied (the replace) the watch buffers its events here, the newest per object,
// and the list worker drains them into the store after the replace.
//
// Thread-safe: the reflector (watch) thread and the list worker share it. Lock order: this
// before the InformerStore's lock (the drain's end and a bookmark set the store's version under
// this lock, so no watch event can be applied between the two).
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/kube/internal/informer_store.h"
#include "libs/kube/kube_client.h"

namespace mmi::kube::internal {

// A watch event that arrived while a list was completed or applied.
struct BufferedEvent {
  WatchEventType type;
  std::string key;
  Entry entry;  // for kDeleted: the object's final state
};

class ListBuffer {
 public:
  // `store` (borrowed) receives the resume version and counts buffered events.
  explicit ListBuffer(InformerStore& store) : store_(store) {}

  // A streamed list is complete at `list_version`: buffer from now on.
  void BeginReplace(std::string list_version);
  // A paged list's first page is in at `list_version`: the watch may start from it and applies
  // its events itself, each key remembered as touched, until TakeTouched().
  void FirstPageIn(std::string list_version);
  // The watch changed `key` while the pages were read.
  bool Touched(const std::string& key) const;
  // The paged list is complete and about to replace the cache: the watch buffers from now on.
  // Returns the keys the watch changed while the pages were read, each with the version of its
  // newest event ("" when the event had none): the cache already holds their newer state.
  absl::flat_hash_map<std::string, std::string> TakeTouched();
  // The paged list failed: records `error` and ends the open watch, if any.
  void Fail(absl::Status error);
  // Waits for FirstPageIn or Fail; OK once the first page is in, the list's error, or
  // Cancelled when `stop` is requested first.
  absl::Status AwaitFirstPage(const std::stop_token& stop);
  // The list's failure, or OK.
  absl::Status Failure() const;
  // Forgets everything (after the list worker has been joined).
  void Reset();

  // A list is being completed or applied.
  bool Active() const;
  // The version the next watch starts from.
  std::string WatchFrom() const;
  // The open watch, ended by a list failure; nullptr when it ends. Ended at once when the list
  // has already failed.
  void SetWatchCancel(std::stop_source* cancel);

  // The watch has seen `resource_version` (a bookmark): the resume point.
  void NoteVersion(std::string resource_version);
  // Buffers a change while a list is applied; false when it is to be applied now (no list, or a
  // paged list's pages are being read: then `key` is remembered as touched).
  bool Buffer(WatchEventType type, std::string key, std::string resource_version,
              const std::function<Entry()>& make_entry);
  // On the list worker after the replace: hands the buffered events to `apply` until none are
  // left, then lets the watch apply its events itself.
  void Drain(const std::stop_token& stop,
             const std::function<void(std::vector<BufferedEvent>&)>& apply);

 private:
  InformerStore& store_;
  mutable absl::Mutex mu_;
  bool active_ ABSL_GUARDED_BY(mu_) = false;         // a list is being completed or applied
  bool buffering_ ABSL_GUARDED_BY(mu_) = false;      // the watch buffers instead of applying
  bool first_page_ ABSL_GUARDED_BY(mu_) = false;     // a paged list's first page is in
  std::string list_version_ ABSL_GUARDED_BY(mu_);    // where the watch starts
  std::string resume_version_ ABSL_GUARDED_BY(mu_);  // newest the watch delivered; "" none yet
  std::vector<BufferedEvent> items_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, size_t> index_ ABSL_GUARDED_BY(mu_);  // key -> newest event
  // Applied while the pages were read: key -> version of its newest event.
  absl::flat_hash_map<std::string, std::string> touched_ ABSL_GUARDED_BY(mu_);
  absl::Status list_error_ ABSL_GUARDED_BY(mu_);
  std::stop_source* watch_cancel_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace mmi::kube::internal
