#include "libs/cloudevents/status_hash.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

using nlohmann::json;
using testing::ReadSample;

TEST(StatusHashTest, Sha256OfTheEmptyStringIsWhatMaestroUsesForNoStatus) {
  EXPECT_EQ(Sha256Hex(""), kEmptyStatusHash);
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The agent computed `statushash` over the ManifestWork status; the samples carry both the
// status (as the event data) and the hash the Go agent produced.
TEST(StatusHashTest, ReproducesTheGoAgentHashOfEverySampleStatus) {
  for (const char* name : {"cloudevents.agent.json", "cloudevents.status.maestro.json"}) {
    SCOPED_TRACE(name);
    const json sample = json::parse(ReadSample(name));
    auto from_data = StatusHashOfData(sample["data"]);
    ASSERT_TRUE(from_data.ok()) << from_data.status();
    EXPECT_EQ(*from_data, sample["statushash"]);

    auto event = DecodeStructuredJson(ReadSample(name));
    ASSERT_TRUE(event.ok());
    auto status = ManifestBundleStatusOf(*event);
    ASSERT_TRUE(status.ok());
    auto from_typed = StatusHash(*status);
    ASSERT_TRUE(from_typed.ok()) << from_typed.status();
    EXPECT_EQ(*from_typed, sample["statushash"]);
  }
}

TEST(StatusHashTest, IgnoresTheEchoedManifestBundleAndMemberOrder) {
  json data = json::parse(ReadSample("cloudevents.agent.json"))["data"];
  const std::string expected = *StatusHashOfData(data);
  data["manifestBundle"] = json{{"manifests", json::array()}};
  EXPECT_EQ(*StatusHashOfData(data), expected);
  auto reordered = StatusHashOfData(json::parse(
      R"({"resourceStatus":null,"conditions":[{"message":"m","type":"A","status":"True","reason":"r","lastTransitionTime":"2026-01-01T00:00:00Z"}]})"));
  auto ordered = StatusHashOfData(json::parse(
      R"({"conditions":[{"type":"A","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"r","message":"m"}]})"));
  EXPECT_EQ(*reordered, *ordered);
}

TEST(StatusHashTest, HashesTheGoSerializationOfTheWorkStatus) {
  // Empty lists are omitted (omitempty); resourceStatus is always an object; Go escapes <, >, &.
  EXPECT_EQ(*StatusHashOfData(json::parse(R"({"conditions":null})")),
            Sha256Hex(R"({"resourceStatus":{}})"));
  EXPECT_EQ(
      *StatusHashOfData(json::parse(R"({"conditions":[{"message":"a<b>&c"}]})")),
      Sha256Hex(R"({"conditions":[{"message":"a\u003cb\u003e\u0026c"}],"resourceStatus":{}})"));
  EXPECT_EQ(*StatusHashOfData(json::parse(R"({"resourceStatus":[{"x":1}]})")),
            Sha256Hex(R"({"resourceStatus":{"manifests":[{"x":1}]}})"));
}

TEST(StatusHashTest, RejectsNonObjects) {
  EXPECT_EQ(StatusHashOfData(json::array()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusHashOfData(json{{"conditions", "x"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
