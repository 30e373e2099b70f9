#include "services/status-sink/writes/status_patch.h"

#include <gtest/gtest.h>

namespace mmi::status_sink {
namespace {

using nlohmann::json;

const auto kNow = std::chrono::system_clock::time_point(std::chrono::seconds(1'780'308'000));

TEST(BuildStatusPatchTest, SendsNullForEveryKnownMemberTheSpokeNoLongerReports) {
  auto patch = BuildStatusPatch(json{{"sync", {{"status", "Synced"}, {"revision", "abc"}}},
                                     {"health", {{"status", "Healthy"}}}},
                                {}, kNow);
  ASSERT_TRUE(patch.ok()) << patch.status();
  const json& s = (*patch)["status"];
  EXPECT_EQ(s["sync"]["status"], "Synced");
  EXPECT_TRUE(s["sync"].contains("revisions"));
  EXPECT_TRUE(s["sync"]["revisions"].is_null());
  EXPECT_TRUE(s["operationState"].is_null());
  EXPECT_TRUE(s["conditions"].is_null());
  EXPECT_TRUE(s["resources"].is_null());
  EXPECT_TRUE(s["health"]["lastTransitionTime"].is_null());
}

TEST(BuildStatusPatchTest, MeetsTheRequiredStatusFieldsOfTheCrd) {
  json spoke = {
      {"sync", {{"revision", "abc"}}},
      {"operationState", {{"phase", "Running"}, {"syncResult", json::object()}}},
      {"conditions", json::array({{{"type", "SyncError"}}, {{"message", "no type"}}})},
      {"history", json::array({{{"id", 1}, {"deployedAt", "2026-06-01T10:00:00Z"}}, {{"id", 2}}})},
  };
  auto patch = BuildStatusPatch(spoke, {}, kNow);
  ASSERT_TRUE(patch.ok()) << patch.status();
  const json& s = (*patch)["status"];
  EXPECT_EQ(s["sync"]["status"], "Unknown");
  EXPECT_EQ(s["operationState"]["operation"], json::object());
  EXPECT_EQ(s["operationState"]["startedAt"], "2026-06-01T10:00:00Z");
  EXPECT_EQ(s["operationState"]["syncResult"]["revision"], "");
  ASSERT_EQ(s["conditions"].size(), 1U);
  EXPECT_EQ(s["conditions"][0], json({{"type", "SyncError"}, {"message", ""}}));
  EXPECT_EQ(s["history"].size(), 1U);
}

TEST(BuildStatusPatchTest, AnOperationStateWithoutPhaseIsLeftOut) {
  auto patch = BuildStatusPatch(json{{"operationState", {{"message", "x"}}}}, {}, kNow);
  ASSERT_TRUE(patch.ok());
  EXPECT_TRUE((*patch)["status"]["operationState"].is_null());
}

TEST(BuildStatusPatchTest, AnOversizedStatusLosesItsResourcesAndSaysSo) {
  json resources = json::array();
  for (int i = 0; i < 200; ++i) {
    resources.push_back({{"kind", "ConfigMap"}, {"name", "cm-" + std::to_string(i)}});
  }
  StatusPatchSettings settings;
  settings.max_status_bytes = 2000;
  auto patch = BuildStatusPatch(json{{"resources", resources}, {"health", {{"status", "Healthy"}}}},
                                settings, kNow);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_TRUE((*patch)["status"]["resources"].is_null());
  EXPECT_EQ((*patch)["status"]["conditions"][0]["type"], "UnknownError");
  EXPECT_EQ((*patch)["status"]["health"]["status"], "Healthy");
}

TEST(BuildStatusPatchTest, RejectsANonObjectStatus) {
  EXPECT_EQ(BuildStatusPatch(json::array(), {}, kNow).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProgressingFirstTest, OnlyAHealthyStatusAfterAnotherHealthNeedsIt) {
  const json healthy = {{"health", {{"status", "Healthy"}}}};
  EXPECT_TRUE(NeedsProgressingFirst(healthy, std::nullopt)) << "the first write";
  EXPECT_TRUE(NeedsProgressingFirst(healthy, "Missing"));
  EXPECT_TRUE(NeedsProgressingFirst(healthy, "Degraded"));
  EXPECT_FALSE(NeedsProgressingFirst(healthy, "Healthy"));
  EXPECT_FALSE(NeedsProgressingFirst(healthy, "Progressing"));
  EXPECT_FALSE(NeedsProgressingFirst(json{{"health", {{"status", "Degraded"}}}}, std::nullopt));
  EXPECT_FALSE(NeedsProgressingFirst(json{{"sync", {{"status", "Synced"}}}}, std::nullopt));
  EXPECT_FALSE(NeedsProgressingFirst(json{{"health", "Healthy"}}, std::nullopt));
}

TEST(ProgressingFirstTest, TheProgressingPatchDiffersOnlyInHealthStatus) {
  const json spoke = {{"health", {{"status", "Healthy"}, {"message", "all good"}}},
                      {"sync", {{"status", "Synced"}, {"revision", "abc"}}}};
  auto patch = BuildStatusPatch(spoke, {}, kNow);
  ASSERT_TRUE(patch.ok()) << patch.status();
  json progressing = ProgressingPatch(*patch);
  EXPECT_EQ(progressing["status"]["health"]["status"], "Progressing");
  EXPECT_EQ(HealthOf(progressing["status"]), "Progressing");
  progressing["status"]["health"]["status"] = "Healthy";
  EXPECT_EQ(progressing, *patch);
}

}  // namespace
}  // namespace mmi::status_sink
