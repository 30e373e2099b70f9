// ReconcilerSettings: how the reconciler decides and paces its work (dispatch.* and outbox retry
// settings of the dispatcher's config, filled by services/dispatcher/settings.cc).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "libs/common/backoff.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/apps/spec_events.h"

namespace mmi::dispatcher {

// (maestroRest) bounds of the REST look-ups of unconfirmed deletions over gRPC (DeletionCheck,
// deletion_check.h); the REST connection itself is in the dispatcher's settings.
struct DeletionCheckSettings {
  double max_requests_per_second = 20;  // (maxRequestsPerSecond) GETs started per second
  int max_in_flight = 2;                // (maxInFlight) GETs running at once
  size_t max_queued = 100'000;          // (maxQueued) resources waiting for their GET
  // (errorPause) after a failed look-up (not 200/404): no GET for this long.
  std::chrono::milliseconds error_pause{30'000};
};

// (dispatch.ackCheck) the end-to-end acknowledgement (ack_check.h): what a reporting agent has
// not acknowledged is published again.
struct AckCheckSettings {
  bool enabled = true;                         // (enabled)
  std::chrono::milliseconds interval{15'000};  // (interval) between two look-ups in the store
  // (grace, timeout, maxPerCheck) store::AckWindow: a later change of the same cluster
  // acknowledged `grace` after this one's publish, or any report `timeout` after it. The
  // second counts only when the source is not behind (ack_check.h): a change of any cluster
  // published `timeout` after it is acknowledged, or no acknowledgement arrived since the last
  // check.
  std::chrono::seconds grace{30};
  std::chrono::seconds timeout{120};
  int max_per_check = 1000;
  // (maxWhileStalled) republishes on the timeout rule while no acknowledgement arrives at all,
  // from one stall to the next acknowledgement: a source that delivers nothing gets no more.
  int max_while_stalled = 200;
  // The n-th republish of one unchanged resource waits grace x 2^n (at most `max_backoff`) after
  // the one before: an agent that keeps failing to apply it is not flooded.
  std::chrono::seconds max_backoff{3600};
};

struct ReconcilerSettings {
  PayloadSettings payload;
  VersionMode version_mode = VersionMode::kCounter;
  // Keys waiting for the loop at most; beyond, intake pauses and a full resync follows.
  size_t queue_capacity = 500'000;
  // Keys reconciled per loop turn; their changes go to the store in one transaction.
  size_t batch_size = 200;
  // Record() transactions running at once at most.
  int max_inflight_batches = 2;
  // Outbox events waiting to be published or in flight (Outbox::ready_or_in_flight(), ~2.6 KB
  // each in memory) at which the reconciler takes no new keys until they are down to half; it
  // may overshoot by batch_size x max_inflight_batches. Events sleeping in retry backoff do not
  // count (they may fail for good, e.g. an unregistered cluster, and must not stall the others),
  // nor do accepted ones. A cold start of 300,000 Applications behind a slower broker then holds
  // ~20,000 such events instead of whatever the broker is behind. 0 = no bound.
  size_t max_outbox = 20'000;
  // Skip Applications whose target is the hub's own ManagedCluster (local-cluster).
  bool skip_local_cluster = true;
  // Parked Applications (unknown ManagedCluster) are retried this often.
  std::chrono::milliseconds unknown_cluster_retry{60'000};
  // At most one Kubernetes Event per parked Application per interval.
  std::chrono::milliseconds unknown_cluster_event_interval{600'000};
  // A delete request the agent has not confirmed this long after the broker accepted it is
  // published again (the wait doubles per resend, up to 16x): its Deleted report may have been
  // lost (a status sink killed while holding it, an agent offline when the request came).
  // Agents and Maestro treat a repeated delete as done (Maestro: NotFound, also done).
  std::chrono::milliseconds delete_resend_after{60'000};
  // Over gRPC with maestroRest.url set: each resend also asks Maestro's REST API (a 404
  // confirms the deletion).
  DeletionCheckSettings deletion_check;
  AckCheckSettings ack_check;
  // Retries of failed store calls and hub writes.
  BackoffSettings retry{.initial = std::chrono::milliseconds(500),
                        .max = std::chrono::milliseconds(60'000),
                        .multiplier = 2.0,
                        .jitter = 0.2};
  // Outbox rows read per page when recovering after a restart.
  int outbox_recover_page = 1000;
  // Reporting component/instance of the Events written on hub Applications.
  std::string event_component = "mmi-dispatcher";
  std::string event_instance;
};

}  // namespace mmi::dispatcher
