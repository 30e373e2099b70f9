// DecodeStatusReport (the one-pass decoder, falling back to the full path) gives exactly the
// answer of DecodeStatusReportFull: on every event the real work agent sent
// (../shared/spec/samples/captured/), on edge cases where simdjson and nlohmann could differ or
// the full path rejects, and on the status_report_fuzzer's checked-in corpus
// (fuzz/corpus/). And the one-pass decoder really answers for the agent's status updates.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/testing/captured.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/decoding/decode.h"
#include "services/status-sink/decoding/one_pass_decoder.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/decoding/testing/decode_check.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;
using testing::FuzzEnvelope;
using testing::kFuzzMetadata;
using testing::ReportDifference;

// "" when DecodeStatusReport answers as the full path does, for either material setting (its
// material hash is checked against MaterialHash() of the full path's tree).
std::string SameAnswer(const cloudevents::Event& event) {
  const auto full = DecodeStatusReportFull(event);
  return ReportDifference(full, DecodeStatusReport(event, false)) +
         ReportDifference(full, DecodeStatusReport(event, true));
}

std::vector<cloudevents::Event> CapturedEvents() {
  std::vector<cloudevents::Event> events;
  for (auto file :
       {cloudevents::testing::kCapturedAgentEvents, cloudevents::testing::kCapturedSourceEvents}) {
    auto records = cloudevents::testing::ReadCaptured(file);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) {
      continue;
    }
    for (const auto& record : *records) {
      auto event = cloudevents::DecodeMqtt(record.message);
      EXPECT_TRUE(event.ok()) << file << ":" << record.line << ": " << event.status();
      if (event.ok()) {
        events.push_back(*std::move(event));
      }
    }
  }
  return events;
}

TEST(StatusReportEquivalenceTest, EveryCapturedEventDecodesAlikeOnBothPaths) {
  const auto events = CapturedEvents();
  ASSERT_GE(events.size(), 60u);
  OnePassDecoder one_pass;
  int status_updates = 0;
  for (const auto& event : events) {
    SCOPED_TRACE(event.id);
    EXPECT_EQ(SameAnswer(event), "");
    if (event.type == cloudevents::kStatusUpdateRequestType) {
      ++status_updates;
      EXPECT_TRUE(one_pass.Decode(event).has_value()) << "the one-pass decoder did not answer";
    }
  }
  EXPECT_GT(status_updates, 20);
}

// The first captured status update that carries the Application's status feedback.
cloudevents::Event CapturedStatusUpdate() {
  static const cloudevents::Event kEvent = [] {
    for (auto& event : CapturedEvents()) {
      if (event.type == cloudevents::kStatusUpdateRequestType && event.data.has_value() &&
          event.data->find("jsonRaw") != std::string::npos) {
        return event;
      }
    }
    ADD_FAILURE() << "no captured status update with feedback";
    return cloudevents::Event{};
  }();
  return kEvent;
}

// `data` of the captured status update with the feedback's jsonRaw replaced by `raw`.
std::string WithFeedback(const std::string& raw) {
  json data = json::parse(*CapturedStatusUpdate().data);
  for (auto& manifest : data["resourceStatus"]) {
    for (auto& value : manifest["statusFeedback"]["values"]) {
      value["fieldValue"]["jsonRaw"] = raw;
    }
  }
  return data.dump();
}

std::string Nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']');
}

TEST(StatusReportEquivalenceTest, FeedbackEdgeCasesDecodeAlike) {
  const std::vector<std::string> raws = {R"({"n":-0})",
                                         R"({"n":-0.0})",
                                         R"({"n":1.0})",
                                         R"({"n":1e2})",
                                         R"({"n":-5})",
                                         R"({"n":18446744073709551615})",
                                         R"({"n":18446744073709551616})",
                                         R"({"n":-9223372036854775809})",
                                         R"({"n":1e400})",
                                         R"({"n":1e-400})",
                                         R"({"a":1,"a":2})",
                                         R"({"a":{"b":1},"a":[2]})",
                                         R"({"s":"\ud800"})",
                                         R"({"s":"\ud83d\ude00"})",
                                         "{\"s\":\"a\tb\"}",
                                         "{ \"pretty\": true }\n",
                                         R"([1])",
                                         R"("text")",
                                         R"({})",
                                         R"({"s":"\u0000"})",
                                         R"({"s":"\u003c&"})",
                                         "not json",
                                         "",
                                         "{\"a\":" + Nested(98) + "}",
                                         "{\"a\":" + Nested(99) + "}",
                                         "{\"a\":" + Nested(100) + "}",
                                         "\xEF\xBB\xBF{}",
                                         R"({"health":{"status":"Healthy"}} x)"};
  for (const auto& raw : raws) {
    SCOPED_TRACE(raw);
    auto event = CapturedStatusUpdate();
    event.data = WithFeedback(raw);
    EXPECT_EQ(SameAnswer(event), "");
  }
}

