#include "services/status-sink/coalescing/coalescer.h"

#include <algorithm>
#include <compare>
#include <utility>

#include "libs/cloudevents/sequence_id.h"
#include "libs/kube_object/object.h"

namespace mmi::status_sink {
namespace {

cloudevents::SequenceId Split(int64_t value) {
  return cloudevents::SequenceId{value >> 22, (value >> 12) & 0x3ff, value & 0xfff};
}

// Maestro's rule (§6.2): newer when nothing is stored or strictly later. IDs of different agent
// nodes are not comparable; such a report is accepted rather than lost.
bool IsNewer(int64_t candidate, int64_t stored) {
  if (stored == 0) {
    return true;
  }
  auto order = cloudevents::CompareSequenceIds(Split(candidate), Split(stored));
  if (!order.ok()) {
    return true;
  }
  return *order == std::strong_ordering::greater;
}

bool IsVolatileWrite(const std::optional<WriteTask>& task) {
  return task && task->kind == TaskKind::kWrite && task->volatile_only;
}

std::optional<int32_t> Newest(std::optional<int32_t> a, std::optional<int32_t> b) {
  return a && b ? std::max(*a, *b) : (a ? a : b);
}

// Whether `reported` acknowledges a version the store does not have: nullopt never does.
bool AcksNewer(std::optional<int32_t> reported, std::optional<int32_t> saved) {
  return reported && (!saved || *reported > *saved);
}

void MoveAcks(std::vector<Ack>& from, std::vector<Ack>& to) {
  for (auto& ack : from) {
    to.push_back(std::move(ack));
  }
  from.clear();
}

}  // namespace

std::string_view OfferResultName(OfferResult result) {
  switch (result) {
    case OfferResult::kQueued:
      return "queued";
    case OfferResult::kCoalesced:
      return "coalesced";
    case OfferResult::kStale:
      return "stale";
    case OfferResult::kDuplicate:
      return "duplicate";
    case OfferResult::kUnchanged:
      return "unchanged";
    case OfferResult::kOverflow:
      return "overflow";
  }
  return "unknown";
}

Coalescer::Coalescer(CoalescerSettings settings, const Clock& clock)
    : settings_(settings), clock_(clock) {}

void Coalescer::Restore(const store::AppliedStatus& applied) {
  State& st = states_[applied.resource_id];
  st.applied_seq = applied.last_sequence_id;
  st.applied_hash = applied.status_hash;
  st.applied_material = applied.material_hash;
  st.volatile_written_at = applied.volatile_written_at;
  st.written_health = applied.health_status;
  st.latest_seq = applied.last_sequence_id;
  st.latest_hash = applied.status_hash;
  st.applied_acked = applied.acked_version;
}

std::optional<int32_t> Coalescer::AckedOrInFlight(const State& state) {
  return state.in_flight ? Newest(state.applied_acked, state.in_flight_acked) : state.applied_acked;
}

bool Coalescer::VolatileDue(const State& state) const {
  return !state.volatile_written_at ||
         clock_.Now() - *state.volatile_written_at >= settings_.volatile_interval;
}

void Coalescer::Enqueue(const std::string& id, State& state) {
  if (state.in_flight || !state.pending) {
    return;
  }
  if (state.not_before > clock_.MonotonicNow()) {
    if (!state.queued) {
      state.queued = true;
      delayed_.emplace(state.not_before, id);
    }
    return;
  }
  MakeReady(id, state);
}

void Coalescer::MakeReady(const std::string& id, State& state) {
  // A resource may sit in both queues (a volatile-only report replaced by a material one): the
  // first pop takes its pending report, the other entry is skipped when popped.
  if (IsVolatileWrite(state.pending)) {
    if (!state.queued && !state.queued_volatile) {
      state.queued_volatile = true;
      ready_volatile_.push_back(id);
    }
  } else if (!state.queued) {
    state.queued = true;
    // An acknowledgement alone before the first status queues there too: the status that
    // replaces it keeps its place.
    const bool first_write =
        state.applied_hash.empty() && state.applied_material.empty() &&
        (state.pending->kind == TaskKind::kWrite || state.pending->update.ack_only);
    (first_write ? ready_first_ : ready_).push_back(id);
  }
}

bool Coalescer::MakeRoom(Ack& ack, OfferOutcome& out) {
  if (ShedVolatile(out.release)) {
    ++out.shed;
    return true;
  }
  out.result = OfferResult::kOverflow;
  out.release.push_back(std::move(ack));
  return false;
}

bool Coalescer::ShedVolatile(std::vector<Ack>& release) {
  while (!ready_volatile_.empty()) {
    std::string id;
    State* found = PopState(ready_volatile_, id);
    if (found == nullptr) {
      continue;
    }
    State& st = *found;
    st.queued_volatile = false;
    if (!CanShed(st)) {
      continue;  // taken meanwhile, or now carries a material change
    }
    MoveAcks(st.pending->acks, release);
    st.pending.reset();
    --pending_count_;
    return true;
  }
  return false;
}

Coalescer::State* Coalescer::PopState(std::deque<std::string>& queue, std::string& id) {
  id = std::move(queue.front());
  queue.pop_front();
  auto it = states_.find(id);
  return it == states_.end() ? nullptr : &it->second;
}

bool Coalescer::CanShed(const State& state) {
  // A volatile-only write carrying a newer acknowledgement (one retried after TakeReady made it
  // volatile-only) is never shed: its acks wait for the save.
  return !state.in_flight && !state.queued && IsVolatileWrite(state.pending) &&
         !AcksNewer(state.pending->update.acked_version, state.applied_acked);
}

std::size_t Coalescer::Sheddable() const {
  std::size_t n = 0;
  for (const std::string& id : ready_volatile_) {  // each id at most once (queued_volatile)
    auto it = states_.find(id);
    if (it != states_.end() && CanShed(it->second)) {
      ++n;
    }
  }
  return n;
}

void Coalescer::SetPending(const std::string& id, State& state, WriteTask task) {
  if (state.pending) {
    // The superseded report is acknowledged together with the one that replaces it.
    std::vector<Ack> acks = std::move(state.pending->acks);
    MoveAcks(task.acks, acks);
    task.acks = std::move(acks);
  } else {
    ++pending_count_;
  }
  state.pending = std::move(task);
  Enqueue(id, state);
}

Coalescer::OfferOutcome Coalescer::Offer(StatusUpdate update, Ack ack) {
  OfferOutcome out;
  const std::string id = update.resource_id;
  auto it = states_.find(id);
  if (it == states_.end()) {
    if (pending_count_ >= settings_.max_pending && !MakeRoom(ack, out)) {
      return out;
    }
    it = states_.emplace(id, State{}).first;
  }
  State& st = it->second;

  if (update.sequence_id && st.latest_seq != 0 && !IsNewer(*update.sequence_id, st.latest_seq)) {
    out.result = OfferResult::kStale;
    out.release.push_back(std::move(ack));
    return out;
  }
  if (!update.status_hash.empty() && update.status_hash == st.latest_hash) {
    if (update.sequence_id) {
      st.latest_seq = *update.sequence_id;
    }
    out.result = OfferResult::kDuplicate;
    out.release.push_back(std::move(ack));
    return out;
  }
  if (update.ack_only) {
    OfferAcknowledgement(id, st, std::move(update), std::move(ack), out);
    return out;
  }
  if (st.pending) {
    // The acknowledgement of a report this one supersedes is not lost with it.
    update.acked_version = Newest(update.acked_version, st.pending->update.acked_version);
  }
  const bool acks_newer = AcksNewer(update.acked_version, AckedOrInFlight(st));
  std::optional<std::string> material;  // computed once, when needed
  if (!st.pending && pending_count_ >= settings_.max_pending) {
    // Shed another resource's write only for a report that will need a slot itself.
    bool needs_slot = update.deleted || acks_newer;
    if (!needs_slot) {
      material = MaterialHashOf(update, settings_.ignore_resource_health_messages);
      needs_slot = *material != (st.in_flight ? st.in_flight_material : st.applied_material) ||
                   VolatileDue(st);
    }
    if (needs_slot && !MakeRoom(ack, out)) {
      return out;
    }
  }

  if (update.sequence_id) {
    st.latest_seq = *update.sequence_id;
  }
  st.latest_hash = update.status_hash;
  const bool had_pending = st.pending.has_value();

  WriteTask task;
  task.acks.push_back(std::move(ack));
  if (update.deleted) {
    task.kind = TaskKind::kConfirmDeletion;
    task.update = std::move(update);
    SetPending(id, st, std::move(task));
    out.result = had_pending ? OfferResult::kCoalesced : OfferResult::kQueued;
    return out;
  }

  task.material_hash = material ? *std::move(material)
                                : MaterialHashOf(update, settings_.ignore_resource_health_messages);
  task.update = std::move(update);
  const std::string& hub_material = st.in_flight ? st.in_flight_material : st.applied_material;
  if (task.material_hash != hub_material || acks_newer) {
    SetPending(id, st, std::move(task));
    out.result = had_pending ? OfferResult::kCoalesced : OfferResult::kQueued;
    return out;
  }

  out.result = OfferImmaterial(id, st, std::move(task), had_pending, out.release);
  return out;
}

void Coalescer::OfferAcknowledgement(const std::string& id, State& st, StatusUpdate update, Ack ack,
                                     OfferOutcome& out) {
  if (update.sequence_id) {
    st.latest_seq = *update.sequence_id;
  }
  st.latest_hash = update.status_hash;
  const std::optional<int32_t> known =
      st.pending ? Newest(AckedOrInFlight(st), st.pending->update.acked_version)
                 : AckedOrInFlight(st);
  if (!AcksNewer(update.acked_version, known) || st.in_flight_deletion ||
      (st.pending && st.pending->kind == TaskKind::kConfirmDeletion)) {
    out.result = OfferResult::kUnchanged;
    out.release.push_back(std::move(ack));
    return;
  }
  if (st.pending) {
    // The waiting write saves the acknowledgement with its status, and is no longer
    // volatile-only: an acknowledgement is never shed, and acked only once saved.
    WriteTask& pending = *st.pending;
    pending.update.acked_version = update.acked_version;
    pending.acks.push_back(std::move(ack));
    pending.volatile_only = false;
    Enqueue(id, st);
    out.result = OfferResult::kCoalesced;
    return;
  }
  if (pending_count_ >= settings_.max_pending && !MakeRoom(ack, out)) {
    return;
  }
  WriteTask task;
  task.kind = TaskKind::kSaveAcknowledgement;
  task.update = std::move(update);
  task.acks.push_back(std::move(ack));
  SetPending(id, st, std::move(task));
  out.result = OfferResult::kQueued;
}

OfferResult Coalescer::OfferImmaterial(const std::string& id, State& st, WriteTask task,
                                       bool had_pending, std::vector<Ack>& release) {
  // The hub has (or is about to have) these material fields: a pending report with other
  // material is superseded and needs no write any more.
  if (had_pending) {
    MoveAcks(st.pending->acks, release);
    st.pending.reset();
    --pending_count_;
  }
  if (VolatileDue(st)) {
    task.volatile_only = true;
    // Best effort by design: acknowledged now, so a volatile-only write waiting behind material
    // ones never holds back the transport (Kafka commits offsets only up to the oldest unacked
    // event). If it is lost, the next refresh or a status resync brings newer values.
    MoveAcks(task.acks, release);
    SetPending(id, st, std::move(task));
    return had_pending ? OfferResult::kCoalesced : OfferResult::kQueued;
  }
  MoveAcks(task.acks, release);
  if (!st.in_flight) {
    st.applied_seq = st.latest_seq;
    st.applied_hash = st.latest_hash;
  }
  return OfferResult::kUnchanged;
}

Coalescer::Ready Coalescer::TakeReady(std::size_t max) {
  Ready out;
  const auto now = clock_.MonotonicNow();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string id = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    auto it = states_.find(id);
    if (it != states_.end()) {
      it->second.queued = false;
      if (it->second.pending && !it->second.in_flight) {
        MakeReady(id, it->second);
      }
    }
  }
  while ((!ready_first_.empty() || !ready_.empty() || !ready_volatile_.empty()) &&
         out.tasks.size() < max) {
    const bool from_volatile = ready_first_.empty() && ready_.empty();
    std::deque<std::string>& queue = !ready_first_.empty() ? ready_first_
                                     : from_volatile       ? ready_volatile_
                                                           : ready_;
    std::string id;
    State* found = PopState(queue, id);
    if (found == nullptr) {
      continue;
    }
    State& st = *found;
    (from_volatile ? st.queued_volatile : st.queued) = false;
    if (!st.pending || st.in_flight) {
      continue;
    }
    if (st.not_before > now) {
      if (!st.queued) {
        st.queued = true;
        delayed_.emplace(st.not_before, id);
      }
      continue;
    }
    WriteTask task = std::move(*st.pending);
    st.pending.reset();
    --pending_count_;
    if (task.kind == TaskKind::kWrite && task.material_hash == st.applied_material) {
      // A write that landed meanwhile already carries these material fields (or the report
      // brought only an acknowledgement).
      if (VolatileDue(st)) {
        task.volatile_only = true;
      } else if (AcksNewer(task.update.acked_version, st.applied_acked)) {
        task.kind = TaskKind::kSaveAcknowledgement;
      } else {
        MoveAcks(task.acks, out.release);
        ++out.unchanged;
        st.applied_seq = st.latest_seq;
        st.applied_hash = st.latest_hash;
        continue;
      }
    }
    if (task.update.ack_only) {
      task.material_hash = st.applied_material;  // it changes none
    }
    st.in_flight = true;
    st.in_flight_deletion = task.kind == TaskKind::kConfirmDeletion;
    st.in_flight_material = task.material_hash;
    st.in_flight_acked = task.update.acked_version;
    ++in_flight_count_;
    StatusTree(task.update);  // the hub write is made from the tree
    out.tasks.push_back(std::move(task));
  }
  return out;
}

