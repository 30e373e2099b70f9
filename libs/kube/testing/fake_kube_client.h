// FakeKubeClient: an in-memory API server behind the KubeClient interface, for unit tests of
// code that reads, writes and watches Kubernetes objects (informers, leader election, the
// dispatcher and the status sink).
//
// It keeps objects per resource collection with a global resourceVersion counter, assigns uid,
// resourceVersion, generation and creationTimestamp like the API server, checks resourceVersion
// preconditions (409 -> kAborted), applies merge patches (RFC 7386) and JSON patches (RFC 6902),
// honours finalizers on delete (deletionTimestamp, removal with the last finalizer), pages lists
// and serves watches from an event history. Server-side apply is approximated by a merge patch
// (no managedFields, no conflicts). Label selectors support `k=v`, `k==v`, `k!=v`, `k`, `!k`;
// field selectors `metadata.name` and `metadata.namespace`.
//
// Tests steer it: FailNext() injects errors, CloseWatches()/BreakWatches() end open watches,
// Compact() expires history (410), SetWatchDeliveryPaused() hides changes from open watches so
// that a relist has to discover them. Every call is recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/kube/kube_client.h"

namespace mmi::kube::testing {

// Thread-safe. Handlers of Watch() run without the fake's lock held, so they may call back in.
class FakeKubeClient final : public KubeClient {
 public:
  struct Call {
    std::string verb;  // GET LIST CREATE UPDATE PATCH DELETE WATCH
    ResourceRef ref;
    std::string name;
    nlohmann::json body;  // object, patch, or null
    std::string detail;   // LIST: continue token; WATCH: resourceVersion; PATCH: patch type
  };