// Statuses whose material hash the one-pass decoder writes itself (what is left out, key order,
// text): it must answer for each, with its hash, and that hash must be the full path's.
TEST(StatusReportEquivalenceTest, MaterialHashesOfTheOnePassDecoderAreTheFullPaths) {
  const std::vector<std::string> raws = {
      R"({"reconciledAt":"x","sync":{"status":"Synced"},)"
      R"("observedAt":"y","controllerNamespace":"argocd",)"
      R"("b":[1,{"z":1,"a":2}]})",
      R"({"reconciledAt":1,"reconciledAt":2,"a":1})",
      R"({"resources":[{"health":{"status":"Healthy",)"
      R"("message":"m"},"kind":"Deployment"},)"
      R"({"health":"x"},5,{"health":{"message":"only"}}],)"
      R"("health":{"status":"Healthy","message":"top"}})",
      R"({"resources":{"health":{"message":"no array"}}})",
      R"({"resources":[{"health":{"message":{"deep":1}}}]})",
      R"({"resources":{"[]":{"health":{"message":"a key, not items","s":1}}}})",
      R"({"b":1,"B":2,"\u00e9":3,"a":{"y":1,"x":2},"":0})",
      R"({"s":"q\" b\\ s\/ t\t c\u0001 d\u007f \u2028"})",
      R"({"n":[0.1,1e2,-1.5e-7,123456789.125,1e300,-7]})"};
  OnePassDecoder one_pass;
  for (const auto& raw : raws) {
    SCOPED_TRACE(raw);
    auto event = CapturedStatusUpdate();
    event.data = WithFeedback(raw);
    EXPECT_EQ(SameAnswer(event), "");
    for (const bool ignore_health_messages : {false, true}) {
      auto answer = one_pass.Decode(event, ignore_health_messages);
      ASSERT_TRUE(answer.has_value()) << "the one-pass decoder did not answer";
      const auto* report = std::get_if<StatusReport>(&*answer);
      ASSERT_NE(report, nullptr);
      EXPECT_FALSE(report->update.material_hash.empty());
      EXPECT_EQ(report->update.material_hash_ignores_health_messages, ignore_health_messages);
    }
  }
}

// `data` of the captured status update with `values` added to the Application manifest's
// feedback values, after its status (or before it).
std::string WithValues(const json& values, bool before = false) {
  json data = json::parse(*CapturedStatusUpdate().data);
  for (auto& manifest : data["resourceStatus"]) {
    if (manifest["resourceMeta"]["kind"] == "Application") {
      auto& list = manifest["statusFeedback"]["values"];
      list.insert(before ? list.begin() : list.end(), values.begin(), values.end());
    }
  }
  return data.dump();
}

json DispatchVersion(const json& field_value) {
  return json{{"name", "dispatchVersion"}, {"fieldValue", field_value}};
}

