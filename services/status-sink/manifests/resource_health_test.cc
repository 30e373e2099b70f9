#include "services/status-sink/manifests/resource_health.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/manifests/testing/feedback_values.h"

namespace mmi::status_sink {
namespace {

using cloudevents::FeedbackValue;
using testing::Bool;
using testing::Int;
using testing::Raw;
using testing::Str;

struct Row {
  std::string what;
  std::string group;
  std::string kind;
  std::vector<FeedbackValue> values;
  std::optional<ResourceHealth> want;
};

ResourceHealth H(HealthCode code, std::string message = "") {
  return ResourceHealth{.status = code, .message = std::move(message)};
}

void RunTable(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    EXPECT_EQ(HealthFromFeedback(row.group, row.kind, "web",
                                 ReportedFeedback{.values = &row.values, .synced = true}),
              row.want)
        << row.what;
  }
}

// A rolled-out Deployment's feedback, with `changes` replacing values of the same name.
std::vector<FeedbackValue> Deployment(std::vector<FeedbackValue> changes) {
  std::vector<FeedbackValue> values = {Int("ReadyReplicas", 3),      Int("Replicas", 3),
                                       Int("AvailableReplicas", 3),  Int("Generation", 2),
                                       Int("ObservedGeneration", 2), Int("UpdatedReplicas", 3),
                                       Int("DesiredReplicas", 3)};
  for (FeedbackValue& change : changes) {
    bool replaced = false;
    for (FeedbackValue& value : values) {
      if (value.name == change.name) {
        value = change;
        replaced = true;
      }
    }
    if (!replaced) {
      values.push_back(change);
    }
  }
  return values;
}

TEST(HealthOrderTest, IsArgoCdsOrder) {
  const std::vector<HealthCode> order = {HealthCode::kHealthy,     HealthCode::kSuspended,
                                         HealthCode::kProgressing, HealthCode::kMissing,
                                         HealthCode::kDegraded,    HealthCode::kUnknown};
  const std::vector<std::string> names = {"Healthy", "Suspended", "Progressing",
                                          "Missing", "Degraded",  "Unknown"};
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(HealthName(order[i]), names[i]);
    for (std::size_t j = 0; j < order.size(); ++j) {
      EXPECT_EQ(IsWorse(order[i], order[j]), j > i) << names[i] << " vs " << names[j];
    }
  }
}

