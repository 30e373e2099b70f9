// Informer: a watch-backed, in-memory cache of one resource collection (reflector + store +
// handlers), the way client-go's shared informer works:
//
//   streamed list: WATCH sendInitialEvents=true from a      -> collect the initial ADDED events
//        consistent read (KEP-3157), until the BOOKMARK        (and changes among them), then
//        annotated k8s.io/initial-events-end                   replace the cache, OnAdd each,
//                                                              OnSynced once; the same stream
//                                                              goes on as the watch below
//   or, when the server cannot stream lists: paged LIST     -> the same replace
//        (resourceVersion unset: a consistent snapshot);
//        the WATCH starts from the first page's
//        resourceVersion while the other pages are read
//   WATCH with allowWatchBookmarks, timeoutSeconds random   -> apply ADDED/MODIFIED/DELETED,
//        in [min, max]                                        remember the newest version
//   stream ended / connection lost / stall                  -> back off (jittered), resume
//                                                              from the newest version
//   410 Gone (HTTP or ERROR event)                          -> list again and diff against the
//                                                              cache: OnAdd for new, OnUpdate
//                                                              for changed, OnDelete for
//                                                              vanished objects (that order)
//
// The gap between a list and its watch: a paged LIST of a large collection on a busy API server
// can outlast the watch cache's history, so a watch started after it from the list's
// resourceVersion gets 410 and the informer lists again, possibly forever (measured with 300,000
// Applications: 448-494 s LISTs, then 410). So the watch never waits for a list:
//  * streamed list: the watch continues on the same stream;
//  * paged LIST: the watch starts from the first page's resourceVersion (all pages are that
//    snapshot) while a list worker thread reads the other pages;
//  * either way the cache is replaced on the list worker while the watch goes on reading, so the
//    API server never sees a slow watcher (it ends those) however long the replace and its
//    handlers take.
// Never blind while listing: while a paged list's pages are read (minutes for 300,000 objects)
// the watch applies its events to the cache and hands them to the handlers at once (OnAdd with
// in_initial_list false, OnUpdate, OnDelete, before OnSynced on the first list); the replace
// then keeps the cache's state of every key the watch touched (newer than the list's snapshot,
// listed or not). Only while the complete list replaces the cache (seconds; for a streamed list,
// also after it) are the watch's events buffered, the newest per object (a delete followed by a
// re-create stays two events), and applied after the replace; the newest per object is never
// older than what the list holds, so this is correct whatever the list's own resourceVersion.
// The first list can be handed out page by page (`deliver_first_list_pages`): each listed object
// the watch has not touched yet is cached and handed to OnAdd (in_initial_list true) as its page
// arrives, so a cold start's handlers work while the rest is read (minutes for 300,000 objects on
// a busy API server) instead of after it; only what rests on absence (OnDelete of an object that
// is gone, OnSynced) waits for the complete list, whose replace then finds those objects cached.
// A streamed list delivers the changes made during it only after its last initial event: a
// collection whose changes must not wait for a long list is better listed in pages
// (`watch_list` false).
// A streamed list that fails before its end bookmark falls back to one paged LIST (as client-go
// does); a server that says it cannot stream (feature gate off: 422; etcd without
// RequestWatchProgress: 500) gets paged LISTs from then on.
//
// Memory: a `transform` runs on every object before it is stored (and before handlers see it);
// drop what you do not need (DropFields({"/status", "/metadata/managedFields"})) to keep 300,000
// Applications affordable. Stored objects are immutable and shared with readers. A relist keeps
// the cached entry of every object listed at its cached version (nothing of it is transformed or
// copied) and diffs the cache in place, so the cache never exists twice.
//
// Threads: a reflector thread per informer, plus a list worker while a list is completed and
// applied. Handlers run on one of them, one call at a time and in order per object, and should only
// enqueue (a slow handler outside a list stalls the watch; a handler must not call Stop()).
// Get/List/Size are thread-safe and may be called from handlers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/sleeper.h"
#include "libs/kube/informer_settings.h"
#include "libs/kube/internal/informer_store.h"
#include "libs/kube/internal/informer_watch.h"
#include "libs/kube/internal/list_buffer.h"
#include "libs/kube/kube_client.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
}  // namespace prometheus

namespace mmi::kube {

// Receives cache changes on the informer's threads, one call at a time. Only enqueue work here.
class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  // `in_initial_list`: part of the first list (before OnSynced; with deliver_first_list_pages
  // while its pages are read).
  virtual void OnAdd(const ObjectPtr& object, bool in_initial_list) = 0;
  virtual void OnUpdate(const ObjectPtr& old_object, const ObjectPtr& new_object) = 0;
  // The object's final state from the DELETED event or, when a relist found it gone, its last
  // cached state.
  virtual void OnDelete(const ObjectPtr& last_state) = 0;
  // Once, after the first list has been stored and every OnAdd of it delivered.
  virtual void OnSynced() {}
};

class Informer {
 public:
  // `client`, `clock` and `registry` (nullable: no metrics) must outlive the informer. Metrics:
  //   mmi_kube_watch_restarts_total{resource,reason}  reason: closed|expired|error|stalled
  //   mmi_kube_relists_total{resource}
  //   mmi_kube_watch_list_fallbacks_total{resource}  streamed lists replaced by a paged LIST
  //   mmi_kube_list_inconsistent_continues_total{resource}  expired continue tokens continued
  //   mmi_kube_cache_objects{resource}
  Informer(KubeClient& client, const Clock& clock, InformerSettings settings,
           prometheus::Registry* registry);
  ~Informer();  // Stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Registers a handler (borrowed; must outlive Stop()). Only before Start().
  void AddHandler(InformerHandler& handler);
  // Starts the reflector thread. Call once.
  void Start();
  // Ends the watch promptly and joins the thread. Idempotent. Not from a handler.
  void Stop();