// The `dispatchVersion` feedback value (end-to-end acknowledgement): with, without and with a
// malformed one, both paths read the same version and the same error, and the one-pass decoder
// answers itself for every event whose version is read or absent. A refused version leaves the
// report standing without it; a structurally malformed value rejects the event.
TEST(StatusReportEquivalenceTest, DispatchVersionsDecodeAlike) {
  struct Case {
    std::string name;
    std::string data;
    std::optional<int32_t> want;  // for a report
    bool one_pass_answers = true;
    bool refused = false;  // a report without its version, and acked_version_error says why
  };
  const json seven = DispatchVersion({{"type", "String"}, {"string", "7"}});
  // The version on a manifest before the Application's, which has none.
  json other_manifest = json::parse(WithValues(json::array()));
  other_manifest["resourceStatus"].insert(
      other_manifest["resourceStatus"].begin(),
      json{{"resourceMeta", {{"kind", "ConfigMap"}, {"name", "x"}}},
           {"statusFeedback", {{"values", json::array({seven})}}}});
  const std::vector<Case> cases = {
      {"without", WithValues(json::array()), std::nullopt},
      {"String", WithValues(json::array({seven})), 7},
      {"String before the status", WithValues(json::array({seven}), /*before=*/true), 7},
      {"Integer",
       WithValues(json::array({DispatchVersion({{"type", "Integer"}, {"integer", 12}})})), 12},
      {"largest",
       WithValues(json::array({DispatchVersion({{"type", "String"}, {"string", "2147483647"}})})),
       2147483647},
      {"the first of two",
       WithValues(json::array({seven, DispatchVersion({{"type", "String"}, {"string", "8"}})})), 7},
      {"on another manifest", other_manifest.dump(), std::nullopt},
      // Refused values: the one-pass decoder leaves the event to the full path, which words why.
      {"not digits",
       WithValues(json::array({DispatchVersion({{"type", "String"}, {"string", "7a"}})})),
       std::nullopt, false, true},
      {"signed", WithValues(json::array({DispatchVersion({{"type", "String"}, {"string", "-7"}})})),
       std::nullopt, false, true},
      {"beyond int32",
       WithValues(json::array({DispatchVersion({{"type", "Integer"}, {"integer", 2147483648}})})),
       std::nullopt, false, true},
      {"negative Integer",
       WithValues(json::array({DispatchVersion({{"type", "Integer"}, {"integer", -1}})})),
       std::nullopt, false, true},
      {"Boolean",
       WithValues(json::array({DispatchVersion({{"type", "Boolean"}, {"boolean", true}})})),
       std::nullopt, false, true},
      {"JsonRaw",
       WithValues(json::array({DispatchVersion({{"type", "JsonRaw"}, {"jsonRaw", "7"}})})),
       std::nullopt, false, true},
      {"refused before the status",
       WithValues(json::array({DispatchVersion({{"type", "String"}, {"string", "x"}})}),
                  /*before=*/true),
       std::nullopt, false, true},
      {"refused, then a good one",
       WithValues(json::array({DispatchVersion({{"type", "String"}, {"string", "x"}}), seven})),
       std::nullopt, false, true},
      {"good, then a refused one",
       WithValues(json::array({seven, DispatchVersion({{"type", "String"}, {"string", "x"}})})), 7},
      // Malformed values: the full path rejects the event, the one-pass decoder leaves it to it.
      {"String without its string",
       WithValues(json::array({DispatchVersion({{"type", "String"}})})), std::nullopt, false},
      {"Integer of 1.5",
       WithValues(json::array({DispatchVersion({{"type", "Integer"}, {"integer", 1.5}})})),
       std::nullopt, false},
  };
  OnePassDecoder one_pass;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto event = CapturedStatusUpdate();
    event.data = c.data;
    EXPECT_EQ(SameAnswer(event), "");
    const auto full = DecodeStatusReportFull(event);
    if (c.one_pass_answers || c.refused) {
      const auto* report = std::get_if<StatusReport>(&full);
      ASSERT_NE(report, nullptr) << std::get<Rejection>(full).detail;
      EXPECT_EQ(report->update.acked_version, c.want);
      EXPECT_EQ(report->acked_version_error.empty(), !c.refused) << report->acked_version_error;
    }
    auto answer = one_pass.Decode(event);
    ASSERT_EQ(answer.has_value(), c.one_pass_answers);
    if (answer.has_value()) {
      const auto* report = std::get_if<StatusReport>(&*answer);
      ASSERT_NE(report, nullptr);
      EXPECT_EQ(report->update.acked_version, c.want);
    }
  }
}

