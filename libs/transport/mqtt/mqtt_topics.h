// Maestro's MQTT topic scheme for a source (maestro-protocol.md §3.2): which topic an outgoing
// event goes to and which filters to subscribe. Pure logic.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/transport/settings.h"

namespace mmi::transport {

// Immutable, thread-safe. Built from validated settings (ValidateMqttSettings).
class MqttTopics {
 public:
  explicit MqttTopics(const MqttSettings& settings);

  // sourceEvents with its first `+` replaced by the event's `clustername`; a status
  // resync_request whose `clustername` is "" goes to sourceBroadcast with its first `+` replaced
  // by the source id. kInvalidArgument when `clustername` is absent, not a String, or not a
  // valid topic segment ([a-z0-9-]+), or "" on any other event; kFailedPrecondition for a
  // broadcast when sourceBroadcast is not configured.
  absl::StatusOr<std::string> PublishTopic(const cloudevents::Event& event) const;

  // agentEvents, plus agentBroadcast when configured (with their `$share/` prefix, if any).
  std::vector<std::string> SubscriptionFilters() const;

 private:
  MqttTopicSettings topics_;
  std::string source_id_;
};

}  // namespace mmi::transport