  bool HasSynced() const;
  // Blocks until synced or `timeout`; returns HasSynced().
  bool WaitForSynced(std::chrono::milliseconds timeout) const;

  // nullptr when absent. `ns` "" for cluster-scoped objects.
  ObjectPtr Get(std::string_view ns, std::string_view name) const;
  // Every cached object, or those of one namespace (a scan: O(cache size); with
  // compact_storage every returned object is decoded).
  std::vector<ObjectPtr> List(std::string_view ns = "") const;
  // The keys ("<namespace>/<name>", or the name) of those objects; nothing is copied or
  // decoded, so this is the way to visit a large cache (look each key up with Get later).
  std::vector<std::string> Keys(std::string_view ns = "") const;
  // The resourceVersion of a cached object ("" when absent), without decoding it.
  std::string ResourceVersionOf(std::string_view ns, std::string_view name) const;
  size_t Size() const;
  // The newest resourceVersion the cache reflects.
  std::string ResourceVersion() const;
  InformerStats Stats() const;
  // A list is being completed or applied.
  bool Listing() const;
  const InformerSettings& Settings() const { return settings_; }

 private:
  struct Metrics;
  using WatchOutcome = internal::WatchOutcome;

  // The reflector thread: lists (streamed or paged) and watches until stopped.
  void Run(const std::stop_token& stop);
  // After a watch: counts and logs how it ended, backs off or plans a relist.
  void AfterWatch(const WatchOutcome& outcome, internal::ListPlan& plan, Backoff& backoff,
                  const std::stop_token& stop);
  // A streamed list ended before its initial events were complete: plan a paged LIST.
  void AfterStreamedListFailed(const WatchOutcome& outcome, internal::ListPlan& plan);
  // Starts a paged LIST on the list worker; returns once its first page is in (the watch may
  // start from it) or the list failed.
  absl::Status StartPagedList(const std::stop_token& stop);
  // Replaces the cache with a complete streamed list on the list worker.
  void StartReplace(internal::ListedEntries listed, std::string resource_version,
                    std::chrono::steady_clock::time_point started);
  // On the list worker, after the replace: applies the buffered events, then lets the watch
  // apply its events itself.
  void DrainBuffered(const std::stop_token& stop);
  // The list worker's failure (joined and reset), or OK.
  absl::Status TakeListFailure();
  // Ends the list worker (if any) without waiting for its list, and forgets what was buffered.
  void AbandonList();
  // Reconciles the cache with a complete list (paged or streamed) and notifies handlers;
  // `touched` keys were changed by the watch while the pages were read (their state stays).
  // `newest_listed_version` > 0: a paged list that continued at a newer state held versions up
  // to this; older watch events are dropped until the watch is past it.
  void Replace(internal::ListedEntries listed, const std::string& resource_version,
               std::chrono::steady_clock::time_point started, bool streamed,
               const internal::InformerStore::TouchedKeys& touched = {},
               int64_t newest_listed_version = 0);
  // One watch, or (stream_list) a streamed list that goes on as a watch; returns how it ended.
  WatchOutcome WatchOnce(const std::stop_token& stop, bool stream_list);
  // A streamed list's event before its end bookmark; false to end the stream (ERROR events).
  bool CollectInitial(WatchEvent&& event, internal::InitialEvents& initial,
                      std::chrono::steady_clock::time_point started, WatchOutcome& outcome);
  // Applies one event (or buffers it while a list is applied); false to end the watch (ERROR).
  bool Apply(WatchEvent&& event, bool& expired, absl::Status& error);
  // On the list worker, a first list's object not cached at its version (`object` prepared,
  // `entry` made from it): cached and handed to OnAdd unless the watch touched its key or it is
  // cached already. Returns what the list keeps for the replace: a same_as_cached marker when it
  // was cached here, else `entry`.
  internal::Entry DeliverListed(const std::string& key, const ObjectPtr& object,
                                internal::Entry entry);
  // Applies a change to the cache and notifies handlers. For kDeleted `object` is the final
  // state and `entry` is ignored.
  void ApplyChange(WatchEventType type, std::string key, std::string resource_version,
                   const ObjectPtr& object, internal::Entry entry);
  void CountRestart(internal::WatchEnd reason);

  KubeClient& client_;
  const Clock& clock_;
  const InformerSettings settings_;
  std::unique_ptr<Metrics> metrics_;
  // Backoff waits, in real time; Stop() ends them through the reflector's stop token.
  Sleeper& sleeper_;
  std::vector<InformerHandler*> handlers_;  // written before Start() only

  internal::InformerStore store_;
  internal::ListBuffer buffer_{store_};  // the list in progress and the watch's events meanwhile
  std::jthread list_worker_;             // touched by the reflector thread only
  // Held while a change is applied and handed to the handlers (the watch and the list worker
  // both do that while a paged list's pages are read): one handler call at a time.
  absl::Mutex notify_mu_;

  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  std::jthread thread_ ABSL_GUARDED_BY(lifecycle_mu_);
};

}  // namespace mmi::kube