TEST(StatusReportEquivalenceTest, PayloadEdgeCasesDecodeAlike) {
  const std::string feedback =
      R"({"resourceMeta":{"kind":"Application","group":"argoproj.io"},"statusFeedback":{"values":[)"
      R"({"name":"status","fieldValue":{"type":"JsonRaw","jsonRaw":"{\"a\":1}"}}]}})";
  const std::vector<std::string> datas = {
      "{\"resourceStatus\":[" + feedback + "]}",
      R"({"conditions":[{"type":"Deleted","status":"True"}]})",
      R"({"conditions":[{"type":"Deleted","status":"False"},{"type":"Deleted","status":"True"}]})",
      R"({"conditions":[{"type":"Applied","observedGeneration":1.0}]})",
      R"({"conditions":[{"type":"Applied","observedGeneration":"1"}]})",
      R"({"conditions":[{"type":"Applied","observedGeneration":9223372036854775808}]})",
      R"({"conditions":[{"type":"Applied","lastTransitionTime":"yesterday"}]})",
      R"({"conditions":[{"type":null,"status":null,"reason":null}],"resourceStatus":null})",
      R"({"conditions":{}})",
      R"({"resourceStatus":[5]})",
      R"({"resourceStatus":[{"resourceMeta":[]}]})",
      R"({"resourceStatus":[{"resourceMeta":{"ordinal":4294967296}}]})",
      "{\"resourceStatus\":[{\"resourceMeta\":{\"kind\":\"Application\",\"group\":\"other\"}}," +
          feedback + "]}",
      R"({"resourceStatus":[{"resourceMeta":{"kind":"Application"},"statusFeedback":{"values":[)"
      R"({"name":"status","fieldValue":{"type":"String","string":"x"}}]}}]})",
      R"({"resourceStatus":[{"resourceMeta":{"kind":"Application"},"statusFeedback":{"values":[)"
      R"({"name":"status","fieldValue":{"type":"Integer","integer":null}}]}}]})",
      R"({"resourceStatus":[{"resourceMeta":{"kind":"Application"},"statusFeedback":{"values":[)"
      R"({"name":"status","fieldValue":{"type":"JsonRaw","jsonRaw":"[]"}}]}}]})",
      R"({"resourceStatus":[{"resourceMeta":{"kind":"Application"},"statusFeedback":{"values":[)"
      R"({"name":"x","fieldValue":{"type":"Boolean","boolean":true}},)"
      R"({"name":"status","fieldValue":{"type":"JsonRaw","jsonRaw":"{\"b\":2}"}},)"
      R"({"name":"status","fieldValue":{"type":"JsonRaw","jsonRaw":"{\"c\":3}"}}]}}]})",
      "{\"resourceStatus\":[]," + std::string("\"resourceStatus\":[") + feedback + "]}",
      "{\"resourceStatus\":[" + feedback + "],\"resourceStatus\":null}",
      "{\"manifestBundle\":{\"manifests\":[{\"kind\":\"A\"}]},\"resourceStatus\":[" + feedback +
          "]}",
      "{\"manifestBundle\":{\"manifests\":5},\"resourceStatus\":[" + feedback + "]}",
      "{\"manifestBundle\":{\"deleteOption\":{\"ttlSecondsAfterFinished\":1.0}}}",
      "{\n  \"resourceStatus\": [" + feedback + "]\n}",
      "{\"conditions\":[{\"type\":\"\xC3\x28\"}]}",
      "null",
      "[]",
      "{}",
      "{",
      ""};
  for (const auto& data : datas) {
    SCOPED_TRACE(data);
    EXPECT_EQ(SameAnswer(FuzzEnvelope(data, std::string(kFuzzMetadata))), "");
  }
}

TEST(StatusReportEquivalenceTest, EnvelopeAndMetadataEdgeCasesDecodeAlike) {
  const std::string data = *CapturedStatusUpdate().data;
  const std::vector<std::string> metadatas = {
      std::string(kFuzzMetadata),
      "{}",
      "not json",
      "[]",
      R"({"generation":1.5})",
      R"({"annotations":{"apps.open-cluster-management.io/hub-application-name":5}})",
      R"({"annotations":{"apps.open-cluster-management.io/hub-application-name":"a",)"
      R"("apps.open-cluster-management.io/hub-application-namespace":""}})",
      R"({"labels":null,"finalizers":[1]})",
      R"({"ownerReferences":[{}],"managedFields":{}})",
      R"({"creationTimestamp":"then","other":{"deep":[1,2]}})",
      R"({"selfLink":7})"};
  for (const auto& metadata : metadatas) {
    SCOPED_TRACE(metadata);
    EXPECT_EQ(SameAnswer(FuzzEnvelope(data, metadata)), "");
  }
  auto no_hash = FuzzEnvelope(data, std::string(kFuzzMetadata));
  no_hash.SetString(cloudevents::kExtStatusHash, "");
  EXPECT_EQ(SameAnswer(no_hash), "");
  auto bad_sequence = FuzzEnvelope(data, std::string(kFuzzMetadata));
  bad_sequence.SetString(cloudevents::kExtSequenceId, "abc");
  EXPECT_EQ(SameAnswer(bad_sequence), "");
  auto yaml = FuzzEnvelope(data, std::string(kFuzzMetadata));
  yaml.data_content_type = "application/yaml";
  EXPECT_EQ(SameAnswer(yaml), "");
}

// "" when DecodeStatusOrBundleReport answers alike whether or not the resource is known to be in
// manifest delivery, for either material setting.
std::string SameAnswerInEitherMode(const cloudevents::Event& event) {
  std::string out;
  for (const bool ignore_health_messages : {false, true}) {
    out += ReportDifference(DecodeStatusOrBundleReport(event, ignore_health_messages, false),
                            DecodeStatusOrBundleReport(event, ignore_health_messages, true));
  }
  return out;
}