TEST(ResourceHealthTest, DeploymentFollowsTheRolloutRule) {
  RunTable({
      {"rolled out", "apps", "Deployment", Deployment({}), H(HealthCode::kHealthy)},
      {"paused", "apps", "Deployment", Deployment({Bool("Paused", true)}),
       H(HealthCode::kSuspended, "Deployment is paused")},
      {"generation not observed", "apps", "Deployment", Deployment({Int("Generation", 3)}),
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: observed deployment generation less than desired "
         "generation")},
      {"deadline exceeded", "apps", "Deployment",
       Deployment(
           {Raw("Conditions", nlohmann::json::array({{{"type", "Progressing"},
                                                      {"status", "False"},
                                                      {"reason", "ProgressDeadlineExceeded"}}}))}),
       H(HealthCode::kDegraded, "Deployment \"web\" exceeded its progress deadline")},
      {"updating", "apps", "Deployment", Deployment({Int("UpdatedReplicas", 1)}),
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: 1 out of 3 new replicas have been updated...")},
      {"old replicas left", "apps", "Deployment", Deployment({Int("Replicas", 4)}),
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: 1 old replicas are pending termination...")},
      {"not available yet", "apps", "Deployment", Deployment({Int("AvailableReplicas", 2)}),
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: 2 of 3 updated replicas are available...")},
      {"scaled to zero",
       "apps",
       "Deployment",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredReplicas", 0)},
       H(HealthCode::kHealthy)},
      {"wrong type", "apps", "Deployment", Deployment({Str("UpdatedReplicas", "3")}),
       H(HealthCode::kUnknown, "status feedback \"UpdatedReplicas\" is String, want Integer")},
      {"conditions not an array", "apps", "Deployment",
       Deployment({Raw("Conditions", nlohmann::json::object())}),
       H(HealthCode::kUnknown, "status feedback \"Conditions\" is not a JSON array")},
  });
}

TEST(ResourceHealthTest, StatefulSetDaemonSetAndReplicaSetFollowTheirRules) {
  const nlohmann::json rolling = {{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 0}}}};
  const std::vector<FeedbackValue> sts = {
      Int("Generation", 1),           Int("ObservedGeneration", 1),   Int("DesiredReplicas", 2),
      Int("ReadyReplicas", 2),        Int("UpdatedReplicas", 2),      Int("CurrentReplicas", 2),
      Str("UpdateRevision", "web-1"), Str("CurrentRevision", "web-1")};
  auto with = [](std::vector<FeedbackValue> values, FeedbackValue extra) {
    values.push_back(std::move(extra));
    return values;
  };
  RunTable({
      {"sts partitioned complete", "apps", "StatefulSet", with(sts, Raw("UpdateStrategy", rolling)),
       H(HealthCode::kHealthy, "partitioned roll out complete: 2 new pods have been updated...")},
      {"sts partition pending",
       "apps",
       "StatefulSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredReplicas", 3),
        Int("ReadyReplicas", 3), Int("UpdatedReplicas", 1),
        Raw("UpdateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 1}}}})},
       H(HealthCode::kProgressing,
         "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...")},
      {"sts not observed",
       "apps",
       "StatefulSet",
       {Int("Generation", 1)},
       H(HealthCode::kProgressing, "Waiting for statefulset spec update to be observed...")},
      {"sts pods not ready",
       "apps",
       "StatefulSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredReplicas", 3),
        Int("ReadyReplicas", 1)},
       H(HealthCode::kProgressing, "Waiting for 2 pods to be ready...")},
      {"sts on delete", "apps", "StatefulSet",
       with(sts, Raw("UpdateStrategy", {{"type", "OnDelete"}})),
       H(HealthCode::kHealthy, "statefulset has 2 ready pods")},
      {"sts revisions differ",
       "apps",
       "StatefulSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("ReadyReplicas", 0),
        Int("UpdatedReplicas", 1), Str("UpdateRevision", "web-2"), Str("CurrentRevision", "web-1")},
       H(HealthCode::kProgressing,
         "waiting for statefulset rolling update to complete 1 pods at revision web-2...")},
      {"ds rolled out",
       "apps",
       "DaemonSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredNumberScheduled", 2),
        Int("UpdatedNumberScheduled", 2), Int("NumberAvailable", 2),
        Raw("UpdateStrategy", {{"type", "RollingUpdate"}})},
       H(HealthCode::kHealthy)},
      {"ds updating",
       "apps",
       "DaemonSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredNumberScheduled", 2),
        Int("UpdatedNumberScheduled", 1)},
       H(HealthCode::kProgressing,
         "Waiting for daemon set \"web\" rollout to finish: 1 out of 2 new pods have been "
         "updated...")},
      {"ds unavailable",
       "apps",
       "DaemonSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredNumberScheduled", 2),
        Int("UpdatedNumberScheduled", 2), Int("NumberAvailable", 1)},
       H(HealthCode::kProgressing,
         "Waiting for daemon set \"web\" rollout to finish: 1 of 2 updated pods are "
         "available...")},
      {"ds on delete",
       "apps",
       "DaemonSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredNumberScheduled", 2),
        Int("UpdatedNumberScheduled", 1), Raw("UpdateStrategy", {{"type", "OnDelete"}})},
       H(HealthCode::kHealthy, "daemon set 1 out of 2 new pods have been updated")},
      {"ds not observed",
       "apps",
       "DaemonSet",
       {Int("Generation", 2), Int("ObservedGeneration", 1)},
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: observed daemon set generation less than desired "
         "generation")},
      {"rs failure",
       "apps",
       "ReplicaSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1),
        Raw("Conditions", nlohmann::json::array({{{"type", "ReplicaFailure"},
                                                  {"status", "True"},
                                                  {"message", "quota exceeded"}}}))},
       H(HealthCode::kDegraded, "quota exceeded")},
      {"rs available",
       "apps",
       "ReplicaSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredReplicas", 2),
        Int("AvailableReplicas", 2)},
       H(HealthCode::kHealthy)},
      {"rs waiting",
       "apps",
       "ReplicaSet",
       {Int("Generation", 1), Int("ObservedGeneration", 1), Int("DesiredReplicas", 2),
        Int("AvailableReplicas", 1)},
       H(HealthCode::kProgressing,
         "Waiting for rollout to finish: 1 out of 2 new replicas are available...")},
  });
}

