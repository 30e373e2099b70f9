#include "libs/metrics/admin_server.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "libs/metrics/build_info.h"

namespace mmi::metrics {
namespace {

TEST(RunChecksTest, AllPassingChecksAnswerOk) {
  auto [ok, body] = RunChecks({{"hub", [] { return absl::OkStatus(); }}});
  EXPECT_TRUE(ok);
  EXPECT_EQ(body, "[+]hub ok\nok\n");
}

TEST(RunChecksTest, OneFailingCheckFailsAndNamesItsReason) {
  auto [ok, body] = RunChecks({{"hub", [] { return absl::OkStatus(); }},
                               {"broker", [] { return absl::UnavailableError("disconnected"); }}});
  EXPECT_FALSE(ok);
  EXPECT_EQ(body, "[+]hub ok\n[-]broker failed: disconnected\n");
}

TEST(RunChecksTest, NoChecksMeansHealthy) {
  auto [ok, body] = RunChecks({});
  EXPECT_TRUE(ok);
  EXPECT_EQ(body, "ok\n");
}

TEST(BuildInfoTest, RegistersOneSeriesWithServiceVersionAndAllocator) {
  prometheus::Registry registry;
  RegisterBuildInfo(registry, "dispatcher");
  const auto families = registry.Collect();
  ASSERT_EQ(families.size(), 1U);
  EXPECT_EQ(families[0].name, "mmi_build_info");
  ASSERT_EQ(families[0].metric.size(), 1U);
  EXPECT_EQ(families[0].metric[0].gauge.value, 1);
  std::map<std::string, std::string> labels;
  for (const auto& label : families[0].metric[0].label) {
    labels[label.name] = label.value;
  }
  EXPECT_EQ(labels["service"], "dispatcher");
  EXPECT_EQ(labels["version"], Version());
  // Tests never link jemalloc (mmi_link_allocator is for the service, bench and simulator
  // binaries), so the system allocator serves them.
  EXPECT_EQ(labels["allocator"], "system");
}

}  // namespace
}  // namespace mmi::metrics