// `data` of a bundle of rendered manifests as the agent reports it: a Deployment with its
// WellKnownStatus values, and no Application.
json BundleData() {
  const json condition = {{"type", "Applied"},
                          {"status", "True"},
                          {"lastTransitionTime", "2026-11-26T13:37:20Z"},
                          {"reason", "AppliedManifestComplete"},
                          {"message", "Apply manifest complete"}};
  return {
      {"conditions", json::array({condition})},
      {"resourceStatus",
       json::array(
           {{{"resourceMeta",
              {{"ordinal", 0},
               {"group", "apps"},
               {"version", "v1"},
               {"kind", "Deployment"},
               {"resource", "deployments"},
               {"name", "guestbook-ui"},
               {"namespace", "guestbook"}}},
             {"statusFeedback",
              {{"values", json::array({{{"name", "ReadyReplicas"},
                                        {"fieldValue", {{"type", "Integer"}, {"integer", 1}}}}})}}},
             {"conditions", json::array({condition})}}})}};
}

// Manifest delivery: a resource known to be in the mode has its event decoded as a bundle alone,
// and the answer is the one the slow path (the one-pass decoder's no_feedback, then the bundle
// decode) gives, for bundles and for every other kind of event.
TEST(StatusReportEquivalenceTest, ABundleDecodesAlikeWhetherOrNotItsModeIsKnown) {
  struct Case {
    std::string name;
    cloudevents::Event event;
    std::optional<bool> bundle;  // answered with the bundle's status; nullopt: either
  };
  auto envelope = [](const json& data) {
    auto event = FuzzEnvelope(data.dump(), std::string(kFuzzMetadata));
    event.SetString(cloudevents::kExtResourceVersion, "3");
    return event;
  };
  json deleted = BundleData();
  deleted["conditions"][0]["type"] = "Deleted";
  json malformed = BundleData();
  malformed["resourceStatus"][0]["statusFeedback"]["values"][0]["fieldValue"]["integer"] = "one";
  auto bad_generation = envelope(BundleData());
  bad_generation.SetString(cloudevents::kExtResourceVersion, "three");
  auto application = CapturedStatusUpdate();
  application.SetString(cloudevents::kExtResourceVersion, "3");
  // The agent's report of an Application no Argo CD reported on: its acknowledgement alone.
  json ack_only = BundleData();
  ack_only["resourceStatus"][0]["resourceMeta"]["kind"] = "Application";
  ack_only["resourceStatus"][0]["resourceMeta"]["group"] = "argoproj.io";
  ack_only["resourceStatus"][0]["statusFeedback"]["values"] = json::array(
      {{{"name", "dispatchVersion"}, {"fieldValue", {{"type", "String"}, {"string", "2"}}}}});
  std::vector<Case> cases = {
      {"a bundle", envelope(BundleData()), true},
      {"a deleted bundle", envelope(deleted), false},
      {"a malformed bundle", envelope(malformed), false},
      {"a bundle of an unreadable generation", bad_generation, false},
      {"an Application's status", application, false},
      {"an Application's acknowledgement alone", envelope(ack_only), false},
  };
  for (auto& event : CapturedEvents()) {
    cases.push_back({"captured " + event.id, std::move(event), std::nullopt});
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SameAnswerInEitherMode(c.event), "");
    if (!c.bundle.has_value()) {
      continue;
    }
    const auto known = DecodeStatusOrBundleReport(c.event, false, true);
    const auto* report = std::get_if<StatusReport>(&known);
    EXPECT_EQ(report != nullptr && report->bundle_status != nullptr, *c.bundle);
    if (*c.bundle && report != nullptr) {
      EXPECT_EQ(report->bundle_generation, 3);
      EXPECT_FALSE(report->update.deleted);
    }
  }
}

TEST(StatusReportEquivalenceTest, FuzzerCorpusDecodesAlike) {
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MMI_STATUS_SINK_FUZZ_CORPUS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    SCOPED_TRACE(entry.path().filename().string());
    auto event = testing::FuzzEvent(bytes.str());
    if (event.has_value()) {
      EXPECT_EQ(SameAnswer(*event), "");
      EXPECT_EQ(SameAnswerInEitherMode(*event), "");
    }
    ++inputs;
  }
  EXPECT_GT(inputs, 10);
}

}  // namespace
}  // namespace mmi::status_sink
