#include "tools/fleet-sim/simulated_object.h"

#include <gtest/gtest.h>

namespace mmi::fleet_sim {
namespace {

using nlohmann::json;

TEST(SettledObjectTest, GivesEachWorkloadKindTheStatusOfAFinishedRollOut) {
  const struct {
    const char* manifest;
    json want_status;  // null: the kind gets no status
  } cases[] = {
      {R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 3}})",
       json::parse(R"({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                       "readyReplicas": 3, "availableReplicas": 3, "conditions": [
                       {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                       {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]})")},
      {R"({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db",
           "generation": 4}})",
       json::parse(R"({"observedGeneration": 4, "replicas": 1, "readyReplicas": 1,
                       "currentReplicas": 1, "updatedReplicas": 1,
                       "currentRevision": "db-settled", "updateRevision": "db-settled"})")},
      {R"({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}})",
       json::parse(R"({"observedGeneration": 1, "desiredNumberScheduled": 1,
                       "currentNumberScheduled": 1, "updatedNumberScheduled": 1,
                       "numberReady": 1, "numberAvailable": 1})")},
      {R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"}})",
       json::parse(R"({"succeeded": 1, "conditions": [
                       {"type": "Complete", "status": "True", "reason": ""}]})")},
      {R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})",
       json::parse(R"({"phase": "Running", "conditions": [
                       {"type": "Ready", "status": "True", "reason": ""}]})")},
      {R"({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})",
       json::parse(R"({"phase": "Active"})")},
      {R"({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}})",
       json::parse(R"({"phase": "Bound"})")},
      {R"({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"type": "LoadBalancer"}})",
       json::parse(R"({"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}})")},
      {R"({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}})",
       json::parse(R"({"loadBalancer": {}})")},
      {R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}})", nullptr},
      // Same kind, another group: not the workload.
      {R"({"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "x"}})",
       nullptr},
  };
  for (const auto& c : cases) {
    const json manifest = json::parse(c.manifest);
    const json live = SettledObject(manifest);
    if (c.want_status.is_null()) {
      EXPECT_FALSE(live.contains("status")) << c.manifest;
    } else {
      EXPECT_EQ(live["status"], c.want_status) << c.manifest;
    }
    EXPECT_EQ(live["metadata"]["name"], manifest["metadata"]["name"]) << c.manifest;
    EXPECT_TRUE(live["metadata"]["generation"].is_number_integer()) << c.manifest;
  }
}

TEST(SettledObjectTest, KeepsTheManifestsSpecAndGeneration) {
  const json manifest = json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "web", "generation": 7}, "spec": {"paused": false}})");
  const json live = SettledObject(manifest);
  EXPECT_EQ(live["spec"], manifest["spec"]);
  EXPECT_EQ(live["metadata"]["generation"], 7);
  EXPECT_EQ(live["status"]["observedGeneration"], 7);
  EXPECT_EQ(live["status"]["replicas"], 1);  // no spec.replicas: the API server's default
}

}  // namespace
}  // namespace mmi::fleet_sim
