// Per-resource coalescing of status reports (pure logic, no I/O): decides which reports become a
// hub write, which are dropped, and in what order writes are handed out.
//
//  * Latest wins: a resource has at most one pending report; a newer one replaces it (its acks
//    move along, so nothing is acknowledged before the report that superseded it is durable).
//  * Order: reports whose `sequenceid` is not newer than the last accepted one are dropped
//    (maestro-protocol.md §6.2); IDs from different agent nodes are not comparable and accepted.
//  * Dedupe: a report whose `statushash` equals the last accepted one is dropped.
//  * Material-change test: a write happens only when the material fields differ from what the
//    hub has (or will have once the write in flight lands). Material = the whole `.status`
//    except reconciledAt, observedAt, controllerNamespace (hub-apis.md §1.4) and, optionally,
//    resources[].health.message. operationState.finishedAt is material: it only changes when an
//    operation ends, together with its phase.
//  * Volatile fields (reconciledAt, observedAt) alone cause a write at most once per
//    `volatile_interval` per resource; in between such reports are dropped (the next report
//    after the interval carries fresh values). A volatile-only report is acknowledged when it
//    is admitted, not when written: it is best effort and must not hold back the transport.
//  * Material first: writes that change material fields (and deletion hand-offs) are handed out
//    before volatile-only writes, so Argo CD's refresh churn (a reconciledAt per Application
//    every 2-3 minutes) never delays a sync or health change behind it when the hub rate limit
//    is the bottleneck.
//  * First statuses first: among material writes, a resource's first write (nothing written
//    onto its hub Application yet, nothing restored from the store) goes before updates of
//    resources the hub already shows, so that during a cold start larger than the hub's write
//    rate every Application gets a status before any gets a second one.
//  * Bounded: at most `max_pending` resources wait. When full, a new report sheds the oldest
//    waiting volatile-only write (best effort by design: the next refresh brings newer values);
//    only when none is left does Offer() answer kOverflow, and the caller drops the report and
//    asks for a status resync later.
//  * At most one write per resource is in flight; failed writes come back with a delay.
//  * Acknowledgement (docs/reliability.md finding 6): a report whose `acked_version` (the
//    dispatch version the agent applied) is newer than the one saved, or about to be, needs a
//    task even when its `.status` is what the hub shows - a republish changes only the
//    annotation. It counts as material for the queues (never volatile-only, never shed, acked
//    once saved), and when it is taken while the hub already has its material fields and no
//    volatile write is due, it becomes a kSaveAcknowledgement task: the row is saved with no hub
//    PATCH. That is cheaper than a PATCH of unchanged content: every dispatch is acknowledged,
//    often by a report whose status has not moved yet, and hub writes are the sink's bottleneck
//    while store saves are batched. An older or equal version changes nothing; the saved one
//    only grows (a superseded or retried report's version carries over to the one replacing it).
//    A report that carries only an acknowledgement (StatusUpdate::ack_only: a spoke Application
//    no Argo CD reported on) never replaces a waiting report: it joins it, or becomes a
//    kSaveAcknowledgement alone, which leaves the row's status fields as they are.
//
// Not thread-safe: owned by the sink's loop thread. The clock is borrowed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "libs/common/clock.h"
#include "libs/store/status_store.h"
#include "services/status-sink/decoding/status_update.h"

namespace mmi::status_sink {

struct CoalescerSettings {
  // Resources with a report waiting to be written, at most.
  std::size_t max_pending = 50'000;
  // reconciledAt/observedAt-only changes are written at most this often per Application.
  std::chrono::milliseconds volatile_interval{300'000};
  // Treat resources[].health.message as volatile too (it can change often during a rollout).
  bool ignore_resource_health_messages = false;
};

// The ack of a report's event: called once its effect is durable or it was dropped (the
// transport's AckFn, transport/subscriber.h, without the transport).
using Ack = absl::AnyInvocable<void() &&>;

enum class OfferResult {
  kQueued,     // a write (or deletion hand-off) is now pending
  kCoalesced,  // replaced a pending report
  kStale,      // older than (or as old as) the last accepted sequence id: dropped
  kDuplicate,  // same statushash as the last accepted report: dropped
  kUnchanged,  // nothing material changed and volatile fields are throttled: dropped
  kOverflow,   // too many pending resources: dropped, ask for a resync
};
std::string_view OfferResultName(OfferResult result);

// kSaveAcknowledgement: the hub has the status already, only the row (its acked_version) is new.
enum class TaskKind { kWrite, kConfirmDeletion, kSaveAcknowledgement };

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json moves do not throw.
struct WriteTask {
  TaskKind kind = TaskKind::kWrite;
  StatusUpdate update;
  std::string material_hash;
  bool volatile_only = false;  // only reconciledAt/observedAt differ from the hub
  int attempts = 0;            // failed attempts so far
  std::vector<Ack> acks;
};

class Coalescer {
 public:
  Coalescer(CoalescerSettings settings, const Clock& clock);

  // Seeds what the hub already has (start-up resume from the store).
  void Restore(const store::AppliedStatus& applied);

  struct OfferOutcome {
    OfferResult result = OfferResult::kQueued;
    // Acks whose reports need nothing more (dropped or superseded without a write): call them.
    std::vector<Ack> release;
    // Volatile-only writes of other resources shed to make room for this report.
    int shed = 0;
  };
  OfferOutcome Offer(StatusUpdate update, Ack ack);

  struct Ready {
    std::vector<WriteTask> tasks;
    std::vector<Ack> release;  // reports that turned out to need no write
    int unchanged = 0;         // how many pending reports were dropped that way
  };
  // Up to `max` tasks whose resources have no write in flight and whose retry delay passed,
  // each with its status tree built (StatusTree); they count as in flight until Written /
  // Dropped / Requeue.
  Ready TakeReady(std::size_t max);

