#include "services/dispatcher/apps/ack_check.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {

AckCheck::AckCheck(Deps deps, AckCheckSettings settings)
    : deps_(std::move(deps)), settings_(settings), stall_budget_(settings.max_while_stalled) {}

AckCheck::~AckCheck() { *alive_ = false; }

void AckCheck::Start() {
  if (running_) {
    return;
  }
  running_ = true;
  Schedule();
}

void AckCheck::Stop() { running_ = false; }

void AckCheck::Schedule() {
  deps_.loop.PostAfter(settings_.interval, [this, alive = alive_] {
    if (*alive && running_) {
      CheckNow();
    }
  });
}

void AckCheck::CheckNow() {
  if (in_flight_) {
    return;
  }
  in_flight_ = true;
  const store::AckWindow window{
      .grace = settings_.grace, .timeout = settings_.timeout, .limit = settings_.max_per_check};
  deps_.workers.Post([this, window, alive = alive_] {
    auto found = deps_.store.UnacknowledgedResources(window);
    std::optional<absl::StatusOr<std::vector<store::AcknowledgedHandover>>> handovers;
    if (deps_.handover_acked) {
      handovers = deps_.store.AcknowledgedHandovers(window.limit);
    }
    deps_.loop.Post([this, alive, found = std::move(found), handovers = std::move(handovers)] {
      if (!*alive) {
        return;
      }
      if (handovers.has_value()) {
        OnHandovers(*handovers);
      }
      OnAnswer(found);
    });
  });
}

bool AckCheck::Progressed(const store::AckSnapshot& now) const {
  // Only growth counts: fewer acknowledged (deletions, new changes) proves nothing either way.
  return !last_.has_value() || now.acked_frontier > last_->frontier ||
         now.acknowledged > last_->acknowledged;
}

void AckCheck::OnAnswer(const absl::StatusOr<store::AckSnapshot>& found) {
  in_flight_ = false;
  if (running_) {
    Schedule();
  }
  if (!found.ok()) {
    // Counted by the store's call metrics (operation "unacknowledged_resources").
    if (failures_++ == 0) {
      internal::ReconcilerLog().Warn(
          "cannot look up unacknowledged resources; trying again next interval",
          {{"error", std::string(found.status().message())}});
    }
    return;
  }
  if (failures_ > 0) {
    internal::ReconcilerLog().Info("unacknowledged resources can be looked up again",
                                   {{"failed_lookups", failures_}});
    failures_ = 0;
  }
  const bool progressed = Progressed(*found);
  last_ = Progress{.frontier = found->acked_frontier, .acknowledged = found->acknowledged};
  if (progressed) {
    stall_budget_ = settings_.max_while_stalled;
  }
  int republished = 0;
  int64_t waiting = 0;
  const int stall_budget_before = stall_budget_;
  for (const store::UnacknowledgedResource& r : found->resources) {
    std::string_view reason;
    if (r.overtaken) {
      reason = "overtaken";
    } else if (found->acked_frontier.has_value() &&
               *found->acked_frontier >= r.published_at + settings_.timeout) {
      reason = "passed";
    } else if (!progressed && stall_budget_ > 0) {
      reason = "stalled";
    } else {
      ++waiting;  // acknowledgements still arrive (or the stall's budget is spent)
      continue;
    }
    if (!deps_.republish(r)) {
      continue;  // changed since, on its way, or backing off
    }
    ++republished;
    deps_.metrics.AckRepublish(reason);
    if (reason == "stalled") {
      --stall_budget_;
    }
  }
  deps_.metrics.ack_waiting().Set(static_cast<double>(waiting));
  if (republished > 0) {
    // One line per look-up, whatever the count: it cannot flood.
    internal::ReconcilerLog().Warn(
        "agents that report have not acknowledged these resources; publishing them again",
        {{"listed", static_cast<int64_t>(found->resources.size())},
         {"republished", republished},
         {"stalled", stall_budget_before - stall_budget_},
         {"first", found->resources.front().resource_id}});
  }
  if (stall_budget_before > 0 && stall_budget_ == 0) {
    internal::ReconcilerLog().Warn(
        "no acknowledgement arrives; republished as many as a stall may, waiting for one",
        {{"max_while_stalled", settings_.max_while_stalled}});
  }
  if ((waiting > 0) != waiting_) {
    waiting_ = waiting > 0;
    // Once per backlog: while acknowledgements arrive, what is only late is not sent again.
    internal::ReconcilerLog().Info(
        waiting_ ? "acknowledgements arrive behind the reports; unacknowledged resources wait"
                 : "no unacknowledged resource waits for a source that is behind any more",
        {{"waiting", waiting}});
  }
}

void AckCheck::OnHandovers(const absl::StatusOr<std::vector<store::AcknowledgedHandover>>& acked) {
  if (!acked.ok()) {
    // Counted by the store's call metrics (operation "acknowledged_handovers"); logged with the
    // other look-up's failure, which shares the connection.
    return;
  }
  for (const store::AcknowledgedHandover& h : *acked) {
    deps_.handover_acked(h);
  }
}

}  // namespace mmi::dispatcher
