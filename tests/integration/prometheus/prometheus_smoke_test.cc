// Smoke test: a real Prometheus server started by tests/peers/bin/start-prometheus scrapes a
// /metrics endpoint this test serves with prometheus-cpp, reports the target up and stores the
// sample the test exported.
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <nlohmann/json.hpp>

#include "tests/support/http.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using std::chrono::seconds;

TEST(PrometheusPeerTest, ScrapesTheTestTargetAndReportsItUp) {
  prometheus::Exposer exposer("127.0.0.1:0");
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("mmi_smoke_events_total")
      .Help("Events seen by the smoke test")
      .Register(*registry)
      .Add({{"result", "ok"}})
      .Increment(42);
  exposer.RegisterCollectable(registry);
  ASSERT_FALSE(exposer.GetListeningPorts().empty());
  const std::string target = "127.0.0.1:" + std::to_string(exposer.GetListeningPorts()[0]);

  MMI_START_PEER(prom, "prometheus", {"TARGET=" + target});
  const std::string url = prom->Get("PROMETHEUS_URL");

  std::string health;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto r = testing::HttpGet(url + "/api/v1/targets");
        if (!r.ok() || r->status != 200) {
          return false;
        }
        const auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_discarded()) {
          return false;
        }
        for (const auto& t : j["data"]["activeTargets"]) {
          if (t["scrapeUrl"].get<std::string>().find(target) != std::string::npos) {
            health = t["health"].get<std::string>();
          }
        }
        return health == "up";
      },
      seconds(60)))
      << "target " << target << " health: '" << health << "'";

  double value = 0;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto r = testing::HttpGet(url + "/api/v1/query?query=mmi_smoke_events_total");
        if (!r.ok() || r->status != 200) {
          return false;
        }
        const auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_discarded() || j["data"]["result"].empty()) {
          return false;
        }
        value = std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
        return true;
      },
      seconds(30)));
  EXPECT_EQ(value, 42);
}

}  // namespace
}  // namespace mmi
