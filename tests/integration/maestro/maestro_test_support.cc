#include "tests/integration/maestro/maestro_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/transport/grpc/grpc_channel.h"
#include "tests/support/wait.h"

namespace mmi::maestro_test {

using cloudevents::Event;
using std::chrono::milliseconds;

void Inbox::Add(Event event) {
  absl::MutexLock lock(&mu_);
  events_.push_back(std::move(event));
}

std::optional<Event> Inbox::Await(const std::function<bool(const Event&)>& match,
                                  milliseconds timeout) {
  std::optional<Event> found;
  testing::WaitFor(
      [&] {
        absl::MutexLock lock(&mu_);
        for (const Event& event : events_) {
          if (match(event)) {
            found = event;
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

std::function<bool(const Event&)> Is(std::string_view type, const std::string& resource_id) {
  return [type = std::string(type), resource_id](const Event& event) {
    auto id = event.GetString(cloudevents::kExtResourceId);
    return event.type == type && id.ok() && *id == resource_id;
  };
}

bool HasConditionTrue(const Event& status, std::string_view type) {
  auto bundle_status = cloudevents::ManifestBundleStatusOf(status);
  if (!bundle_status.ok()) {
    return false;
  }
  const cloudevents::Condition* condition =
      cloudevents::FindCondition(bundle_status->conditions, type);
  return condition != nullptr && condition->status == "True";
}

std::string WorkMeta(const std::string& cluster, const std::string& name,
                     const std::string& resource_id, int version,
                     std::optional<cloudevents::Timestamp> deletion) {
  cloudevents::ObjectMeta meta;
  meta.name = name;
  meta.namespace_ = cluster;
  meta.uid = resource_id;
  meta.resource_version = std::to_string(version);
  meta.generation = version;
  meta.deletion_timestamp = deletion;
  return cloudevents::FormatObjectMeta(meta).value();
}

Event SpecRequest(const std::string& cluster, const std::string& name, int round) {
  const std::string resource_id = cloudevents::WorkResourceId(kSource, cluster, name);
  const bool create = round == 1;
  const nlohmann::json bundle = {
      {"manifests",
       {{{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", {{"name", name}, {"namespace", "default"}}},
         {"data", {{"greeting", create ? "hello" : "hello " + std::to_string(round)}}}}}},
      {"deleteOption", {{"propagationPolicy", "Foreground"}}},
      {"manifestConfigs", nlohmann::json::array()}};
  return cloudevents::MakeSpecRequest(
      {.id = cloudevents::NewUuidV4(),
       .source = kSource,
       .time = RealClock::Instance().Now(),
       .cluster = cluster,
       .resource_id = resource_id,
       .version = create ? 1 : 0},
      create, WorkMeta(cluster, name, resource_id, round, std::nullopt), bundle.dump());
}

Event CreateRequest(const std::string& cluster, const std::string& name) {
  return SpecRequest(cluster, name, 1);
}

Event DeleteRequest(const std::string& cluster, const std::string& name,
                    const std::string& resource_id) {
  const cloudevents::Timestamp deletion = RealClock::Instance().Now();
  return cloudevents::MakeSpecDeleteRequest({.id = cloudevents::NewUuidV4(),
                                             .source = kSource,
                                             .time = deletion,
                                             .cluster = cluster,
                                             .resource_id = resource_id,
                                             .version = 1},
                                            deletion,
                                            WorkMeta(cluster, name, resource_id, 1, deletion));
}

transport::GrpcSettings SourceSettings(const std::string& grpc_addr) {
  transport::GrpcSettings settings;
  settings.url = grpc_addr;
  settings.source_id = kSource;
  settings.publish_timeout = milliseconds(10'000);
  settings.reconnect_backoff = {milliseconds(200), milliseconds(1'000), 2.0, 0.2};
  return settings;
}

SourceClients::SourceClients(const transport::GrpcSettings& grpc_settings)
    : settings(grpc_settings) {
  auto channel = transport::MakeGrpcChannel(settings);
  EXPECT_TRUE(channel.ok()) << channel.status();
  publisher = std::make_unique<transport::GrpcPublisher>(settings, *channel, clock, registry);
  subscriber = std::make_unique<transport::GrpcSubscriber>(settings, *channel, clock, registry);
}

SourceClients::~SourceClients() {
  subscriber->Stop();
  publisher->Stop();
}

absl::Status SourceClients::Start() {
  if (absl::Status s = publisher->Start(); !s.ok()) {
    return s;
  }
  return subscriber->Start(
      [this](Event event, transport::AckFn ack) {
        statuses.Add(std::move(event));
        std::move(ack)();
      },
      [this](bool resubscribed) {
        absl::MutexLock lock(&mu);
        (resubscribed ? resubscriptions : subscriptions)++;
      });
}

absl::Status SourceClients::PublishAndWait(Event event) {
  absl::Notification done;
  absl::Status result;
  publisher->Publish(std::move(event), [&](absl::Status status) {
    result = std::move(status);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

int SourceClients::Resubscriptions() {
  absl::MutexLock lock(&mu);
  return resubscriptions;
}

namespace {

fleet_sim::AgentSettings NoChurn() {
  fleet_sim::AgentSettings settings;
  settings.refresh_max = std::chrono::seconds(0);
  return settings;
}

fleet_sim::MqttAgentSettings AgentMqtt(const std::string& broker_host,
                                       const std::string& maestro_source_id) {
  fleet_sim::MqttAgentSettings settings;
  settings.broker_host = broker_host;
  settings.source_id = maestro_source_id;
  return settings;
}

}  // namespace

MqttClusterAgent::MqttClusterAgent(const std::string& broker_host,
                                   const std::string& maestro_source_id)
    : sequence_ids_(RealClock::Instance()),
      agent_(kCluster, NoChurn(), RealClock::Instance(), sequence_ids_, /*seed=*/1),
      transport_(AgentMqtt(broker_host, maestro_source_id)) {}

absl::Status MqttClusterAgent::Start() {
  absl::Status started = transport_.Start(
      [this](fleet_sim::ReceivedEvent received) {
        if (received.event.ok() && received.topic_cluster == kCluster) {
          specs_.Add(*std::move(received.event));
        }
      },
      [](fleet_sim::Subscription) {});
  if (!started.ok()) {
    return started;
  }
  if (!testing::WaitFor([&] { return transport_.connected(); }, std::chrono::seconds(20))) {
    return absl::UnavailableError("cluster1's MQTT agent did not connect within 20 s");
  }
  return absl::OkStatus();
}

absl::Status MqttClusterAgent::Answer(const Event& spec) {
  auto handled = agent_.Handle(spec);
  if (!handled.ok()) {
    return handled.status();
  }
  if (handled->replies.empty()) {
    return absl::InternalError("the agent had no reply for " + spec.id);
  }
  for (Event& reply : handled->replies) {
    absl::Notification done;
    absl::Status published;
    transport_.Publish(std::move(reply), [&](absl::Status s) {
      published = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    if (!published.ok()) {
      return published;
    }
  }
  return absl::OkStatus();
}

testing::HttpResponse RestGet(const std::string& url) {
  auto response = testing::HttpGet(url);
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? *response : testing::HttpResponse{};
}

std::optional<double> ScrapeCounter(
    const std::string& url, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& labels) {
  auto response = testing::HttpGet(url);
  if (!response.ok() || response->status != 200) {
    return std::nullopt;
  }
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(response->body, '\n')) {
    if (!absl::StartsWith(line, name) || line.size() <= name.size() ||
        (line[name.size()] != '{' && line[name.size()] != ' ')) {
      continue;
    }
    const bool all = std::all_of(labels.begin(), labels.end(), [&](const auto& label) {
      return absl::StrContains(line, absl::StrCat(label.first, "=\"", label.second, "\""));
    });
    double value = 0;
    const size_t space = line.rfind(' ');
    if (all && space != absl::string_view::npos &&
        absl::SimpleAtod(line.substr(space + 1), &value)) {
      sum += value;
    }
  }
  return sum;
}

transport::MaestroConsumerRegistry Registry(const std::string& rest) {
  transport::MaestroRestSettings settings;
  settings.base_url = rest;
  return transport::MaestroConsumerRegistry(std::move(settings));
}

std::vector<std::string> PeerArgs(const testing::PeerProcess& pg) {
  return {"PG_HOST=" + pg.Get("PG_HOST"), "PG_PORT=" + pg.Get("PG_PORT"),
          "PG_USER=" + pg.Get("PG_USER"), "PG_PASSWORD=" + pg.Get("PG_PASSWORD"), "PG_DB=maestro"};
}

}  // namespace mmi::maestro_test
