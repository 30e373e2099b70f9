#include "libs/transport/grpc/maestro_resource_bundles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

constexpr char kId[] = "0d2ab5c1-6f2e-5d7a-9c3b-1e2f3a4b5c6d";

// Answers with one scripted response and records the request.
struct OneAnswer {
  explicit OneAnswer(absl::StatusOr<RestResponse> first) : answer(std::move(first)) {}
  std::vector<RestRequest> requests;
  absl::StatusOr<RestResponse> answer;

  RestSender AsSender() {
    return [this](const RestRequest& request) -> absl::StatusOr<RestResponse> {
      requests.push_back(request);
      return answer;
    };
  }
};

MaestroRestSettings Settings() {
  MaestroRestSettings s;
  s.base_url = "http://maestro:8000/";
  return s;
}

TEST(MaestroResourceBundlesTest, AHeldResourceExistsEvenWhileMarkedDeleting) {
  OneAnswer sender(RestResponse{
      200, R"({"id":"x","kind":"ResourceBundle","deleted_at":"2026-11-28T00:00:00Z"})"});
  MaestroResourceBundles bundles(Settings(), sender.AsSender());
  EXPECT_EQ(bundles.Exists(kId).value(), true);
  ASSERT_EQ(sender.requests.size(), 1U);
  EXPECT_EQ(sender.requests[0].method, "GET");
  EXPECT_EQ(sender.requests[0].url,
            std::string("http://maestro:8000/api/maestro/v1/resource-bundles/") + kId);
}

TEST(MaestroResourceBundlesTest, NotFoundMeansGone) {
  OneAnswer sender(
      RestResponse{404, R"({"kind":"Error","code":"maestro-7","reason":"Resource not found"})"});
  MaestroResourceBundles bundles(Settings(), sender.AsSender());
  EXPECT_EQ(bundles.Exists(kId).value(), false);
}

TEST(MaestroResourceBundlesTest, ServerErrorsAreRetryableAndRefusalsAreNot) {
  OneAnswer sender(RestResponse{503, "upstream connect error"});
  MaestroResourceBundles bundles(Settings(), sender.AsSender());
  absl::StatusOr<bool> exists = bundles.Exists(kId);
  EXPECT_TRUE(absl::IsUnavailable(exists.status())) << exists.status();
  EXPECT_THAT(exists.status().message(), HasSubstr("answered 503"));

  sender.answer = RestResponse{401, R"({"code":"maestro-11","reason":"unauthorized"})"};
  exists = bundles.Exists(kId);
  EXPECT_TRUE(absl::IsFailedPrecondition(exists.status())) << exists.status();
  EXPECT_THAT(exists.status().message(), HasSubstr("maestro-11 unauthorized"));

  sender.answer = absl::DeadlineExceededError("GET timed out");
  EXPECT_TRUE(absl::IsDeadlineExceeded(bundles.Exists(kId).status()));
}

TEST(MaestroResourceBundlesTest, RefusesWhatIsNotAResourceIdWithoutCallingMaestro) {
  OneAnswer sender(RestResponse{200, "{}"});
  MaestroResourceBundles bundles(Settings(), sender.AsSender());
  EXPECT_TRUE(absl::IsInvalidArgument(bundles.Exists("../consumers").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(bundles.Exists("").status()));
  EXPECT_TRUE(sender.requests.empty());
}

}  // namespace
}  // namespace mmi::transport
