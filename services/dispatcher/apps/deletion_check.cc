#include "services/dispatcher/apps/deletion_check.h"

#include <algorithm>
#include <utility>

#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {

DeletionCheck::DeletionCheck(Deps deps, DeletionCheckSettings settings)
    : deps_(std::move(deps)),
      settings_(settings),
      interval_(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(1.0 / std::max(settings.max_requests_per_second, 0.001)))) {
}

void DeletionCheck::Submit(const std::string& resource_id) {
  if (pending_.contains(resource_id)) {
    return;
  }
  if (queue_.size() >= settings_.max_queued) {
    deps_.metrics.DeletionCheck("dropped");  // checked again at its next resend
    return;
  }
  pending_.insert(resource_id);
  queue_.push_back(resource_id);
  deps_.metrics.deletion_checks_queued().Set(static_cast<double>(queue_.size()));
  Pump();
}

void DeletionCheck::Unqueue(const std::string& resource_id) { pending_.erase(resource_id); }

void DeletionCheck::PumpAt(std::chrono::steady_clock::time_point when) {
  if (pump_scheduled_) {
    return;
  }
  pump_scheduled_ = true;
  const auto delay = std::chrono::ceil<std::chrono::milliseconds>(
      std::max(when - deps_.clock.MonotonicNow(), std::chrono::steady_clock::duration::zero()));
  deps_.loop.PostAfter(delay, [this] {
    pump_scheduled_ = false;
    Pump();
  });
}

void DeletionCheck::Pump() {
  while (!queue_.empty() && in_flight_ < settings_.max_in_flight) {
    const auto now = deps_.clock.MonotonicNow();
    if (now < next_start_) {
      PumpAt(next_start_);
      break;
    }
    std::string id = std::move(queue_.front());
    queue_.pop_front();
    if (!deps_.waiting(id)) {
      Unqueue(id);  // confirmed meanwhile (or the Application came back)
      continue;
    }
    next_start_ = std::max(now, next_start_) + interval_;
    ++in_flight_;
    deps_.workers.Post([this, id] {
      absl::StatusOr<bool> exists = deps_.exists(id);
      deps_.loop.Post([this, id, exists = std::move(exists)] { OnAnswer(id, exists); });
    });
  }
  deps_.metrics.deletion_checks_queued().Set(static_cast<double>(queue_.size()));
}

void DeletionCheck::OnAnswer(const std::string& resource_id, const absl::StatusOr<bool>& exists) {
  --in_flight_;
  if (!exists.ok()) {
    deps_.metrics.DeletionCheck("error");
    if (failures_++ == 0) {
      internal::ReconcilerLog().Warn(
          "cannot ask Maestro's REST API whether a deletion is done; pausing the look-ups "
          "(check maestroRest.url, its TLS and token)",
          {{"resource", resource_id},
           {"error", std::string(exists.status().message())},
           {"pause_seconds", std::chrono::duration<double>(settings_.error_pause).count()}});
    } else {
      internal::ReconcilerLog().Debug(
          "Maestro REST look-up failed",
          {{"resource", resource_id}, {"error", std::string(exists.status().message())}});
    }
    // Asked again after the pause (no GET meanwhile); still bounded by max_queued.
    next_start_ = std::max(next_start_, deps_.clock.MonotonicNow() + settings_.error_pause);
    if (deps_.waiting(resource_id)) {
      queue_.push_back(resource_id);
    } else {
      Unqueue(resource_id);
    }
    Pump();
    return;
  }
  if (failures_ > 0) {
    internal::ReconcilerLog().Info("Maestro's REST API answers again",
                                   {{"failed_lookups", failures_}});
    failures_ = 0;
  }
  Unqueue(resource_id);
  if (*exists) {
    deps_.metrics.DeletionCheck("present");
  } else {
    deps_.metrics.DeletionCheck("gone");
    if (deps_.waiting(resource_id)) {
      deps_.gone(resource_id);
    }
  }
  Pump();
}

}  // namespace mmi::dispatcher
