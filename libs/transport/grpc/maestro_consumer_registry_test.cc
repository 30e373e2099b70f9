#include "libs/transport/grpc/maestro_consumer_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "nlohmann/json.hpp"

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

// Answers every request with the next scripted response and records the requests.
struct ScriptedSender {
  std::vector<RestRequest> requests;
  std::vector<absl::StatusOr<RestResponse>> responses;

  RestSender AsSender() {
    return [this](const RestRequest& request) -> absl::StatusOr<RestResponse> {
      requests.push_back(request);
      absl::StatusOr<RestResponse> next = responses.front();
      responses.erase(responses.begin());
      return next;
    };
  }
};

MaestroRestSettings Settings() {
  MaestroRestSettings s;
  s.base_url = "http://maestro:8000/";
  return s;
}

TEST(MaestroConsumerRegistryTest, CreatesTheConsumerWithNameAndLabels) {
  ScriptedSender sender;
  sender.responses = {RestResponse{201, R"({"id":"0b0c","kind":"Consumer","name":"cluster1"})"}};
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  ASSERT_TRUE(registry.EnsureConsumer("cluster1", {{"env", "dev"}}).ok());
  ASSERT_EQ(sender.requests.size(), 1u);
  EXPECT_EQ(sender.requests[0].method, "POST");
  EXPECT_EQ(sender.requests[0].url, "http://maestro:8000/api/maestro/v1/consumers");
  const auto body = nlohmann::json::parse(sender.requests[0].body);
  EXPECT_EQ(body["name"], "cluster1");
  EXPECT_EQ(body["labels"]["env"], "dev");
  EXPECT_FALSE(body.contains("id"));
}

TEST(MaestroConsumerRegistryTest, AnExistingConsumerIsSuccess) {
  ScriptedSender sender;
  sender.responses = {RestResponse{
      409, R"({"kind":"Error","code":"maestro-6","reason":"This Consumer already exists"})"}};
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  EXPECT_TRUE(registry.EnsureConsumer("cluster1").ok());
}

// What the real server (tests/peers/maestro, pinned version) answers for an existing name.
TEST(MaestroConsumerRegistryTest, TheRealServersDuplicatedKeyErrorIsAnExistingConsumer) {
  ScriptedSender sender;
  sender.responses = {RestResponse{
      500, R"({"code":"maestro-9","href":"/api/maestro/v1/errors/9","id":"9","kind":"Error",)"
           R"("reason":"Unable to create Consumer: duplicated key not allowed"})"}};
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  EXPECT_TRUE(registry.EnsureConsumer("cluster1").ok());
}

TEST(MaestroConsumerRegistryTest, ServerErrorsAreRetryableAndClientErrorsAreNot) {
  ScriptedSender sender;
  sender.responses = {RestResponse{503, "upstream down"},
                      RestResponse{400, R"({"code":"maestro-17","reason":"malformed request"})"},
                      absl::UnavailableError("connection refused")};
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  EXPECT_EQ(registry.EnsureConsumer("cluster1").code(), absl::StatusCode::kUnavailable);
  const absl::Status bad = registry.EnsureConsumer("cluster1");
  EXPECT_EQ(bad.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("malformed request"));
  EXPECT_EQ(registry.EnsureConsumer("cluster1").code(), absl::StatusCode::kUnavailable);
}

TEST(MaestroConsumerRegistryTest, RefusesNamesMaestroWouldRejectWithoutCallingIt) {
  ScriptedSender sender;
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  const std::vector<std::string> bad_names = {"",   "Cluster1", "-a",
                                              "a-", "a.b",      std::string(64, 'a')};
  for (const std::string& bad : bad_names) {
    EXPECT_EQ(registry.EnsureConsumer(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(sender.requests.empty());
}

TEST(MaestroConsumerRegistryTest, ConsumerExistsSearchesByName) {
  ScriptedSender sender;
  sender.responses = {
      RestResponse{200, R"({"kind":"ConsumerList","items":[{"id":"1","name":"cluster1"}]})"},
      RestResponse{200, R"({"kind":"ConsumerList","items":[]})"}};
  MaestroConsumerRegistry registry(Settings(), sender.AsSender());
  absl::StatusOr<bool> known = registry.ConsumerExists("cluster1");
  absl::StatusOr<bool> unknown = registry.ConsumerExists("cluster2");
  ASSERT_TRUE(known.ok() && unknown.ok());
  EXPECT_TRUE(*known);
  EXPECT_FALSE(*unknown);
  EXPECT_THAT(sender.requests[0].url, HasSubstr("search=name%3D%27cluster1%27"));
}

}  // namespace
}  // namespace mmi::transport