store::AppliedStatus Coalescer::Written(const WriteTask& task) {
  store::AppliedStatus row;
  row.resource_id = task.update.resource_id;
  State* found = EndFlight(task.update.resource_id);
  if (found == nullptr) {
    return row;
  }
  State& st = *found;
  st.not_before = {};
  if (!task.update.ack_only) {  // an acknowledgement alone says nothing of the hub's status
    if (task.update.sequence_id) {
      st.applied_seq = *task.update.sequence_id;
    }
    st.applied_hash = task.update.status_hash;
    st.applied_material = task.material_hash;
  }
  if (task.kind == TaskKind::kWrite) {  // a kSaveAcknowledgement wrote nothing onto the hub
    st.volatile_written_at = clock_.Now();
  }
  st.applied_acked = Newest(st.applied_acked, task.update.acked_version);
  Enqueue(task.update.resource_id, st);

  row.last_sequence_id = st.applied_seq;
  row.status_hash = st.applied_hash;
  row.material_hash = st.applied_material;
  if (task.update.ack_only) {
    row.acknowledgement_only = true;  // the store keeps the sync and health it has
  } else {
    row.sync_status = kube::FindString(kube::ObjectAt(task.update.status, "sync"), "status");
    row.health_status = kube::FindString(kube::ObjectAt(task.update.status, "health"), "status");
    st.written_health = row.health_status;
  }
  row.volatile_written_at = st.volatile_written_at;
  row.acked_version = st.applied_acked;
  return row;
}

