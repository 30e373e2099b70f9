#include "services/dispatcher/apps/timed_dispatch_store.h"

#include <type_traits>

namespace mmi::dispatcher {
namespace {

bool IsOk(const absl::Status& s) { return s.ok(); }
template <typename T>
bool IsOk(const absl::StatusOr<T>& s) {
  return s.ok();
}

}  // namespace

template <typename Fn>
auto TimedDispatchStore::Timed(std::string_view operation, Fn&& fn) {
  const auto start = clock_.MonotonicNow();
  auto result = fn();
  metrics_.StoreQuery(operation, clock_.MonotonicNow() - start, IsOk(result));
  return result;
}

absl::Status TimedDispatchStore::ForEachResource(
    const std::function<void(const store::DispatchedResource&)>& fn) {
  return Timed("for_each_resource", [&] { return inner_.ForEachResource(fn); });
}

absl::StatusOr<std::optional<store::DispatchedResource>> TimedDispatchStore::GetResource(
    const std::string& resource_id) {
  return Timed("get_resource", [&] { return inner_.GetResource(resource_id); });
}

absl::StatusOr<std::vector<store::DispatchedResource>> TimedDispatchStore::ResourcesOfCluster(
    const std::string& cluster) {
  return Timed("resources_of_cluster", [&] { return inner_.ResourcesOfCluster(cluster); });
}

absl::StatusOr<std::vector<int64_t>> TimedDispatchStore::Record(
    const std::vector<store::DispatchChange>& changes) {
  return Timed("record", [&] { return inner_.Record(changes); });
}

absl::StatusOr<std::vector<store::OutboxEntry>> TimedDispatchStore::PendingOutbox(int64_t after_seq,
                                                                                  int limit) {
  return Timed("pending_outbox", [&] { return inner_.PendingOutbox(after_seq, limit); });
}

absl::Status TimedDispatchStore::MarkPublished(const std::vector<int64_t>& seqs,
                                               std::chrono::system_clock::time_point at) {
  return Timed("mark_published", [&] { return inner_.MarkPublished(seqs, at); });
}

absl::Status TimedDispatchStore::RecordPublishFailure(int64_t seq, const std::string& error) {
  return Timed("record_publish_failure", [&] { return inner_.RecordPublishFailure(seq, error); });
}

absl::StatusOr<bool> TimedDispatchStore::MarkDeletionConfirmed(const std::string& resource_id) {
  return Timed("mark_deletion_confirmed",
               [&] { return inner_.MarkDeletionConfirmed(resource_id); });
}

absl::StatusOr<std::vector<std::string>> TimedDispatchStore::ConfirmedDeletions() {
  return Timed("confirmed_deletions", [&] { return inner_.ConfirmedDeletions(); });
}

absl::Status TimedDispatchStore::Forget(const std::string& resource_id) {
  return Timed("forget", [&] { return inner_.Forget(resource_id); });
}

}  // namespace mmi::dispatcher
