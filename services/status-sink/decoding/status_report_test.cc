#include "services/status-sink/decoding/status_report.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "services/status-sink/decoding/decode.h"
#include "services/status-sink/decoding/one_pass_decoder.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;

constexpr char kResource[] = "278f3a61-efe5-56de-abba-6aedbfcce272";

json ResourceStatus(const json& feedback_values) {
  return json::array({{{"resourceMeta",
                        {{"ordinal", 0},
                         {"group", "argoproj.io"},
                         {"version", "v1alpha1"},
                         {"kind", "Application"},
                         {"resource", "applications"},
                         {"name", "guestbook-cluster1"},
                         {"namespace", "openshift-gitops"}}},
                       {"statusFeedback", {{"values", feedback_values}}},
                       {"conditions", json::array()}}});
}

json Condition(const std::string& type) {
  return json::array({{{"type", type},
                       {"status", "True"},
                       {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                       {"reason", "Test"},
                       {"message", ""}}});
}

// The data of a status event whose Application reports `health`, and the feedback values
// `more` after its status.
std::string FeedbackData(const std::string& health, const json& more = json::array()) {
  const json status = {{"health", {{"status", health}}}, {"sync", {{"status", "Synced"}}}};
  json values = json::array(
      {{{"name", "status"}, {"fieldValue", {{"type", "JsonRaw"}, {"jsonRaw", status.dump()}}}}});
  values.insert(values.end(), more.begin(), more.end());
  return json{{"conditions", Condition("Applied")}, {"resourceStatus", ResourceStatus(values)}}
      .dump();
}

json DispatchVersion(const json& field_value) {
  return json{{"name", "dispatchVersion"}, {"fieldValue", field_value}};
}

cloudevents::SequenceId Sequence() {
  return *cloudevents::SequenceId::FromParts(500'000'000'001, 1, 0);
}

// A status event as Maestro relays it (maestro-protocol.md §2.7).
cloudevents::Event StatusEvent(const std::string& data = FeedbackData("Healthy")) {
  cloudevents::Event event;
  event.id = "status-1";
  event.source = "cluster1-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = cloudevents::Timestamp(std::chrono::seconds(1'780'308'000));
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  event.SetString(cloudevents::kExtOriginalSource, "maestro");
  event.SetString(cloudevents::kExtResourceId, kResource);
  event.SetString(cloudevents::kExtResourceVersion, "1");
  event.SetString(cloudevents::kExtSequenceId, Sequence().ToString());
  event.SetString(cloudevents::kExtStatusHash, "agent-hash");
  event.data = data;
  return event;
}

StatusReport Decoded(const cloudevents::Event& event) {
  auto got = DecodeStatusReport(event);
  EXPECT_TRUE(std::holds_alternative<StatusReport>(got)) << std::get<Rejection>(got).detail;
  return std::holds_alternative<StatusReport>(got) ? std::get<StatusReport>(std::move(got))
                                                   : StatusReport{};
}

DropReason RejectedAs(const cloudevents::Event& event) {
  auto got = DecodeStatusReport(event);
  EXPECT_TRUE(std::holds_alternative<Rejection>(got));
  return std::holds_alternative<Rejection>(got) ? std::get<Rejection>(got).reason
                                                : DropReason::kStale;
}

TEST(StatusReportTest, CarriesTheResourceClusterSequenceHashAndStatusOfTheEvent) {
  StatusReport report = Decoded(StatusEvent());
  EXPECT_EQ(report.update.resource_id, kResource);
  EXPECT_EQ(report.cluster, "cluster1");
  EXPECT_EQ(report.event_id, "status-1");
  EXPECT_EQ(report.update.sequence_id, Sequence().Value());
  EXPECT_EQ(report.update.status_hash, "agent-hash");
  EXPECT_FALSE(report.update.deleted);
  // The one-pass decoder keeps the status as its text, with its material hash.
  EXPECT_TRUE(report.update.status.is_null());
  EXPECT_FALSE(report.update.status_text.empty());
  EXPECT_EQ(StatusTree(report.update)["health"]["status"], "Healthy");
  EXPECT_EQ(report.update.material_hash, MaterialHash(report.update.status, false));
  ASSERT_TRUE(report.update.event_time.has_value());
  EXPECT_EQ(report.update.event_time->time_since_epoch(), std::chrono::seconds(1'780'308'000));
  EXPECT_EQ(report.metadata_app, "");
}

TEST(StatusReportTest, TheResourceIdIsLowerCased) {
  cloudevents::Event event = StatusEvent();
  event.SetString(cloudevents::kExtResourceId, "278F3A61-EFE5-56DE-ABBA-6AEDBFCCE272");
  EXPECT_EQ(Decoded(event).update.resource_id, kResource);
}

TEST(StatusReportTest, WithoutASequenceIdTheReportHasNone) {
  cloudevents::Event event = StatusEvent();
  event.extensions.erase(std::string(cloudevents::kExtSequenceId));
  EXPECT_FALSE(Decoded(event).update.sequence_id.has_value());
}

TEST(StatusReportTest, WithoutAStatusHashTheHashIsComputedFromThePayload) {
  cloudevents::Event event = StatusEvent();
  event.SetString(cloudevents::kExtStatusHash, "");
  const std::string expected = *cloudevents::StatusHashOfData(json::parse(*event.data));
  EXPECT_EQ(Decoded(event).update.status_hash, expected);
}

TEST(StatusReportTest, ADeletedReportCarriesNoStatus) {
  StatusReport report = Decoded(StatusEvent(json{{"conditions", Condition("Deleted")}}.dump()));
  EXPECT_TRUE(report.update.deleted);
  EXPECT_TRUE(report.update.status.is_null());
}

TEST(StatusReportTest, NamesTheHubApplicationOfTheManifestWorkMetadata) {
  cloudevents::Event event = StatusEvent();
  cloudevents::ObjectMeta meta;
  meta.name = "work";
  meta.annotations = {{"apps.open-cluster-management.io/hub-application-namespace", "hub-ns"},
                      {"apps.open-cluster-management.io/hub-application-name", "guestbook"}};
  ASSERT_TRUE(cloudevents::SetObjectMeta(event, meta).ok());
  EXPECT_EQ(Decoded(event).metadata_app, "hub-ns/guestbook");
}

TEST(StatusReportTest, MetadataWithoutBothAnnotationsNamesNoApplication) {
  cloudevents::Event event = StatusEvent();
  cloudevents::ObjectMeta meta;
  meta.name = "work";
  meta.annotations = {{"apps.open-cluster-management.io/hub-application-name", "guestbook"}};
  ASSERT_TRUE(cloudevents::SetObjectMeta(event, meta).ok());
  EXPECT_EQ(Decoded(event).metadata_app, "");
}

TEST(StatusReportTest, AnEventThatIsNotAStatusUpdateIsRejectedAsNotStatus) {
  cloudevents::Event event = StatusEvent();
  event.type = std::string(cloudevents::kSpecResyncRequestType);
  EXPECT_EQ(RejectedAs(event), DropReason::kNotStatus);
}

TEST(StatusReportTest, AnEventWithoutAResourceIdIsMalformed) {
  cloudevents::Event event = StatusEvent();
  event.extensions.erase(std::string(cloudevents::kExtResourceId));
  EXPECT_EQ(RejectedAs(event), DropReason::kMalformed);
}

TEST(StatusReportTest, AnUnparsableSequenceIdIsMalformed) {
  cloudevents::Event event = StatusEvent();
  event.SetString(cloudevents::kExtSequenceId, "not-a-number");
  EXPECT_EQ(RejectedAs(event), DropReason::kMalformed);
}

TEST(StatusReportTest, DataThatIsNotAManifestBundleStatusIsMalformed) {
  EXPECT_EQ(RejectedAs(StatusEvent("{not json")), DropReason::kMalformed);
}

TEST(StatusReportTest, AStatusFeedbackThatIsNotJsonRawIsMalformed) {
  const std::string data =
      json{{"conditions", Condition("Applied")},
           {"resourceStatus",
            ResourceStatus(json::array(
                {{{"name", "status"}, {"fieldValue", {{"type", "String"}, {"string", "x"}}}}}))}}
          .dump();
  EXPECT_EQ(RejectedAs(StatusEvent(data)), DropReason::kMalformed);
}

TEST(StatusReportTest, AReportWithoutStatusFeedbackYetIsRejectedAsNoFeedback) {
  const std::string data =
      json{{"conditions", Condition("Applied")}, {"resourceStatus", ResourceStatus(json::array())}}
          .dump();
  EXPECT_EQ(RejectedAs(StatusEvent(data)), DropReason::kNoFeedback);
}

// A spoke Application no Argo CD reported on (a spoke without Argo CD, in the first step of a
// hand-over to manifest delivery, ADR 0007): its agent reports the dispatch version it applied
// and no status. Both paths keep the acknowledgement alone.
TEST(StatusReportTest, AnAcknowledgementWithoutStatusIsKeptAloneOnBothPaths) {
  const auto event = StatusEvent(
      json{{"conditions", Condition("Applied")},
           {"resourceStatus",
            ResourceStatus(json::array({DispatchVersion({{"type", "String"}, {"string", "4"}})}))}}
          .dump());
  const StatusReport decoded = Decoded(event);
  EXPECT_TRUE(decoded.update.ack_only);
  EXPECT_EQ(decoded.update.acked_version, 4);
  EXPECT_TRUE(decoded.update.status.is_null());
  EXPECT_TRUE(decoded.update.status_text.empty());
  EXPECT_EQ(decoded.update.status_hash, "agent-hash");
  auto full = DecodeStatusReportFull(event);
  ASSERT_TRUE(std::holds_alternative<StatusReport>(full));
  EXPECT_TRUE(std::get<StatusReport>(full).update.ack_only);
  EXPECT_EQ(std::get<StatusReport>(full).update.acked_version, 4);
  EXPECT_TRUE(std::get<StatusReport>(full).update.status.is_null());
  // The one-pass decoder answers it itself (the full path is only its fallback).
  OnePassDecoder one_pass;
  auto fast = one_pass.Decode(event, false);
  ASSERT_TRUE(fast.has_value());
  ASSERT_TRUE(std::holds_alternative<StatusReport>(*fast));
  EXPECT_TRUE(std::get<StatusReport>(*fast).update.ack_only);
  EXPECT_EQ(std::get<StatusReport>(*fast).update.acked_version, 4);
  // A full report is no acknowledgement alone.
  EXPECT_FALSE(Decoded(StatusEvent()).update.ack_only);
}

TEST(StatusReportTest, AnAcknowledgementAloneThatIsNoDispatchVersionIsNoFeedback) {
  for (const json& value :
       {json{{"type", "String"}, {"string", "x"}}, json{{"type", "Boolean"}, {"boolean", true}}}) {
    SCOPED_TRACE(value.dump());
    const auto event =
        StatusEvent(json{{"conditions", Condition("Applied")},
                         {"resourceStatus", ResourceStatus(json::array({DispatchVersion(value)}))}}
                        .dump());
    EXPECT_EQ(RejectedAs(event), DropReason::kNoFeedback);
    auto full = DecodeStatusReportFull(event);
    ASSERT_TRUE(std::holds_alternative<Rejection>(full));
    EXPECT_EQ(std::get<Rejection>(full).reason, DropReason::kNoFeedback);
  }
}

TEST(StatusReportTest, CarriesTheDispatchVersionTheAgentReportsOnBothPaths) {
  struct Case {
    std::string name;
    json more;  // feedback values after the status
    std::optional<int32_t> want;
    std::string error;  // what acked_version_error must say; "" = none
  };
  const std::string app = "Application openshift-gitops/guestbook-cluster1";
  const std::string range = ", expected a dispatch version from 0 to 2147483647";
  const std::vector<Case> cases = {
      {"String", json::array({DispatchVersion({{"type", "String"}, {"string", "7"}})}), 7, ""},
      {"Integer", json::array({DispatchVersion({{"type", "Integer"}, {"integer", 7}})}), 7, ""},
      {"absent", json::array(), std::nullopt, ""},
      {"not a number", json::array({DispatchVersion({{"type", "String"}, {"string", "x"}})}),
       std::nullopt, app + " is String \"x\"" + range},
      {"negative", json::array({DispatchVersion({{"type", "Integer"}, {"integer", -1}})}),
       std::nullopt, app + " is Integer -1" + range},
      {"beyond int32",
       json::array({DispatchVersion({{"type", "String"}, {"string", "2147483648"}})}), std::nullopt,
       app + " is String \"2147483648\"" + range},
      {"long, cut in the error",
       json::array({DispatchVersion({{"type", "String"}, {"string", std::string(40, '9')}})}),
       std::nullopt, app + " is String \"" + std::string(32, '9') + "...\"" + range},
      {"not printable",
       json::array({DispatchVersion({{"type", "String"}, {"string", "7\n\u00e9"}})}), std::nullopt,
       app + " is String \"7\\n\\xc3\\xa9\"" + range},
      {"Boolean", json::array({DispatchVersion({{"type", "Boolean"}, {"boolean", true}})}),
       std::nullopt, app + " is Boolean, expected String or Integer"},
      {"JsonRaw", json::array({DispatchVersion({{"type", "JsonRaw"}, {"jsonRaw", "7"}})}),
       std::nullopt, app + " is JsonRaw, expected String or Integer"},
      {"the first counts",
       json::array({DispatchVersion({{"type", "String"}, {"string", "3"}}),
                    DispatchVersion({{"type", "String"}, {"string", "4"}})}),
       3, ""},
      {"the first counts, refused",
       json::array({DispatchVersion({{"type", "String"}, {"string", "x"}}),
                    DispatchVersion({{"type", "String"}, {"string", "4"}})}),
       std::nullopt, app + " is String \"x\"" + range},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto event = StatusEvent(FeedbackData("Healthy", c.more));
    // A refused version is never a rejection: the report and its status stand.
    const StatusReport decoded = Decoded(event);
    EXPECT_EQ(decoded.update.acked_version, c.want);
    auto full = DecodeStatusReportFull(event);
    ASSERT_TRUE(std::holds_alternative<StatusReport>(full));
    const auto& report = std::get<StatusReport>(full);
    EXPECT_EQ(report.update.acked_version, c.want);
    EXPECT_EQ(report.update.status["health"]["status"], "Healthy");
    if (c.error.empty()) {
      EXPECT_EQ(report.acked_version_error, "");
    } else {
      EXPECT_EQ(report.acked_version_error,
                "statusFeedback value \"dispatchVersion\" of " + c.error +
                    (c.error.ends_with(range) ? " (check the spoke Application's annotation "
                                                "apps.open-cluster-management.io/dispatch-version)"
                                              : " (check the work's feedbackRules)"));
    }
    EXPECT_EQ(decoded.acked_version_error, report.acked_version_error);
  }
}

TEST(StatusReportTest, OnlyTheDispatchVersionOfTheApplicationWhoseStatusIsReadCounts) {
  json data = json::parse(FeedbackData("Healthy"));
  // A version on another kind of manifest, before the Application's.
  json other =
      ResourceStatus(json::array({DispatchVersion({{"type", "String"}, {"string", "9"}})}))[0];
  other["resourceMeta"]["kind"] = "ConfigMap";
  other["resourceMeta"]["group"] = "";
  data["resourceStatus"].insert(data["resourceStatus"].begin(), other);
  EXPECT_EQ(Decoded(StatusEvent(data.dump())).update.acked_version, std::nullopt);
  // The Application's own, listed before its status.
  data["resourceStatus"][1]["statusFeedback"]["values"].insert(
      data["resourceStatus"][1]["statusFeedback"]["values"].begin(),
      DispatchVersion({{"type", "String"}, {"string", "5"}}));
  EXPECT_EQ(Decoded(StatusEvent(data.dump())).update.acked_version, 5);
}

TEST(StatusReportTest, ADeletedReportCarriesNoDispatchVersion) {
  json data = json::parse(FeedbackData(
      "Healthy", json::array({DispatchVersion({{"type", "String"}, {"string", "7"}})})));
  data["conditions"] = Condition("Deleted");
  StatusReport report = Decoded(StatusEvent(data.dump()));
  EXPECT_TRUE(report.update.deleted);
  EXPECT_EQ(report.update.acked_version, std::nullopt);
}

TEST(AckedVersionOfTest, ReadsDecimalDigitsAndIntegersWithinInt32) {
  const std::vector<std::pair<std::string, std::optional<int32_t>>> texts = {
      {"7", 7},
      {"0", 0},
      {"007", 7},
      {"2147483647", std::numeric_limits<int32_t>::max()},
      {"2147483648", std::nullopt},
      {"99999999999999999999", std::nullopt},
      {"", std::nullopt},
      {"-1", std::nullopt},
      {"+7", std::nullopt},
      {" 7", std::nullopt},
      {"7 ", std::nullopt},
      {"7a", std::nullopt},
      {"0x7", std::nullopt},
      {"7.0", std::nullopt}};
  for (const auto& [text, want] : texts) {
    EXPECT_EQ(AckedVersionOf(std::string_view(text)), want) << "\"" << text << "\"";
  }
  const std::vector<std::pair<int64_t, std::optional<int32_t>>> integers = {
      {7, 7},
      {0, 0},
      {-1, std::nullopt},
      {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::max()},
      {int64_t{std::numeric_limits<int32_t>::max()} + 1, std::nullopt},
      {std::numeric_limits<int64_t>::min(), std::nullopt}};
  for (const auto& [value, want] : integers) {
    EXPECT_EQ(AckedVersionOf(value), want) << value;
  }
}

cloudevents::ManifestBundleStatus WithFeedback(cloudevents::FieldValue value) {
  cloudevents::ManifestCondition manifest;
  manifest.resource_meta.group = "argoproj.io";
  manifest.resource_meta.kind = "Application";
  manifest.resource_meta.name = "guestbook";
  manifest.resource_meta.namespace_ = "argocd";
  manifest.status_feedback.push_back({"status", std::move(value)});
  cloudevents::ManifestBundleStatus status;
  status.resource_status.push_back(std::move(manifest));
  return status;
}

TEST(FeedbackStatusTest, ReturnsTheJsonRawStatusOfTheApplication) {
  cloudevents::FieldValue value;
  value.type = cloudevents::FieldValueType::kJsonRaw;
  value.json_raw = R"({"sync":{"status":"Synced"}})";
  value.json_raw_value = json::parse(value.json_raw);
  auto got = FeedbackStatus(WithFeedback(value));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((**got)["sync"]["status"], "Synced");
}

TEST(FeedbackStatusTest, NoFeedbackYetIsNotAnError) {
  auto got = FeedbackStatus(cloudevents::ManifestBundleStatus{});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

TEST(FeedbackStatusTest, AFeedbackOfTheWrongTypeIsInvalid) {
  cloudevents::FieldValue value;
  value.type = cloudevents::FieldValueType::kString;
  value.string = "Synced";
  EXPECT_EQ(FeedbackStatus(WithFeedback(value)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Manifest delivery: the version stamped into the work's metadata counts once the agent's
// Applied condition observed that metadata's generation.
TEST(StatusReportTest, ABundleAcknowledgesTheStampOfTheGenerationItApplied) {
  struct Row {
    std::string name;
    std::optional<std::string> stamp;  // the dispatch-version annotation; nullopt: none
    std::string applied_status;        // "" = no Applied condition
    int64_t observed_generation;
    bool with_metadata;
    std::optional<int32_t> acked;
  };
  const std::vector<Row> rows = {
      {"applied, stamped", "7", "True", 4, true, 7},
      {"an older generation applied", "7", "True", 3, true, std::nullopt},
      {"not applied", "7", "False", 4, true, std::nullopt},
      {"no Applied condition yet", "7", "", 0, true, std::nullopt},
      {"no stamp (an older dispatcher)", std::nullopt, "True", 4, true, std::nullopt},
      {"a stamp that is no version", "seven", "True", 4, true, std::nullopt},
      {"no metadata", "7", "True", 4, false, std::nullopt},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    json conditions = json::array();
    if (!row.applied_status.empty()) {
      conditions.push_back({{"type", "Applied"},
                            {"status", row.applied_status},
                            {"observedGeneration", row.observed_generation},
                            {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                            {"reason", "Test"},
                            {"message", ""}});
    }
    cloudevents::Event event =
        StatusEvent(json{{"conditions", conditions}, {"resourceStatus", json::array()}}.dump());
    if (row.with_metadata) {
      cloudevents::ObjectMeta meta;
      meta.name = "work";
      meta.generation = 4;
      if (row.stamp) {
        meta.annotations["apps.open-cluster-management.io/dispatch-version"] = *row.stamp;
      }
      ASSERT_TRUE(cloudevents::SetObjectMeta(event, meta).ok());
    }
    auto got = DecodeBundleReport(event);
    ASSERT_TRUE(std::holds_alternative<StatusReport>(got)) << std::get<Rejection>(got).detail;
    EXPECT_EQ(std::get<StatusReport>(got).update.acked_version, row.acked);
  }
}

// What ManifestStatuses holds of a bundle report: the agent's text as it came, unless the
// event echoes the spec (Maestro's gRPC source server), which is not to be held.
TEST(StatusReportTest, ABundleReportKeepsTheAgentsTextWithoutASpecEcho) {
  const json conditions = json::array({{{"type", "Applied"},
                                        {"status", "True"},
                                        {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                                        {"reason", "Test"},
                                        {"message", ""}}});
  const std::string plain =
      json{{"conditions", conditions}, {"resourceStatus", json::array()}}.dump();
  auto got = DecodeBundleReport(StatusEvent(plain));
  ASSERT_TRUE(std::holds_alternative<StatusReport>(got));
  EXPECT_EQ(std::get<StatusReport>(got).bundle_text, plain);

  json echoed = json::parse(plain);
  echoed["manifestBundle"] = {{"manifests", json::array()}};
  got = DecodeBundleReport(StatusEvent(echoed.dump()));
  ASSERT_TRUE(std::holds_alternative<StatusReport>(got));
  ASSERT_NE(std::get<StatusReport>(got).bundle_status, nullptr);
  EXPECT_TRUE(std::get<StatusReport>(got).bundle_status->manifest_bundle.has_value());
  EXPECT_EQ(std::get<StatusReport>(got).bundle_text, "");
}

}  // namespace
}  // namespace mmi::status_sink