Coalescer::State* Coalescer::EndFlight(const std::string& id) {
  auto it = states_.find(id);
  if (it == states_.end()) {
    return nullptr;
  }
  State& st = it->second;
  if (st.in_flight) {
    st.in_flight = false;
    st.in_flight_deletion = false;
    --in_flight_count_;
  }
  return &st;
}

void Coalescer::Dropped(const WriteTask& task) {
  if (State* st = EndFlight(task.update.resource_id)) {
    Enqueue(task.update.resource_id, *st);
  }
}

void Coalescer::Requeue(WriteTask task, std::chrono::milliseconds delay) {
  const std::string id = task.update.resource_id;
  State* found = EndFlight(id);
  if (found == nullptr) {
    return;
  }
  State& st = *found;
  st.not_before = clock_.MonotonicNow() + delay;
  if (st.pending) {
    std::vector<Ack> acks = std::move(task.acks);
    MoveAcks(st.pending->acks, acks);
    st.pending->acks = std::move(acks);
    st.pending->attempts = task.attempts + 1;
    st.pending->update.acked_version =
        Newest(st.pending->update.acked_version, task.update.acked_version);
  } else {
    ++task.attempts;
    st.pending = std::move(task);
    ++pending_count_;
  }
  Enqueue(id, st);
}