  // The write landed, or a kSaveAcknowledgement task is to be saved: returns the row to persist
  // (appset fields left empty) - the task's acks stay with the caller.
  store::AppliedStatus Written(const WriteTask& task);
  // The task is abandoned (hub app gone, invalid): no state change besides ending the flight.
  void Dropped(const WriteTask& task);
  // The task failed transiently: retried after `delay` unless a newer report replaced it
  // meanwhile (then the task's acks join the newer report).
  void Requeue(WriteTask task, std::chrono::milliseconds delay);
  // Forgets a resource (deletion confirmed); returns the acks of a report still pending for it.
  std::vector<Ack> Forget(const std::string& resource_id);

  // `.status.health.status` the sink last wrote onto the resource's hub Application (restored,
  // or from the last write that landed); nullopt when unknown or written without health. Used
  // to decide on a Progressing write before a Healthy one.
  std::optional<std::string> WrittenHealth(const std::string& resource_id) const;
  // A write that is not the task's own (the Progressing step before a Healthy status) landed
  // while the task did not complete: the hub now shows `health`.
  void HealthWritten(const std::string& resource_id, std::string health);

  // The last accepted statushash of a resource ("" when unknown): what a status resync request
  // should echo.
  std::string LatestHash(const std::string& resource_id) const;
  // Forgets the last accepted statushash of a resource, so that the agent's next report of it is
  // no duplicate even when its own status did not change: manifest delivery builds the status
  // from the dispatcher's record too, which changed (a new revision or render error).
  void ForgetHash(const std::string& resource_id);
  bool Knows(const std::string& resource_id) const { return states_.count(resource_id) > 0; }

  std::size_t pending() const { return pending_count_; }
  // Waiting volatile-only writes a new report could shed now (O(waiting volatile-only writes)):
  // with the free slots, the room a report needing a slot finds.
  std::size_t Sheddable() const;
  std::size_t in_flight() const { return in_flight_count_; }
  std::size_t known() const { return states_.size(); }
  // The earliest retry time of a delayed report (to time a wake-up), if any.
  std::optional<std::chrono::steady_clock::time_point> NextRetry() const;

 private:
  struct State {
    // What the hub has after the last successful write (persisted in resource_status).
    int64_t applied_seq = 0;
    std::string applied_hash;
    std::string applied_material;
    std::optional<std::chrono::system_clock::time_point> volatile_written_at;
    std::optional<std::string> written_health;  // the hub's health.status, as last written
    std::optional<int32_t> applied_acked;       // the acked_version saved (or restored)
    // The last accepted report (ordering and dedupe).
    int64_t latest_seq = 0;
    std::string latest_hash;
    std::optional<WriteTask> pending;
    std::chrono::steady_clock::time_point not_before{};
    bool queued = false;           // present in ready_first_, ready_ or delayed_
    bool queued_volatile = false;  // present in ready_volatile_
    bool in_flight = false;
    bool in_flight_deletion = false;  // the task in flight is a kConfirmDeletion
    std::string in_flight_material;
    std::optional<int32_t> in_flight_acked;
  };

  bool VolatileDue(const State& state) const;
  // The acknowledged version the store has, or will have once the task in flight is saved.
  static std::optional<int32_t> AckedOrInFlight(const State& state);
  void SetPending(const std::string& id, State& state, WriteTask task);
  // Offer() of an acknowledgement alone (StatusUpdate::ack_only): nothing when the version is
  // saved, in flight or waiting already; else it joins the waiting write, or becomes a
  // kSaveAcknowledgement of its own.
  void OfferAcknowledgement(const std::string& id, State& st, StatusUpdate update, Ack ack,
                            OfferOutcome& out);
  // Offer() of a report whose material fields the hub has (or is about to have): a pending
  // report of it is superseded (its acks go to `release`); a volatile-only write when due,
  // else nothing (kUnchanged).
  OfferResult OfferImmaterial(const std::string& id, State& st, WriteTask task, bool had_pending,
                              std::vector<Ack>& release);
  void Enqueue(const std::string& id, State& state);
  // Puts a resource whose delay passed into the queue its pending report belongs to.
  void MakeReady(const std::string& id, State& state);
  // A waiting report ShedVolatile may drop: volatile-only, not in flight, not delayed or queued
  // as material.
  static bool CanShed(const State& state);
  // Takes the id at the front of `queue` into `id`; its state, or nullptr when it is gone.
  State* PopState(std::deque<std::string>& queue, std::string& id);
  // The state of `id` with its write no longer in flight; nullptr when it is gone.
  State* EndFlight(const std::string& id);
  // A slot for a report when the queue is full: sheds a volatile-only write (counted in `out`),
  // or answers kOverflow with `ack` released and returns false.
  bool MakeRoom(Ack& ack, OfferOutcome& out);
  // Drops the oldest waiting volatile-only write to make room; false when there is none.
  bool ShedVolatile(std::vector<Ack>& release);

  const CoalescerSettings settings_;
  const Clock& clock_;
  std::unordered_map<std::string, State> states_;
  std::deque<std::string> ready_first_;     // material first writes, served before ready_
  std::deque<std::string> ready_;           // other material writes and deletion hand-offs
  std::deque<std::string> ready_volatile_;  // volatile-only writes, served when ready_ is empty
  std::multimap<std::chrono::steady_clock::time_point, std::string> delayed_;
  std::size_t pending_count_ = 0;
  std::size_t in_flight_count_ = 0;
};

}  // namespace mmi::status_sink