  FakeKubeClient() = default;

  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view name) override;
  absl::StatusOr<ListResult> List(const ResourceRef& ref, const ListOptions& options) override;
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref, const nlohmann::json& object,
                                        const WriteOptions& options) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref, const nlohmann::json& object,
                                        const WriteOptions& options) override;
  absl::StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view name,
                                       PatchType type, const nlohmann::json& patch,
                                       const PatchOptions& options,
                                       std::string_view subresource) override;
  absl::Status Delete(const ResourceRef& ref, std::string_view name,
                      const DeleteOptions& options) override;
  absl::Status Watch(const ResourceRef& ref, const WatchOptions& options,
                     const WatchHandler& handler, std::stop_token stop) override;

  // --- Test controls ---

  // The next call of `verb` (see Call::verb) fails with `status` (FIFO per verb), before it has
  // any effect.
  void FailNext(const std::string& verb, absl::Status status);
  std::vector<Call> Calls() const;
  size_t CountCalls(const std::string& verb) const;
  void ClearCalls();

  // Ends every open watch: OK (as at timeoutSeconds) or with `status` (a dropped connection).
  void CloseWatches();
  void BreakWatches(const absl::Status& status);
  // Forgets the history up to now: watches and continue tokens from older versions fail with
  // 410. With `expire_open_watches`, open watches get an ERROR event (code 410) and end, like a
  // server whose watch cache lost their position; otherwise they go on (etcd compaction does
  // not disturb a watch the cache already serves).
  void Compact(bool expire_open_watches = true);
  // When paused, open watches receive nothing; changes stay in the history (unless compacted).
  void SetWatchDeliveryPaused(bool paused);
  // Sends a BOOKMARK at the current resourceVersion to every open watch.
  void SendBookmark();
  // When true, a watch from a compacted version fails at once with kOutOfRange (HTTP 410)
  // instead of delivering an ERROR event (the default, which is what the watch cache does).
  void SetGoneAsHttpError(bool http_error);
  // Whether a 410 for an expired continue token carries a token that continues the list at the
  // current state (metadata.continue), as the API server's does. Default: true.
  void SetContinueOnExpiry(bool offered);

  // Streamed lists (WatchOptions::send_initial_events). Supported by default: the current state
  // as ADDED events, then the BOOKMARK annotated k8s.io/initial-events-end. Unsupported: an
  // ERROR event with code 500, as kube-apiserver sends when its etcd lacks RequestWatchProgress.
  void SetWatchListSupported(bool supported);
  // When held, a streamed list's end BOOKMARK waits for the next SendBookmark() (the API server
  // sends it on its next bookmark tick); changes made meanwhile reach the stream before it.
  void SetInitialEventsEndHeld(bool held);

  // Runs before every LIST of a page after the first (a continue token), without the fake's
  // lock: a test can hold a paged list half-way, change objects meanwhile, or FailNext("LIST").
  void SetBeforeListPage(std::function<void(const ListOptions&)> hook);

  int OpenWatches() const;
  // Blocks until at least `count` watches are open (or `timeout` passes).
  bool WaitForOpenWatches(int count, std::chrono::milliseconds timeout) const;
  std::string CurrentResourceVersion() const;
  // Number of stored objects of one collection (all namespaces when ref has none).
  size_t ObjectCount(const ResourceRef& ref) const;

 private:
  // NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's move does not throw.
  struct StoredEvent {
    int64_t seq = 0;         // position in the history (bookmarks share resourceVersions)
    int64_t rv = 0;          // the event's resourceVersion
    std::string collection;  // CollectionId(); "" for a bookmark sent to every watch
    WatchEvent event;
  };
  struct OpenWatch {
    int id = 0;
    bool end = false;
    absl::Status end_status;
    bool expired = false;
    bool awaiting_initial_events_end = false;  // a streamed list whose end bookmark is held
  };

  static std::string CollectionId(const ResourceRef& ref);
  absl::Status TakeFailure(const std::string& verb) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Record(Call call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EmitLocked(const ResourceRef& ref, WatchEventType type, const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  nlohmann::json* FindLocked(const ResourceRef& ref, const std::string& ns, const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<nlohmann::json> StoreUpdateLocked(const ResourceRef& ref, nlohmann::json updated,
                                                   const nlohmann::json& previous)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NowTimestamp();
  // Watch's parts: which objects a watch sees, the current state as ADDED events, where a watch
  // starts (and what it gets first), the history position after a version, the wait for news,
  // and the new events for one open watch from `cursor` on.
  using WatchMatcher = std::function<bool(const nlohmann::json&)>;
  std::vector<WatchEvent> CurrentStateLocked(const std::string& collection,
                                             const WatchMatcher& matches) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int64_t> WatchStartLocked(const ResourceRef& ref, const WatchOptions& options,
                                           const WatchMatcher& matches,
                                           std::vector<WatchEvent>& initial,
                                           bool& awaiting_initial_events_end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t CursorAfterLocked(int64_t rv) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until the watch has news (events from `cursor` on, its end or expiry) or `stop`;
  // false when stopped without news.
  bool AwaitWatchLocked(int id, int64_t cursor, const std::stop_token& stop)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectEventsLocked(int id, int64_t cursor, const std::string& collection,
                           bool allow_bookmarks, const WatchMatcher& matches,
                           std::vector<WatchEvent>& pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Watches wait on mu_ with absl::Mutex::Await: every change (made under mu_) wakes them.
  mutable absl::Mutex mu_;
  int64_t rv_ ABSL_GUARDED_BY(mu_) = 100;
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t compacted_rv_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
  int next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool gone_as_http_error_ ABSL_GUARDED_BY(mu_) = false;
  bool continue_on_expiry_ ABSL_GUARDED_BY(mu_) = true;
  bool watch_list_supported_ ABSL_GUARDED_BY(mu_) = true;
  bool initial_events_end_held_ ABSL_GUARDED_BY(mu_) = false;
  // collection id -> "ns/name" -> object
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_ ABSL_GUARDED_BY(mu_);
  std::deque<StoredEvent> history_ ABSL_GUARDED_BY(mu_);
  std::map<int, OpenWatch> watches_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<absl::Status>> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::function<void(const ListOptions&)> before_list_page_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::kube::testing
