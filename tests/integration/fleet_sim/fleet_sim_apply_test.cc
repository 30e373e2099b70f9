// fleet-sim's apply mode against a real managed kube-apiserver (tests/peers/bin/start-kube
// ROLE=managed) and a real mosquitto: a source publishes a ManifestBundle over MQTT the way the
// dispatcher does, the spoke's work agent (SpokeWorkAgent on its runner) applies it with the
// bundle's field manager, reports status with the feedback values and Applied/Available, reports
// a change of the live object, and on delete removes the objects, reporting Deleted only once a
// finalizer has let the last one go. A simulated cluster of the same process still answers.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/clock.h"
#include "libs/common/sleeper.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/transport/factory.h"
#include "prometheus/registry.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/fleet_simulator.h"
#include "tools/fleet-sim/mqtt_agent_transport.h"
#include "tools/fleet-sim/spoke_agent_runner.h"
#include "tools/fleet-sim/spoke_work_agent.h"

namespace mmi {
namespace {

using cloudevents::Event;
using nlohmann::json;
using std::chrono::seconds;

constexpr char kSource[] = "fleet-apply-it";
constexpr char kSpoke[] = "real-spoke-1";
constexpr char kFieldManager[] = "apply-it-manager";
const kube::ResourceRef kApps{"argoproj.io", "v1alpha1", "applications", "openshift-gitops"};
const kube::ResourceRef kConfigMaps{"", "v1", "configmaps", "argocd"};

cloudevents::Timestamp Now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

// An Application (server-side applied with our field manager, `.status` fed back) and a
// ConfigMap (Update, `.data` fed back), deleted in the foreground.
cloudevents::ManifestBundle Bundle() {
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(json{
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata", {{"name", "guestbook"}, {"namespace", "openshift-gitops"}}},
      {"spec",
       {{"project", "default"},
        {"destination", {{"namespace", "guestbook"}, {"server", "https://kubernetes.default.svc"}}},
        {"source", {{"repoURL", "git://127.0.0.1/app.git"}, {"path", "."}}}}},
      {"operation", {{"sync", {{"revision", "HEAD"}}}}}});
  bundle.manifests.push_back(json{{"apiVersion", "v1"},
                                  {"kind", "ConfigMap"},
                                  {"metadata", {{"name", "settings"}, {"namespace", "argocd"}}},
                                  {"data", {{"mode", "real"}}}});
  cloudevents::ManifestConfigOption app;
  app.resource_identifier = {"argoproj.io", "applications", "guestbook", "openshift-gitops"};
  app.feedback_rules = {
      {std::string(cloudevents::kFeedbackJsonPaths), {{"status", std::nullopt, ".status"}}}};
  app.update_strategy = cloudevents::UpdateStrategy{
      std::string(cloudevents::kUpdateStrategyServerSideApply),
      cloudevents::ServerSideApplyConfig{
          true,
          std::string(kFieldManager),
          {cloudevents::IgnoreField{"OnSpokeChange", {".operation"}, {}, {}}}}};
  cloudevents::ManifestConfigOption cm;
  cm.resource_identifier = {"", "configmaps", "settings", "argocd"};
  cm.feedback_rules = {
      {std::string(cloudevents::kFeedbackJsonPaths), {{"mode", std::nullopt, ".data.mode"}}}};
  bundle.manifest_configs = {app, cm};
  bundle.delete_option = cloudevents::DeleteOption{"Foreground", std::nullopt, std::nullopt};
  return bundle;
}

Event SpecEvent(std::string_view type, const std::string& cluster, const std::string& id) {
  Event event;
  event.id = cloudevents::NewUuidV4();
  event.source = kSource;
  event.type = std::string(type);
  event.time = Now();
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId, id);
  event.SetInteger(cloudevents::kExtResourceVersion, 1);
  event.SetString(cloudevents::kExtLogTracing, "{}");
  cloudevents::ObjectMeta meta;
  meta.name = absl::StrCat("work-", id);
  meta.namespace_ = cluster;
  meta.uid = id;
  EXPECT_TRUE(cloudevents::SetObjectMeta(event, meta).ok());
  return event;
}

Event Create(const std::string& cluster, const std::string& id) {
  Event event = SpecEvent(cloudevents::kSpecCreateRequestType, cluster, id);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.data = *cloudevents::EncodeManifestBundle(Bundle());
  return event;
}

Event Update(const std::string& cluster, const std::string& id, int version,
             const cloudevents::ManifestBundle& bundle) {
  Event event = SpecEvent(cloudevents::kSpecUpdateRequestType, cluster, id);
  event.SetInteger(cloudevents::kExtResourceVersion, version);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.data = *cloudevents::EncodeManifestBundle(bundle);
  return event;
}

Event Delete(const std::string& cluster, const std::string& id) {
  Event event = SpecEvent(cloudevents::kSpecDeleteRequestType, cluster, id);
  event.SetTimestamp(cloudevents::kExtDeletionTimestamp, Now());
  return event;
}

class Inbox {
 public:
  void Add(Event event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(event));
  }
  // The decoded statuses of `resource_id`, in arrival order.
  std::vector<cloudevents::ManifestBundleStatus> Statuses(const std::string& resource_id) {
    absl::MutexLock lock(&mu_);
    std::vector<cloudevents::ManifestBundleStatus> out;
    for (const Event& e : events_) {
      if (e.type == cloudevents::kStatusUpdateRequestType &&
          e.ResourceId().value_or("") == resource_id) {
        if (auto status = cloudevents::ManifestBundleStatusOf(e); status.ok()) {
          out.push_back(*std::move(status));
        }
      }
    }
    return out;
  }
  // Whether some status of `resource_id` satisfies `pred`.
  template <typename Pred>
  bool Any(const std::string& resource_id, Pred pred) {
    for (const auto& status : Statuses(resource_id)) {
      if (pred(status)) {
        return true;
      }
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
};

bool ConditionIs(const std::vector<cloudevents::Condition>& conditions, std::string_view type,
                 std::string_view status) {
  const cloudevents::Condition* c = cloudevents::FindCondition(conditions, type);
  return c != nullptr && c->status == status;
}

const cloudevents::FeedbackValue* Feedback(const cloudevents::ManifestBundleStatus& status,
                                           std::size_t manifest, std::string_view name) {
  if (manifest >= status.resource_status.size()) {
    return nullptr;
  }
  for (const auto& value : status.resource_status[manifest].status_feedback) {
    if (value.name == name) {
      return &value;
    }
  }
  return nullptr;
}

TEST(FleetSimApplyTest, AppliesReportsAndDeletesOnARealSpoke) {
  MMI_START_PEER(broker, "mosquitto");
  MMI_START_PEER(spoke_api, "kube", {"ROLE=managed"});

  auto rest = kube::LoadKubeconfigFiles({spoke_api->Get("KUBECONFIG")});
  ASSERT_TRUE(rest.ok()) << rest.status();
  kube::HttpKubeClientSettings client_settings;
  client_settings.rest = *rest;
  auto kube_client = kube::HttpKubeClient::Create(client_settings, RealClock::Instance(),
                                                  RealSleeper::Instance(), nullptr);
  ASSERT_TRUE(kube_client.ok()) << kube_client.status();
  kube::KubeClient& kube = **kube_client;

  // Source side: the production MQTT transport, as the dispatcher and the status sink use it.
  transport::MqttSettings source;
  source.broker_host = broker->Get("MQTT_HOST");
  source.source_id = kSource;
  source.client_id = "fleet-apply-src";
  source.shared_group = "";
  const transport::TransportSettings source_settings = source;
  prometheus::Registry source_registry;
  const transport::TransportDeps deps{RealClock::Instance(), source_registry};
  auto publisher = transport::MakePublisher(source_settings, deps);
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  auto subscriber = transport::MakeSubscriber(source_settings, deps);
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  Inbox inbox;
  ASSERT_TRUE((*subscriber)
                  ->Start(
                      [&inbox](Event event, transport::AckFn ack) {
                        inbox.Add(std::move(event));
                        std::move(ack)();
                      },
                      nullptr)
                  .ok());
  ASSERT_TRUE((*publisher)->Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] { return (*subscriber)->connected() && (*publisher)->connected(); }, seconds(60)));
  auto publish = [&](Event event) {
    absl::Notification done;
    absl::Status result;
    (*publisher)->Publish(std::move(event), [&](absl::Status status) {
      result = status;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(result.ok()) << result;
  };

  // Agent side: two simulated clusters and the real spoke, in one simulator.
  fleet_sim::MqttAgentSettings agent_mqtt;
  agent_mqtt.broker_host = broker->Get("MQTT_HOST");
  agent_mqtt.source_id = kSource;
  agent_mqtt.client_id = "fleet-apply-agents";
  fleet_sim::MqttAgentTransport agents(agent_mqtt);
  cloudevents::SequenceIdGenerator sequence_ids(RealClock::Instance());
  // start-kube runs no garbage collector: a foreground deletion would never complete.
  fleet_sim::SpokeAgentSettings spoke_settings;
  spoke_settings.delete_propagation = kube::PropagationPolicy::kBackground;
  fleet_sim::SpokeAgentRunner spoke(
      std::make_unique<fleet_sim::SpokeWorkAgent>(kSpoke, spoke_settings, kube,
                                                  RealClock::Instance(), sequence_ids),
      kube, fleet_sim::SpokeRunnerSettings{.resync = std::chrono::milliseconds(1'000)});
  prometheus::Registry sim_registry;
  fleet_sim::FleetMetrics sim_metrics(sim_registry);
  fleet_sim::SimulatorSettings sim;
  sim.fleet.cluster_prefix = "sim-";
  sim.fleet.clusters = 2;
  sim.tick = std::chrono::milliseconds(200);
  fleet_sim::FleetSimulator simulator(sim, agents, RealClock::Instance(), sim_metrics);
  simulator.AddSpoke(spoke);
  ASSERT_TRUE(simulator.Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return simulator.resync_rounds() >= 1; }, seconds(60)));

  publish(Create(kSpoke, "res-real"));
  publish(Create("sim-1", "res-sim"));

  // Applied with the bundle's field manager; Applied and Available with the feedback values.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return inbox.Any("res-real", [](const cloudevents::ManifestBundleStatus& s) {
          const auto* mode = Feedback(s, 1, "mode");
          return ConditionIs(s.conditions, "Applied", "True") &&
                 ConditionIs(s.conditions, "Available", "True") && mode != nullptr &&
                 mode->field_value.string == "real";
        });
      },
      seconds(60)))
      << "no Applied/Available status from the real spoke";
  auto app = kube.Get(kApps, "guestbook");
  ASSERT_TRUE(app.ok()) << app.status();
  bool by_our_manager = false;
  for (const json& entry : (*app)["metadata"]["managedFields"]) {
    by_our_manager = by_our_manager || (entry.value("manager", "") == kFieldManager &&
                                        entry.value("operation", "") == "Apply");
  }
  EXPECT_TRUE(by_our_manager) << (*app)["metadata"]["managedFields"].dump();
  ASSERT_TRUE(kube.Get(kConfigMaps, "settings").ok());
  EXPECT_TRUE(testing::WaitFor([&] { return !inbox.Statuses("res-sim").empty(); }, seconds(30)))
      << "the simulated cluster did not answer";

  // ignoreFields OnSpokeChange on `operation`, as the dispatcher sends it. The spoke's Argo CD
  // removes `operation` when its sync ends; the same payload sent again is not applied (OCM's
  // config-spec-hash annotation), so it stays removed; another operation is applied.
  EXPECT_EQ((*app)["operation"]["sync"]["revision"], "HEAD");
  EXPECT_TRUE(
      (*app)["metadata"]["annotations"].contains("open-cluster-management.io/config-spec-hash"));
  ASSERT_TRUE(
      kube.Patch(kApps, "guestbook", kube::PatchType::kMerge, json{{"operation", nullptr}}, {}, "")
          .ok());
  auto answered = [&](std::size_t before) {
    return testing::WaitFor([&] { return inbox.Statuses("res-real").size() > before; },
                            seconds(30));
  };
  std::size_t before = inbox.Statuses("res-real").size();
  publish(Update(kSpoke, "res-real", 2, Bundle()));
  ASSERT_TRUE(answered(before));
  EXPECT_FALSE(kube.Get(kApps, "guestbook")->contains("operation"))
      << "the same payload applied again brought back the operation the spoke had removed";
  cloudevents::ManifestBundle next = Bundle();
  next.manifests[0]["operation"]["sync"]["revision"] = "v2";
  before = inbox.Statuses("res-real").size();
  publish(Update(kSpoke, "res-real", 3, next));
  ASSERT_TRUE(answered(before));
  EXPECT_EQ((*kube.Get(kApps, "guestbook"))["operation"]["sync"]["revision"], "v2");

  // The live object changes (as the spoke's Argo CD writes the Application's status): the
  // watch reports it as the `status` feedback value.
  ASSERT_TRUE(
      kube.Patch(kApps, "guestbook", kube::PatchType::kMerge,
                 json{{"status",
                       {{"sync", {{"status", "Synced"}}}, {"health", {{"status", "Healthy"}}}}}},
                 {}, "")
          .ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return inbox.Any("res-real", [](const cloudevents::ManifestBundleStatus& s) {
          const auto* status = Feedback(s, 0, "status");
          return status != nullptr &&
                 status->field_value.type == cloudevents::FieldValueType::kJsonRaw &&
                 status->field_value.json_raw_value["sync"]["status"] == "Synced";
        });
      },
      seconds(30)))
      << "the Application's status did not come back as feedback";

  // A finalizer holds the Application (as Argo CD's resources-finalizer does): Deleting, but no
  // Deleted until it is released.
  ASSERT_TRUE(kube.Patch(kApps, "guestbook", kube::PatchType::kMerge,
                         json{{"metadata", {{"finalizers", {"example.com/hold"}}}}}, {}, "")
                  .ok());
  publish(Delete(kSpoke, "res-real"));
  auto deleted = [&] {
    return inbox.Any("res-real", [](const cloudevents::ManifestBundleStatus& s) {
      return cloudevents::IsDeleted(s);
    });
  };
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return inbox.Any("res-real", [](const cloudevents::ManifestBundleStatus& s) {
          return ConditionIs(s.conditions, "Deleting", "True");
        });
      },
      seconds(30)));
  EXPECT_TRUE(testing::WaitFor(
      [&] { return absl::IsNotFound(kube.Get(kConfigMaps, "settings").status()); }, seconds(30)));
  std::this_thread::sleep_for(seconds(3));  // a few status syncs
  EXPECT_FALSE(deleted()) << "Deleted reported while the Application still exists";
  ASSERT_TRUE(kube.Patch(kApps, "guestbook", kube::PatchType::kMerge,
                         json{{"metadata", {{"finalizers", nullptr}}}}, {}, "")
                  .ok());
  ASSERT_TRUE(testing::WaitFor(deleted, seconds(30))) << "no Deleted status";
  EXPECT_TRUE(absl::IsNotFound(kube.Get(kApps, "guestbook").status()));

  // The dispatcher's hand-over from manifests to an Application (ADR 0007, apply_plan.h's
  // owner-reference rule): an update to the delete option Orphan, then the manifest dropped,
  // leaves the object in place (same uid); applied again without orphaning it is owned again, and
  // dropped then it is deleted.
  auto handover_bundle = [](const char* policy, bool with_cm) {
    cloudevents::ManifestBundle b;
    if (with_cm) {
      b.manifests.push_back(json{{"apiVersion", "v1"},
                                 {"kind", "ConfigMap"},
                                 {"metadata", {{"name", "handed"}, {"namespace", "argocd"}}},
                                 {"data", {{"owner", "work"}}}});
    }
    b.manifests.push_back(json{{"apiVersion", "v1"},
                               {"kind", "ConfigMap"},
                               {"metadata", {{"name", "stays"}, {"namespace", "argocd"}}}});
    b.delete_option = cloudevents::DeleteOption{policy, std::nullopt, std::nullopt};
    return b;
  };
  auto applied = [&](int generation) {
    return testing::WaitFor(
        [&] {
          return inbox.Any("res-handover", [&](const cloudevents::ManifestBundleStatus& s) {
            const cloudevents::Condition* c = cloudevents::FindCondition(s.conditions, "Applied");
            return c != nullptr && c->status == "True" && c->observed_generation == generation;
          });
        },
        seconds(30));
  };
  auto uid = [&] {
    auto cm = kube.Get(kConfigMaps, "handed");
    return cm.ok() ? (*cm)["metadata"].value("uid", std::string()) : std::string();
  };
  Event created = Update(kSpoke, "res-handover", 1, handover_bundle("Foreground", true));
  created.type = std::string(cloudevents::kSpecCreateRequestType);
  publish(std::move(created));
  ASSERT_TRUE(applied(1));
  const std::string first_uid = uid();
  ASSERT_FALSE(first_uid.empty());
  publish(Update(kSpoke, "res-handover", 2, handover_bundle("Orphan", true)));
  ASSERT_TRUE(applied(2));
  publish(Update(kSpoke, "res-handover", 3, handover_bundle("Foreground", false)));
  ASSERT_TRUE(applied(3));
  EXPECT_EQ(uid(), first_uid) << "an object applied under Orphan was deleted when dropped";
  publish(Update(kSpoke, "res-handover", 4, handover_bundle("Foreground", true)));
  ASSERT_TRUE(applied(4));
  EXPECT_EQ(uid(), first_uid) << "adopting the live object re-created it";
  publish(Update(kSpoke, "res-handover", 5, handover_bundle("Foreground", false)));
  ASSERT_TRUE(applied(5));
  EXPECT_TRUE(testing::WaitFor([&] { return uid().empty(); }, seconds(30)))
      << "an owned object dropped from its work was not deleted";

  simulator.Stop();
  (*publisher)->Stop();
  (*subscriber)->Stop();
}

}  // namespace
}  // namespace mmi
