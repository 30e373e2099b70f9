// The status events the sink bench feeds the sink: what a Maestro work agent reports for one
// Argo CD Application (maestro-protocol.md §2.7, agent leg, as in the captured agent events):
// Applied/Available conditions, the Application's `.status` as a JsonRaw feedback value grown
// with `resources` entries up to a target size and its `dispatchVersion` String value (the
// end-to-end acknowledgement, docs/reliability.md finding 6), the `metadata` extension naming the
// hub Application, and a `statushash` computed as the agent does. Pure; shared by the publisher and
// the in-process stage measures.
#pragma once

#include <cstddef>
#include <string>

#include "libs/cloudevents/event.h"

namespace mmi::bench {

struct EventShape {
  // Size of the status payload (`data`, the ManifestBundleStatus JSON), reached to within one
  // `resources` entry (about 140 bytes). The `ce-` attributes and the `metadata` extension add
  // about 1.2 KB on the wire.
  std::size_t target_bytes = 1'600;
  std::size_t resources = 100;  // distinct resource ids, reported round-robin
  std::string cluster = "cluster1";
  std::string source_id = "mmi-bench";  // the sink's source id (`originalsource`)
};

// Resource id `r` (a UUID-shaped string).
std::string BenchResourceId(std::size_t r);
// Hub Application name of resource `r` (namespace kBenchHubNamespace).
std::string BenchAppName(std::size_t r);
inline constexpr char kBenchHubNamespace[] = "argocd";

// Event `n`: resource n % resources, a sequence id growing with n, and a `reconciledAt` that
// differs per event (so every event has its own status hash, and after the first write of a
// resource the coalescer sees refresh churn: volatile-only changes).
// `entries` = EntriesForSize(shape), computed once.
cloudevents::Event BenchStatusEvent(const EventShape& shape, std::size_t entries, std::size_t n);

// How many `resources` entries make an event of `shape.target_bytes`.
std::size_t EntriesForSize(const EventShape& shape);

// Event `n` of a resource in manifest delivery (ADR 0007): the agent's status of a bundle of
// `manifests` rendered Deployments (WellKnownStatus values, conditions), with no Application;
// the envelope as BenchStatusEvent's. `manifests` = ManifestsForSize(shape), computed once.
cloudevents::Event BenchManifestStatusEvent(const EventShape& shape, std::size_t manifests,
                                            std::size_t n);
std::size_t ManifestsForSize(const EventShape& shape);

}  // namespace mmi::bench
