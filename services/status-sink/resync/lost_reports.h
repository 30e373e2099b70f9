// Which resources' status reports were lost (dropped for want of room) and which of them a
// status resync of lost reports asked for (pure bookkeeping, no I/O; times are passed in), and
// the one chunker that splits status resync lists into requests.
//
//  * Lost: a report dropped as overflow is remembered by resource id (with its cluster), at most
//    `max_lost` of them; beyond, the caller asks for a full status resync instead.
//  * Rounds: TakeRound() moves lost resources, in resource-id order, to "asked" with a deadline
//    and returns them per cluster; RoundBudget() says how many a round may ask for (half the
//    room of the pending set, and no round of crumbs while much more is lost).
//  * Answers: any report of an asked resource ends its wait (AnswerArrived). One whose answer
//    has not come by its deadline is lost again (ExpireAsks), up to `asks` asks, then given up.
//  * A failed publish puts its resources back as lost with the asks they had (Unask).
//
// Not thread-safe: owned by the sink's loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "libs/cloudevents/resync.h"

namespace mmi::status_sink {

// Status resync lists per cluster (MQTT routes a request to the cluster's topic).
using ResyncLists = std::map<std::string, cloudevents::ResourceStatusHashList>;

// One status resync request: a cluster and a chunk of its list.
struct ResyncChunk {
  std::string cluster;
  cloudevents::ResourceStatusHashList list;
};

// `per_cluster` split into chunks of at most `chunk_size` entries (chunk_size > 0), cluster by
// cluster in order, each list's order kept. Empty lists give no chunk.
std::vector<ResyncChunk> ChunkResyncLists(const ResyncLists& per_cluster, std::size_t chunk_size);

struct LostReportsSettings {
  std::size_t max_lost = 1'000'000;                   // resources remembered as lost, at most
  std::chrono::milliseconds answer_timeout{300'000};  // wait for an asked resource's report
  int asks = 3;  // asks without an answer before a resource is given up on
};

class LostReports {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit LostReports(LostReportsSettings settings) : settings_(settings) {}

  // Remembers that the report of `resource_id` from `cluster` was lost; `asks`: status resyncs
  // that already listed it without an answer. False when it cannot be remembered (no id or
  // cluster, or `max_lost` reached): the caller asks for a full status resync instead.
  [[nodiscard]] bool Remember(const std::string& resource_id, const std::string& cluster,
                              int asks = 0);
  // A report of `resource_id` arrived: it no longer waits for an answer.
  void AnswerArrived(const std::string& resource_id);
  // A report of `resource_id` was admitted: nothing is left to recover.
  void Recovered(const std::string& resource_id);

  struct Expired {
    uint64_t asked_again = 0;  // lost again, to be asked for in a later round
    uint64_t given_up = 0;     // asked `asks` times without an answer
    bool full_resync = false;  // some could not be remembered again: ask for everything
  };
  // Asked resources whose deadline is not after `now`.
  Expired ExpireAsks(TimePoint now);

  // How many resources a round may ask for when the pending set (`max_pending` slots) has
  // `room`: half of it (rounded up), or 0 when that is no round worth sending (nothing, or fewer
  // than both what is lost and an eighth of the pending set).
  std::size_t RoundBudget(std::size_t room, std::size_t max_pending) const;
  // Moves up to `budget` lost resources to asked, waiting until now + answer_timeout, and lists
  // them per cluster with the hash `latest_hash` gives (the report the sink holds, if any: the
  // agent answers because its current one differs).
  ResyncLists TakeRound(std::size_t budget, TimePoint now,
                        absl::FunctionRef<std::string(const std::string&)> latest_hash);
  // The request listing `list` was not published: its resources still asked for are lost again
  // with the asks they had. False when some cannot be remembered (see Remember()).
  [[nodiscard]] bool Unask(const cloudevents::ResourceStatusHashList& list);
  // A full status resync asks for everything.
  void Clear();

  // While there is no room, a round counts sheddable writes (a walk over them) at most once per
  // kRoomRecheck: true (and the next recheck is due kRoomRecheck later) when it may now.
  bool MayRecheckRoom(TimePoint now);
  static constexpr std::chrono::seconds kRoomRecheck{1};

  std::size_t lost() const { return lost_.size(); }
  std::size_t asked() const { return asked_.size(); }

 private:
  struct Lost {
    std::string cluster;
    int asks = 0;  // status resyncs that listed it and got no answer
  };
  struct Asked {
    Lost lost;
    TimePoint deadline;
  };

  const LostReportsSettings settings_;
  // Resource id -> lost and not yet asked for again. Ordered, so rounds go through it in a
  // stable order.
  std::map<std::string, Lost> lost_;
  std::unordered_map<std::string, Asked> asked_;
  // (deadline, resource id) in ask order (one timeout, so also deadline order); entries whose
  // resource was answered, or asked again with a later deadline, are skipped when they expire.
  std::deque<std::pair<TimePoint, std::string>> ask_order_;
  TimePoint room_recheck_at_{};
};

}  // namespace mmi::status_sink
