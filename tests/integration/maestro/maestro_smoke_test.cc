// Smoke test: a real Maestro server (PostgreSQL + MQTT broker mode) and a real Maestro agent
// applying onto a managed kube-apiserver. A consumer is created through Maestro's REST API and
// the agent is seen subscribed for it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/http.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using std::chrono::seconds;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MaestroPeerTest, CreatesAConsumerAndSeesItsAgentSubscribed) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(broker, "mosquitto");
  MMI_START_PEER(spoke, "kube", {"ROLE=managed"});
  MMI_START_PEER(
      maestro, "maestro",
      {"BROKER=mqtt", "MQTT_HOST=" + broker->Get("MQTT_HOST"), "PG_HOST=" + pg->Get("PG_HOST"),
       "PG_PORT=" + pg->Get("PG_PORT"), "PG_USER=" + pg->Get("PG_USER"),
       "PG_PASSWORD=" + pg->Get("PG_PASSWORD"), "PG_DB=maestro"});

  testing::HttpRequest create;
  create.method = "POST";
  create.url = maestro->Get("MAESTRO_REST_URL") + "/api/maestro/v1/consumers";
  create.body = R"({"name":"cluster1"})";
  create.headers["Content-Type"] = "application/json";
  auto created = testing::SendHttp(create);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 201) << created->body;
  EXPECT_EQ(nlohmann::json::parse(created->body)["name"], "cluster1");

  auto listed = testing::HttpGet(maestro->Get("MAESTRO_REST_URL") +
                                 "/api/maestro/v1/consumers?search=name%3D%27cluster1%27");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->status, 200) << listed->body;
  EXPECT_EQ(nlohmann::json::parse(listed->body)["items"].size(), 1U);

  MMI_START_PEER(
      agent, "maestro-agent",
      {"CONSUMER=cluster1", "KUBECONFIG=" + spoke->Get("KUBECONFIG"),
       "KUBECTL=" + spoke->Get("KUBECTL"), "BROKER=mqtt", "MQTT_HOST=" + broker->Get("MQTT_HOST")});
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return ReadAll(agent->Get("AGENT_LOG")).find("subscribed to mqtt broker") !=
               std::string::npos;
      },
      seconds(60)))
      << "agent never subscribed; log: " << agent->Get("AGENT_LOG");
}

}  // namespace
}  // namespace mmi
