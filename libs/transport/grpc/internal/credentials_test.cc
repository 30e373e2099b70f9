#include "libs/transport/grpc/internal/credentials.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"

namespace mmi::transport::internal {
namespace {

// The texts of the pinned Maestro server and of gRPC 1.51's client, as seen against the real
// server (tests/integration/maestro/maestro_auth_test.cc).
TEST(ClassifyRefusalTest, TellsMaestrosRefusalsFromOtherFailures) {
  using grpc::StatusCode;
  const auto classify = [](StatusCode code, const std::string& text, bool tls = true) {
    return ClassifyRefusal(grpc::Status(code, text), tls);
  };
  EXPECT_EQ(classify(StatusCode::UNAUTHENTICATED, "invalid token"), Refusal::kAuthentication);
  EXPECT_EQ(classify(StatusCode::UNKNOWN, "token not authenticated"), Refusal::kAuthentication);
  EXPECT_EQ(classify(StatusCode::UNKNOWN, "unauthorized to publish the event from source s"),
            Refusal::kAuthorization);
  EXPECT_EQ(classify(StatusCode::UNKNOWN, "unauthorized to subscribe the event from source s"),
            Refusal::kAuthorization);
  EXPECT_EQ(classify(StatusCode::PERMISSION_DENIED, "no"), Refusal::kAuthorization);
  const std::string after_handshake =
      "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:1: Endpoint "
      "read failed";
  EXPECT_EQ(classify(StatusCode::UNAVAILABLE, after_handshake), Refusal::kTls);
  EXPECT_EQ(classify(StatusCode::UNAVAILABLE, after_handshake, /*tls=*/false), Refusal::kNone);
  EXPECT_EQ(classify(StatusCode::UNAVAILABLE, "Ssl handshake failed: CERTIFICATE_VERIFY_FAILED"),
            Refusal::kTls);
  EXPECT_EQ(classify(StatusCode::UNAVAILABLE,
                     "failed to connect to all addresses; last error: UNAVAILABLE: "
                     "ipv4:127.0.0.1:1: Connection refused"),
            Refusal::kNone);
  EXPECT_EQ(classify(StatusCode::UNKNOWN, "failed to get resource: maestro-7: not found"),
            Refusal::kNone);
}

TEST(RefusalLogTest, CountsEveryRefusalAndLogsOncePerOutage) {
  prometheus::Registry registry;
  TransportMetrics metrics(registry, "grpc", ClientRole::kSubscriber);
  const log::Logger logger("transport.grpc");
  mmi::testing::LogCapture logs;
  RefusalLog refusals(logger, metrics, "subscriber");
  const grpc::Status refused(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  for (int i = 0; i < 3; ++i) {
    refusals.Refused(Refusal::kAuthentication, refused);
  }
  EXPECT_TRUE(refusals.refused());
  refusals.Accepted();
  refusals.Accepted();
  refusals.Refused(Refusal::kAuthentication, refused);
  EXPECT_EQ(transport::testing::MetricValue(registry, "mmi_transport_auth_failures_total",
                                            {{"client", "subscriber"}}),
            4.0);
  const std::string text = logs.text();
  int refused_lines = 0;
  int accepted_lines = 0;
  for (size_t at = 0; (at = text.find("Maestro refused our credentials", at)) != std::string::npos;
       ++at) {
    ++refused_lines;
  }
  for (size_t at = 0; (at = text.find("accepts our credentials again", at)) != std::string::npos;
       ++at) {
    ++accepted_lines;
  }
  EXPECT_EQ(refused_lines, 2) << text;  // one per outage
  EXPECT_EQ(accepted_lines, 1) << text;
  EXPECT_NE(text.find("\"check\":"), std::string::npos) << text;
}

class BearerTokenTest : public ::testing::Test {
 protected:
  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_ = ::testing::TempDir() + "/bearer-token-test";
  mmi::testing::FakeClock clock_;
};

TEST_F(BearerTokenTest, ReadsTheFileAgainWhenDueOrAfterARefusal) {
  Write("first\n");
  GrpcSettings settings;
  settings.token_file = path_;
  BearerToken token(settings, clock_, std::chrono::seconds(60));
  ASSERT_TRUE(token.Load().ok());
  EXPECT_EQ(token.Get(), "first");
  Write("second");
  EXPECT_EQ(token.Get(), "first");  // not due yet
  token.Invalidate();
  EXPECT_EQ(token.Get(), "second");  // after a refusal
  Write("third");
  clock_.Advance(std::chrono::seconds(61));
  EXPECT_EQ(token.Get(), "third");  // once a minute
  std::remove(path_.c_str());
  token.Invalidate();
  EXPECT_EQ(token.Get(), "third");  // an unreadable file keeps the last token
}

TEST_F(BearerTokenTest, AMissingFileAtStartNamesTheSetting) {
  GrpcSettings settings;
  settings.token_file = path_ + "-missing";
  BearerToken token(settings, clock_);
  const absl::Status loaded = token.Load();
  EXPECT_EQ(loaded.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(loaded.message().find("transport.grpc.tokenFile"), std::string::npos) << loaded;
}

TEST_F(BearerTokenTest, AFixedTokenIsSentAsIs) {
  GrpcSettings settings;
  settings.bearer_token = "t0ken";
  BearerToken token(settings, clock_);
  ASSERT_TRUE(token.Load().ok());
  EXPECT_EQ(token.Get(), "t0ken");
}

}  // namespace
}  // namespace mmi::transport::internal
