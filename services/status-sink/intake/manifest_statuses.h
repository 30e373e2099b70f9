// Manifest delivery (issue #38 §5) on the sink's loop: turns the agent's ManifestBundle status of
// a resource in manifest delivery into the hub Application's `.status` (ApplicationStatusOf,
// manifests/application_status.h) from what the dispatcher recorded (HubAppRef::manifest and
// the rendered manifests, ManifestPayloads), with the times and history the status keeps
// (StatusHistory). The result goes to the coalescer like an Application's reported status.
//
// Render changes (a new revision with the same bundle, a render error, its end) need no agent
// event: the last agent report of each resource is held (Hold, a bounded LRU of
// `max_held` resources) and Rebuild() maps it again against the resource's new record. A
// resource whose report is not held (evicted, or none since the sink started) is left to the
// caller (the lost-report resync asks its agent).
//
// The hub Application's source and destination: the sink has neither (the dispatcher's table
// holds the bundle, not the Application), so `sync.comparedTo` gets the destination Application
// delivery shows on the hub too (the in-cluster server, which the CRD requires) and no source.
//
// Not thread-safe: owned by the sink's loop thread. Collaborators are borrowed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/clock.h"
#include "libs/store/status_store.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/intake/manifest_payloads.h"
#include "services/status-sink/manifests/status_history.h"

namespace mmi::status_sink {

enum class ManifestBuild {
  kBuilt,        // `report.update.status` holds the hub status
  kLookUpAgain,  // the resource's record is older than the report, or its manifests are not held
  kInvalid,      // the bundle or the report cannot be mapped (detail says why)
};

// What Rebuild() needs of an agent report: its bundle status and generation, and what the
// status update carries besides the status.
struct HeldReport {
  // The bundle status as its JSON (the agent's text, or EncodeManifestBundleStatus of it
  // without the spec echo), decoded again by Rebuild():
  // about half the bytes of the decoded struct (bench/sink/README.md, "Memory held per
  // report"), and rebuilds are rare (render changes). Empty: nothing to hold.
  std::string status;
  std::int64_t generation = 0;
  std::string status_hash;
  std::optional<int32_t> acked_version;
};

class ManifestStatuses {
 public:
  // (status.maxManifestStatuses) Resources whose last agent report is held, at most.
  static constexpr std::size_t kDefaultMaxHeld = 100'000;

  ManifestStatuses(ManifestPayloads& payloads, const Clock& clock,
                   std::size_t max_held = kDefaultMaxHeld)
      : payloads_(payloads), clock_(clock), max_held_(max_held) {}

  // What Hold() keeps of `report` (DecodeBundleReport's, before Build() takes its status). The
  // spec echo Maestro's gRPC source server adds is left out: the mapping does not read it, and
  // it would hold every resource's manifests.
  static HeldReport HeldOf(const StatusReport& report);
  // Keeps `report` as the last agent report of `resource_id` (the coalescer took it as no older
  // than the last one), evicting the least recently held resource beyond `max_held`.
  void Hold(const std::string& resource_id, HeldReport report);
  // The hub status of `ref` (in manifest delivery, its record just read) from its held agent
  // report: an update as the agent's report would give, without a sequence id or event time.
  // nullopt when no report is held, the manifests of `ref`'s payload are not held, or the
  // mapping fails (`detail` then says why).
  std::optional<StatusUpdate> Rebuild(const store::HubAppRef& ref, std::string& detail);

  // Builds the status of `report` (DecodeBundleReport's, not deleted) for `ref`, which is in
  // manifest delivery. `reread`: `ref` was read again for this report, so a report of a newer
  // bundle generation is mapped against it anyway (the generation shows as not applied yet).
  // On kInvalid `detail` says why.
  ManifestBuild Build(const store::HubAppRef& ref, StatusReport& report, bool reread,
                      std::string& detail);
  // Forgets what a resource kept (deleted).
  void Forget(const std::string& resource_id);
  std::size_t held() const { return held_.size(); }
  // Thread-safe: the lookups on the store executor load it.
  ManifestPayloads& payloads() const { return payloads_; }

 private:
  struct Held {
    HeldReport report;
    std::list<std::string>::iterator order;  // its place in held_order_
  };

  ManifestPayloads& payloads_;
  const Clock& clock_;
  const std::size_t max_held_;
  StatusHistory history_;
  std::unordered_map<std::string, Held> held_;
  std::list<std::string> held_order_;  // least recently held first
};

}  // namespace mmi::status_sink