TEST(ResourceHealthTest, JobAndPodFollowTheirRules) {
  auto conditions = [](std::string type, std::string status, std::string message) {
    return Raw("Conditions",
               nlohmann::json::array({{{"type", type}, {"status", status}, {"message", message}}}));
  };
  const nlohmann::json crash = nlohmann::json::array(
      {{{"name", "app"},
        {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 5m"}}}}}}});
  const nlohmann::json restarted =
      nlohmann::json::array({{{"name", "app"},
                              {"state", {{"running", nlohmann::json::object()}}},
                              {"lastState", {{"terminated", {{"exitCode", 1}}}}}}});
  const nlohmann::json exited =
      nlohmann::json::array({{{"name", "app"}, {"state", {{"terminated", {{"exitCode", 2}}}}}}});
  RunTable({
      {"job running", "batch", "Job", {Int("JobSucceeded", 0)}, H(HealthCode::kProgressing)},
      {"job complete",
       "batch",
       "Job",
       {Str("JobComplete", "True"), conditions("Complete", "True", "done")},
       H(HealthCode::kHealthy, "done")},
      {"job complete, well-known only",
       "batch",
       "Job",
       {Str("JobComplete", "True")},
       H(HealthCode::kHealthy)},
      {"job failed",
       "batch",
       "Job",
       {conditions("Failed", "True", "BackoffLimitExceeded")},
       H(HealthCode::kDegraded, "BackoffLimitExceeded")},
      {"job suspended",
       "batch",
       "Job",
       {conditions("Suspended", "True", "suspended")},
       H(HealthCode::kSuspended)},
      {"pod ready",
       "",
       "Pod",
       {Str("PodPhase", "Running"), Str("PodReady", "True")},
       H(HealthCode::kHealthy)},
      {"pod pending",
       "",
       "Pod",
       {Str("PodPhase", "Pending"), Str("Message", "unschedulable")},
       H(HealthCode::kProgressing, "unschedulable")},
      {"pod crash loop",
       "",
       "Pod",
       {Str("PodPhase", "Running"), Str("PodReady", "False"), Raw("ContainerStatuses", crash)},
       H(HealthCode::kDegraded, "back-off 5m")},
      {"pod crash loop, restart never",
       "",
       "Pod",
       {Str("PodPhase", "Running"), Str("RestartPolicy", "Never"), Raw("ContainerStatuses", crash)},
       H(HealthCode::kProgressing)},
      {"pod not ready after restart",
       "",
       "Pod",
       {Str("PodPhase", "Running"), Str("PodReady", "False"), Raw("ContainerStatuses", restarted)},
       H(HealthCode::kDegraded)},
      {"pod starting",
       "",
       "Pod",
       {Str("PodPhase", "Running"), Str("PodReady", "False")},
       H(HealthCode::kProgressing)},
      {"pod succeeded", "", "Pod", {Str("PodPhase", "Succeeded")}, H(HealthCode::kHealthy)},
      {"pod failed with message",
       "",
       "Pod",
       {Str("PodPhase", "Failed"), Str("Message", "evicted")},
       H(HealthCode::kDegraded, "evicted")},
      {"pod failed exit code",
       "",
       "Pod",
       {Str("PodPhase", "Failed"), Raw("ContainerStatuses", exited)},
       H(HealthCode::kDegraded, "container \"app\" failed with exit code 2")},
      {"pod phase unknown", "", "Pod", {Str("PodPhase", "Unknown")}, H(HealthCode::kUnknown)},
  });
}

TEST(ResourceHealthTest, ClaimsServicesIngressesAndApiServicesFollowTheirRules) {
  const nlohmann::json ingress = nlohmann::json::array({{{"ip", "10.0.0.1"}}});
  RunTable({
      {"pvc bound", "", "PersistentVolumeClaim", {Str("Phase", "Bound")}, H(HealthCode::kHealthy)},
      {"pvc pending",
       "",
       "PersistentVolumeClaim",
       {Str("Phase", "Pending")},
       H(HealthCode::kProgressing)},
      {"pvc lost", "", "PersistentVolumeClaim", {Str("Phase", "Lost")}, H(HealthCode::kDegraded)},
      {"pvc no phase", "", "PersistentVolumeClaim", {}, H(HealthCode::kUnknown)},
      {"cluster ip service",
       "",
       "Service",
       {Str("ServiceType", "ClusterIP")},
       H(HealthCode::kHealthy)},
      {"load balancer waiting",
       "",
       "Service",
       {Str("ServiceType", "LoadBalancer")},
       H(HealthCode::kProgressing)},
      {"load balancer ready",
       "",
       "Service",
       {Str("ServiceType", "LoadBalancer"), Raw("LoadBalancerIngress", ingress)},
       H(HealthCode::kHealthy)},
      {"ingress waiting", "networking.k8s.io", "Ingress", {}, H(HealthCode::kProgressing)},
      {"ingress ready",
       "networking.k8s.io",
       "Ingress",
       {Raw("LoadBalancerIngress", ingress)},
       H(HealthCode::kHealthy)},
      {"apiservice available",
       "apiregistration.k8s.io",
       "APIService",
       {Raw("Conditions", nlohmann::json::array({{{"type", "Available"},
                                                  {"status", "True"},
                                                  {"reason", "Passed"},
                                                  {"message", "all checks passed"}}}))},
       H(HealthCode::kHealthy, "Passed: all checks passed")},
      {"apiservice unprocessed",
       "apiregistration.k8s.io",
       "APIService",
       {},
       H(HealthCode::kProgressing, "Waiting to be processed")},
      {"configmap has no health", "", "ConfigMap", {}, std::nullopt},
      {"argo application has no health", "argoproj.io", "Application", {}, std::nullopt},
      {"custom resource has no health",
       "example.com",
       "Widget",
       {Raw("Conditions", nlohmann::json::array())},
       std::nullopt},
  });
}

TEST(ResourceHealthTest, NoFeedbackYetIsProgressingUntilTheAgentConfirmsIt) {
  const std::vector<FeedbackValue> none;
  EXPECT_EQ(HealthFromFeedback("apps", "Deployment", "web",
                               ReportedFeedback{.values = &none, .synced = false}),
            H(HealthCode::kProgressing, "Waiting for status feedback from the work agent"));
  EXPECT_EQ(HealthFromFeedback("apps", "Deployment", "web",
                               ReportedFeedback{.values = nullptr, .synced = false}),
            H(HealthCode::kProgressing, "Waiting for status feedback from the work agent"));
  // Confirmed and empty: zero values, a Deployment scaled to nothing.
  EXPECT_EQ(HealthFromFeedback("apps", "Deployment", "web",
                               ReportedFeedback{.values = &none, .synced = true}),
            H(HealthCode::kHealthy));
}

TEST(ResourceHealthTest, HealthChecksExistForExactlyTheCoveredKinds) {
  EXPECT_TRUE(HasHealthCheck("apps", "Deployment"));
  EXPECT_TRUE(HasHealthCheck("", "Service"));
  EXPECT_TRUE(HasHealthCheck("extensions", "Ingress"));
  EXPECT_FALSE(HasHealthCheck("", "ConfigMap"));
  EXPECT_FALSE(HasHealthCheck("apps", "ControllerRevision"));
  EXPECT_FALSE(HasHealthCheck("batch", "CronJob"));
}

}  // namespace
}  // namespace mmi::status_sink
