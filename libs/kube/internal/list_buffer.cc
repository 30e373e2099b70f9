#include "libs/kube/internal/list_buffer.h"

#include <utility>

#include "absl/time/time.h"
#include "libs/kube/informer_settings.h"

namespace mmi::kube::internal {

void ListBuffer::BeginReplace(std::string list_version) {
  absl::MutexLock lock(&mu_);
  list_version_ = std::move(list_version);
  active_ = true;
  buffering_ = true;
}

void ListBuffer::FirstPageIn(std::string list_version) {
  absl::MutexLock lock(&mu_);
  list_version_ = std::move(list_version);
  first_page_ = true;
  active_ = true;  // the watch starts now and applies its events itself until TakeTouched()
  buffering_ = false;
}

absl::flat_hash_map<std::string, std::string> ListBuffer::TakeTouched() {
  absl::MutexLock lock(&mu_);
  buffering_ = true;
  return std::exchange(touched_, {});
}

void ListBuffer::Fail(absl::Status error) {
  absl::MutexLock lock(&mu_);
  list_error_ = std::move(error);
  if (watch_cancel_ != nullptr) {
    watch_cancel_->request_stop();
  }
}

absl::Status ListBuffer::AwaitFirstPage(const std::stop_token& stop) {
  absl::MutexLock lock(&mu_);
  const auto first_page_or_failure = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return first_page_ || !list_error_.ok();
  };
  while (!mu_.AwaitWithTimeout(absl::Condition(&first_page_or_failure), absl::Milliseconds(100))) {
    if (stop.stop_requested()) {
      return absl::CancelledError("stopped");
    }
  }
  return first_page_ ? absl::OkStatus() : list_error_;
}

absl::Status ListBuffer::Failure() const {
  absl::ReaderMutexLock lock(&mu_);
  return list_error_;
}

void ListBuffer::Reset() {
  absl::MutexLock lock(&mu_);
  active_ = false;
  buffering_ = false;
  first_page_ = false;
  list_version_.clear();
  resume_version_.clear();
  items_.clear();
  index_.clear();
  touched_.clear();
  list_error_ = absl::OkStatus();
  watch_cancel_ = nullptr;
}

bool ListBuffer::Active() const {
  absl::ReaderMutexLock lock(&mu_);
  return active_;
}

std::string ListBuffer::WatchFrom() const {
  {
    absl::ReaderMutexLock lock(&mu_);
    if (active_) {
      return resume_version_.empty() ? list_version_ : resume_version_;
    }
  }
  return store_.ResourceVersion();
}

void ListBuffer::SetWatchCancel(std::stop_source* cancel) {
  absl::MutexLock lock(&mu_);
  watch_cancel_ = cancel;
  if (cancel != nullptr && !list_error_.ok()) {
    cancel->request_stop();
  }
}

void ListBuffer::NoteVersion(std::string resource_version) {
  absl::MutexLock lock(&mu_);
  if (active_) {
    resume_version_ = std::move(resource_version);
    return;
  }
  store_.SetResourceVersion(std::move(resource_version));
}

bool ListBuffer::Buffer(WatchEventType type, std::string key, std::string resource_version,
                        const std::function<Entry()>& make_entry) {
  absl::MutexLock lock(&mu_);
  if (!active_) {
    return false;
  }
  if (!buffering_) {
    // The pages are being read: the caller applies the event now (handlers see it at once) and
    // the replace keeps this newer state.
    if (!resource_version.empty()) {
      resume_version_ = resource_version;
    }
    touched_.insert_or_assign(std::move(key), std::move(resource_version));
    store_.Count([](InformerStats& stats) { ++stats.applied_while_listing; });
    return false;
  }
  Entry entry = make_entry();  // for DELETED: the final state, for OnDelete
  if (!resource_version.empty()) {
    resume_version_ = std::move(resource_version);
  }
  const auto it = index_.find(key);
  // The newest event per object, except that a re-create after a delete stays two events (the
  // handlers see OnDelete then OnAdd, as without the buffer).
  if (it != index_.end() &&
      !(items_[it->second].type == WatchEventType::kDeleted && type != WatchEventType::kDeleted)) {
    BufferedEvent& newest = items_[it->second];
    newest.type = type;  // ADDED and MODIFIED both apply as "store this state"
    newest.entry = std::move(entry);
  } else {
    index_.insert_or_assign(key, items_.size());
    items_.push_back(BufferedEvent{type, std::move(key), std::move(entry)});
  }
  store_.Count([](InformerStats& stats) { ++stats.buffered_events; });
  return true;
}

bool ListBuffer::Touched(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return touched_.contains(key);
}

void ListBuffer::Drain(const std::stop_token& stop,
                       const std::function<void(std::vector<BufferedEvent>&)>& apply) {
  while (!stop.stop_requested()) {
    std::vector<BufferedEvent> batch;
    {
      absl::MutexLock lock(&mu_);
      if (items_.empty()) {
        active_ = false;  // from now on the watch applies its events itself
        buffering_ = false;
        index_.clear();
        if (!resume_version_.empty()) {
          store_.SetResourceVersion(resume_version_);  // may be a bookmark's, after the events
        }
        return;
      }
      batch.swap(items_);
      index_.clear();
    }
    apply(batch);
  }
}

}  // namespace mmi::kube::internal
