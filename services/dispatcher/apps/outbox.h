// Outbox: publishes events that are already recorded in PostgreSQL (DispatchStore::Record), so a
// change taken from the hub is never lost before the broker accepted it
// (record-then-publish). Per resource, events go out strictly in recording order, one at a time;
// across resources up to `max_in_flight` publishes run at once. A failed publish stays in the
// outbox and is retried with exponential backoff (its attempt is counted in the store); an event
// that can never be sent (kInvalidArgument) is counted, logged and dropped. Accepted events are
// removed from the store in batches (MarkPublished).
//
// What it holds is bounded by its user (the reconciler takes no new keys past
// ReconcilerSettings::max_outbox events ready_or_in_flight(), see NotifyWhenDrainedTo()): only
// the events that leave by themselves once the broker takes them count, never those sleeping in
// retry backoff, which may fail for good (an unregistered cluster) and must not hold back the rest.
//
// Threading: every method except pending(), ready_or_in_flight() and WaitDrained() runs on the
// reconcile loop. Store calls run on the worker pool; Publisher callbacks only post back to the
// loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "libs/transport/publisher.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/recent_acceptances.h"

namespace mmi::dispatcher {

struct OutboxSettings {
  // Publishes awaiting their broker acknowledgement at most (across resources), and never more
  // than the publisher's max_in_flight() (the broker's Receive Maximum: mosquitto says 20).
  // Above that, Paho C held publishes back up to a second each: 256 against mosquitto dispatched
  // 726-741/s where 20 or 64 gave 2,400-4,300/s (bench/dispatch, 2026-11-27).
  size_t max_in_flight = 256;
  // Delay before re-publishing a failed event (grows per attempt of that event).
  BackoffSettings retry{.initial = std::chrono::milliseconds(500),
                        .max = std::chrono::milliseconds(60'000),
                        .multiplier = 2.0,
                        .jitter = 0.2};
  // Published seqs removed from the store per MarkPublished call at most.
  size_t mark_batch = 500;
  // How long published seqs wait for others to join them before a MarkPublished call (a full
  // batch goes at once). Each call is one PostgreSQL statement and commit: with 0, a cold
  // dispatch made ~14,000 calls of ~7 seqs per 100,000 Applications; with 20 ms ~500, and
  // PostgreSQL spent ~25 % less CPU (bench/dispatch). Seqs not yet marked when the process
  // dies are published again at its restart (receivers are idempotent). The dispatcher's
  // default is 20 ms (services/dispatcher/settings.h).
  std::chrono::milliseconds mark_linger{0};
  // While the transport reports itself disconnected nothing is published; re-checked this often.
  std::chrono::milliseconds reconnect_poll{200};
  // Accepted events remembered for TakeRecentlyAccepted(): those within `recent_window` of the
  // newest acceptance, at most `recent_capacity` (0: none).
  std::chrono::milliseconds recent_window{10'000};
  size_t recent_capacity = 50'000;
};

// An event recorded in the store (seq assigned) and, when this process built it, the event
// itself: it is then published as it is, without decoding its stored text.
struct RecordedEvent {
  store::OutboxEntry entry;
  std::optional<cloudevents::Event> event;
};

class Outbox {
 public:
  // Runs on the loop after the broker accepted an event (not for dropped events); `entry.event`
  // is empty by then (the hook needs what the event was about, not its text).
  using PublishedHook = std::function<void(const store::OutboxEntry& entry)>;

  // Everything borrowed; must outlive the outbox (stop the publisher and the executors first).
  Outbox(Loop& loop, WorkerPool& workers, store::DispatchStore& store,
         transport::Publisher& publisher, const Clock& clock, DispatcherMetrics& metrics,
         OutboxSettings settings);
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Before the first Add().
  void SetPublishedHook(PublishedHook hook);

  // Loop thread. Entries already recorded in the store (seq assigned), ascending seq. Entries
  // already known (same seq) are ignored.
  void Add(std::vector<RecordedEvent> recorded);
  // The same for entries read back from the store (each is decoded when it is published).
  void Add(std::vector<store::OutboxEntry> entries);

  // Loop thread: the resources whose events the broker accepted lately, by cluster (see
  // recent_acceptances.h); forgets them.
  std::map<std::string, std::vector<std::string>> TakeRecentlyAccepted() { return recent_.Take(); }

  // Any thread: events recorded but not yet accepted by the broker (and accepted ones whose
  // removal from the store is still pending).
  size_t pending() const;
  // Any thread: events waiting to be published now (also while the transport is disconnected)
  // or in flight, with the later events of their resources: those that leave by themselves as
  // the broker takes them. Not the events of a resource whose head sleeps in retry backoff, nor
  // accepted events whose removal from the store is pending.
  size_t ready_or_in_flight() const;
  // Loop thread: posts `drained` to the loop once ready_or_in_flight() <= `low_water` (at once
  // if it already is), then forgets it. One at a time: a second call replaces the first.
  void NotifyWhenDrainedTo(size_t low_water, std::function<void()> drained);
  // Any thread but the loop: waits until pending() == 0 or `timeout`. True when drained.
  bool WaitDrained(std::chrono::milliseconds timeout);

 private:
  struct Item {
    store::OutboxEntry entry;
    // The event in one form only: `event`, or until its first publish `entry.event` (its text
    // as read back from the store), so a cold start's outbox holds each event once.
    std::optional<cloudevents::Event> event;
    std::chrono::steady_clock::time_point added_at;
    int attempts = 0;
  };

  void Pump();
  void PublishOne(int64_t seq);
  void OnResult(int64_t seq, const absl::Status& status,
                std::chrono::steady_clock::time_point started);
  // Create refused as existing / update as unknown: queued again with the other verb. False
  // when that does not apply.
  bool ResendWithOtherVerb(int64_t seq, Item& item, const absl::Status& status);
  // Removes `seq` (head of its resource) and readies the resource's next event.
  void Finish(int64_t seq);
  // Sends the published seqs to the store now, or once mark_linger passed.
  void FlushMarks();
  void SendMarks();
  // Recomputes pending() and ready_or_in_flight() (and fires the drained hook) after any change.
  void UpdateOutstanding();
  // The head of `resource_id` sleeps in retry backoff (Hold) or is ready again (Release).
  void Hold(const std::string& resource_id);
  void Release(const std::string& resource_id);
  std::chrono::milliseconds RetryDelay(int attempts);

  Loop& loop_;
  WorkerPool& workers_;
  store::DispatchStore& store_;
  transport::Publisher& publisher_;
  const Clock& clock_;
  DispatcherMetrics& metrics_;
  const OutboxSettings settings_;
  PublishedHook hook_;

  // Loop-owned.
  // Publish failures are logged at most once per kFailureLogInterval (a broker that refuses our
  // credentials fails every event on every retry); the rest are counted into the next line.
  std::optional<std::chrono::steady_clock::time_point> failure_logged_at_;
  int64_t failures_not_logged_ = 0;
  std::map<int64_t, Item> items_;
  absl::flat_hash_map<std::string, std::deque<int64_t>> by_resource_;
  std::deque<int64_t> ready_;
  size_t in_flight_ = 0;
  bool pump_scheduled_ = false;
  std::vector<int64_t> marks_;
  size_t marks_in_flight_ = 0;
  bool mark_timer_ = false;  // a SendMarks() is scheduled after mark_linger
  std::mt19937_64 rng_{0x5eed};
  RecentAcceptances recent_;
  // Resources whose head sleeps in retry backoff, and how many items they hold (their whole
  // queues): excluded from ready_or_in_flight().
  absl::flat_hash_set<std::string> backing_off_;
  size_t held_ = 0;
  std::function<void()> drained_hook_;
  size_t drained_low_water_ = 0;

  mutable absl::Mutex drain_mu_;
  size_t outstanding_ ABSL_GUARDED_BY(drain_mu_) = 0;
  size_t ready_or_in_flight_ ABSL_GUARDED_BY(drain_mu_) = 0;
};

}  // namespace mmi::dispatcher
