#include "libs/kube/errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mmi::kube {
namespace {

using ::testing::HasSubstr;

std::string ApiStatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

struct Case {
  long http;
  std::string reason;
  absl::StatusCode expected;
};

TEST(StatusFromHttpTest, MapsEachApiServerStatusToItsDocumentedCode) {
  const std::vector<Case> cases = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {405, "MethodNotAllowed", absl::StatusCode::kUnimplemented},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {409, "Conflict", absl::StatusCode::kAborted},
      {410, "Expired", absl::StatusCode::kOutOfRange},
      {413, "RequestEntityTooLarge", absl::StatusCode::kInvalidArgument},
      {415, "UnsupportedMediaType", absl::StatusCode::kInvalidArgument},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
      {500, "InternalError", absl::StatusCode::kUnavailable},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kDeadlineExceeded},
  };
  for (const auto& c : cases) {
    const absl::Status status =
        StatusFromHttp("GET", "/api/v1/x", c.http, ApiStatusBody(c.http, c.reason, "boom"));
    EXPECT_EQ(status.code(), c.expected) << c.http << " " << c.reason;
    EXPECT_EQ(HttpCodeOf(status), c.http);
    EXPECT_EQ(ApiReasonOf(status), c.reason);
  }
  EXPECT_TRUE(StatusFromHttp("GET", "/x", 200, "").ok());
  EXPECT_TRUE(StatusFromHttp("POST", "/x", 201, "{}").ok());
}

TEST(StatusFromHttpTest, MessageNamesVerbPathReasonAndServerMessage) {
  const absl::Status status =
      StatusFromHttp("PUT", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a", 409,
                     ApiStatusBody(409, "Conflict", "the object has been modified"));
  const std::string message(status.message());
  EXPECT_THAT(message,
              HasSubstr("PUT /apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a"));
  EXPECT_THAT(message, HasSubstr("HTTP 409 Conflict"));
  EXPECT_THAT(message, HasSubstr("the object has been modified"));
  EXPECT_TRUE(IsConflict(status));
  EXPECT_FALSE(IsGone(status));
}

TEST(StatusFromHttpTest, ListsValidationCausesInTheMessage) {
  nlohmann::json body = nlohmann::json::parse(ApiStatusBody(422, "Invalid", "invalid app"));
  body["details"]["causes"] = {{{"field", "spec.project"}, {"message", "Required value"}}};
  const absl::Status status = StatusFromHttp("POST", "/apis/x", 422, body.dump());
  EXPECT_THAT(std::string(status.message()), HasSubstr("spec.project: Required value"));
}

TEST(StatusFromHttpTest, KeepsTheStartOfANonJsonBody) {
  const absl::Status status = StatusFromHttp("GET", "/healthz", 502, "<html>bad gateway</html>");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("bad gateway"));
  EXPECT_EQ(HttpCodeOf(status), 502);
}

TEST(StatusFromApiStatusTest, TreatsAnErrorEventWithCode410AsGone) {
  const nlohmann::json event_object =
      nlohmann::json::parse(ApiStatusBody(410, "Expired", "too old resource version: 5 (10)"));
  const absl::Status status = StatusFromApiStatus("WATCH /apis/x", event_object);
  EXPECT_TRUE(IsGone(status));
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(status.message()), HasSubstr("too old resource version"));
}

TEST(StatusFromHttpTest, KeepsTheContinueTokenOfAnExpiredContinue) {
  const std::string body =
      R"({"kind":"Status","apiVersion":"v1","metadata":{"continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9"},)"
      R"("status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410})";
  const absl::Status status =
      StatusFromHttp("GET", "/apis/argoproj.io/v1alpha1/applications", 410, body);
  EXPECT_TRUE(IsGone(status));
  EXPECT_EQ(ContinueTokenOf(status), "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9");
  EXPECT_EQ(ContinueTokenOf(StatusFromHttp("GET", "/x", 410, ApiStatusBody(410, "Expired", "old"))),
            "");
  EXPECT_EQ(ContinueTokenOf(absl::OutOfRangeError("not from the API")), "");
}

TEST(StatusFromApiStatusTest, TreatsAStatusWithoutCodeAsInternalServerError) {
  const absl::Status status = StatusFromApiStatus("WATCH /x", nlohmann::json::object());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(IsGone(status));
}

TEST(HttpCodeOfTest, IsEmptyForStatusesMadeElsewhere) {
  EXPECT_FALSE(HttpCodeOf(absl::UnavailableError("x")).has_value());
  EXPECT_EQ(ApiReasonOf(absl::UnavailableError("x")), "");
  EXPECT_FALSE(IsGone(absl::OutOfRangeError("not from the API")));
}

}  // namespace
}  // namespace mmi::kube
