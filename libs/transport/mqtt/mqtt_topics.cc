#include "libs/transport/mqtt/mqtt_topics.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"

namespace mmi::transport {
namespace {

bool IsSegment(const std::string& text) {
  return !text.empty() && absl::c_all_of(text, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string ReplaceFirstPlus(const std::string& pattern, const std::string& value) {
  std::string out = pattern;
  const auto pos = out.find('+');
  if (pos != std::string::npos) {
    out.replace(pos, 1, value);
  }
  return out;
}

}  // namespace

MqttTopics::MqttTopics(const MqttSettings& settings)
    : topics_(ResolvedMqttTopics(settings)), source_id_(settings.source_id) {}

absl::StatusOr<std::string> MqttTopics::PublishTopic(const cloudevents::Event& event) const {
  absl::StatusOr<std::string> cluster = event.ClusterName();
  if (!cluster.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("event ", event.id,
                     " cannot be routed over MQTT: ", std::string(cluster.status().message()),
                     " (every source event needs a String `clustername`)"));
  }
  if (cluster->empty()) {
    const bool status_resync = event.type == cloudevents::kStatusResyncRequestType || [&] {
      auto type = event.ParsedType();
      return type.ok() && type->subresource == cloudevents::Subresource::kStatus &&
             type->action == cloudevents::Action::kResyncRequest;
    }();
    if (!status_resync) {
      return absl::InvalidArgumentError(
          absl::StrCat("event ", event.id, " of type ", event.type,
                       " has an empty `clustername`; only a status resync_request may be "
                       "broadcast to all clusters"));
    }
    if (topics_.source_broadcast.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("status resync request ", event.id,
                       " is for all clusters but transport.mqtt.topics.sourceBroadcast is not "
                       "configured; configure it or send one request per cluster"));
    }
    return ReplaceFirstPlus(topics_.source_broadcast, source_id_);
  }
  if (!IsSegment(*cluster)) {
    return absl::InvalidArgumentError(
        absl::StrCat("event ", event.id, " has clustername \"", *cluster,
                     "\", which is not a valid MQTT topic segment ([a-z0-9-]+)"));
  }
  return ReplaceFirstPlus(topics_.source_events, *cluster);
}

std::vector<std::string> MqttTopics::SubscriptionFilters() const {
  std::vector<std::string> filters = {topics_.agent_events};
  if (!topics_.agent_broadcast.empty()) {
    filters.push_back(topics_.agent_broadcast);
  }
  return filters;
}

}  // namespace mmi::transport