std::vector<Ack> Coalescer::Forget(const std::string& resource_id) {
  std::vector<Ack> release;
  auto it = states_.find(resource_id);
  if (it == states_.end()) {
    return release;
  }
  if (it->second.pending) {
    --pending_count_;
    MoveAcks(it->second.pending->acks, release);
  }
  if (it->second.in_flight) {
    --in_flight_count_;
  }
  states_.erase(it);
  return release;
}

std::optional<std::string> Coalescer::WrittenHealth(const std::string& resource_id) const {
  auto it = states_.find(resource_id);
  return it == states_.end() ? std::nullopt : it->second.written_health;
}

void Coalescer::HealthWritten(const std::string& resource_id, std::string health) {
  auto it = states_.find(resource_id);
  if (it != states_.end()) {
    it->second.written_health = std::move(health);
  }
}

std::string Coalescer::LatestHash(const std::string& resource_id) const {
  auto it = states_.find(resource_id);
  return it == states_.end() ? std::string() : it->second.latest_hash;
}

void Coalescer::ForgetHash(const std::string& resource_id) {
  auto it = states_.find(resource_id);
  if (it != states_.end()) {
    it->second.latest_hash.clear();
  }
}

std::optional<std::chrono::steady_clock::time_point> Coalescer::NextRetry() const {
  if (delayed_.empty()) {
    return std::nullopt;
  }
  return delayed_.begin()->first;
}

}  // namespace mmi::status_sink
