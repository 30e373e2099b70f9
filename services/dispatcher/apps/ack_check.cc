#include "services/dispatcher/apps/ack_check.h"

#include <optional>
#include <string>
#include <utility>

#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {

AckCheck::AckCheck(Deps deps, AckCheckSettings settings)
    : deps_(std::move(deps)), settings_(settings) {}

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

void AckCheck::OnAnswer(const absl::StatusOr<std::vector<store::UnacknowledgedResource>>& found) {
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
  int republished = 0;
  for (const store::UnacknowledgedResource& r : *found) {
    republished += deps_.republish(r) ? 1 : 0;
  }
  if (republished > 0) {
    // One line per look-up, whatever the count: it cannot flood.
    internal::ReconcilerLog().Warn(
        "agents that report have not acknowledged these resources; publishing them again",
        {{"listed", static_cast<int64_t>(found->size())},
         {"republished", republished},
         {"first", found->front().resource_id}});
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
