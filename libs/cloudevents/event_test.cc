#include "libs/cloudevents/event.h"

#include <chrono>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace mmi::cloudevents {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;

Timestamp At(std::int64_t unix_seconds, std::int64_t nanos = 0) {
  return Timestamp(seconds(unix_seconds)) + nanoseconds(nanos);
}

TEST(TimestampTest, FormatsUtcWithTrailingZerosTrimmed) {
  // 2026-06-01T10:00:00Z = 1780308000 (the §4.4 example).
  EXPECT_EQ(FormatTimestamp(At(1780308000)), "2026-06-01T10:00:00Z");
  EXPECT_EQ(FormatTimestamp(At(1780308000, 123456789)), "2026-06-01T10:00:00.123456789Z");
  EXPECT_EQ(FormatTimestamp(At(1780308000, 123456000)), "2026-06-01T10:00:00.123456Z");
  EXPECT_EQ(FormatTimestamp(At(1780308000, 100000000)), "2026-06-01T10:00:00.1Z");
  EXPECT_EQ(FormatTimestamp(At(1780308000, 1)), "2026-06-01T10:00:00.000000001Z");
  EXPECT_EQ(FormatTimestamp(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(At(-1, 500000000)), "1969-12-31T23:59:59.5Z");
  EXPECT_EQ(FormatTimestamp(At(951782400)), "2000-02-29T00:00:00Z");
}

TEST(TimestampTest, ParsesZeroToNineFractionalDigitsAndOffsets) {
  EXPECT_EQ(*ParseTimestamp("2026-06-01T10:00:00Z"), At(1780308000));
  EXPECT_EQ(*ParseTimestamp("2026-06-01T10:00:00.123456789Z"), At(1780308000, 123456789));
  EXPECT_EQ(*ParseTimestamp("2026-06-01T10:00:00.5Z"), At(1780308000, 500000000));
  EXPECT_EQ(*ParseTimestamp("2026-06-01t10:00:00z"), At(1780308000));
  EXPECT_EQ(*ParseTimestamp("2026-06-01T12:30:00+02:30"), At(1780308000));
  EXPECT_EQ(*ParseTimestamp("2026-06-01T05:00:00-05:00"), At(1780308000));
  // Digits beyond nanoseconds are truncated.
  EXPECT_EQ(*ParseTimestamp("2026-06-01T10:00:00.1234567891Z"), At(1780308000, 123456789));
  EXPECT_EQ(*ParseTimestamp("2000-02-29T00:00:00Z"), At(951782400));
}

TEST(TimestampTest, RoundTripsSampleTimes) {
  for (const char* text : {"2025-12-16T06:00:17.921082037Z", "2025-12-13T13:32:30.308693Z",
                           "2025-12-16T06:00:17.771003Z", "2026-06-02T09:00:00Z"}) {
    auto parsed = ParseTimestamp(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(FormatTimestamp(*parsed), text);
  }
}

TEST(TimestampTest, RejectsMalformedTimestampsWithInvalidArgument) {
  for (const char* text :
       {"", "2026", "2026-06-01", "2026-06-01 10:00:00Z", "2026-06-01T10:00:00",
        "2026-06-01T10:00:00.Z", "2026-13-01T10:00:00Z", "2026-02-30T10:00:00Z",
        "2025-02-29T00:00:00Z", "2026-06-01T24:00:00Z", "2026-06-01T10:60:00Z",
        "2026-06-01T10:00:60Z", "2026-06-01T10:00:00+0200", "2026-06-01T10:00:00+02:00x",
        "2026-06-01T10:00:00ZZ", "-026-06-01T10:00:00Z", "2026-06-01T10:00:00+24:00",
        "1600-01-01T00:00:00Z", "2300-01-01T00:00:00Z"}) {
    auto parsed = ParseTimestamp(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(EventTypeTest, ParsesGroupWithDots) {
  auto type = EventType::Parse(kSpecCreateRequestType);
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(type->data_type.group, "io.open-cluster-management.works");
  EXPECT_EQ(type->data_type.version, "v1alpha1");
  EXPECT_EQ(type->data_type.resource, "manifestbundles");
  EXPECT_EQ(type->data_type.ToString(), kManifestBundlesDataType);
  EXPECT_EQ(type->subresource, Subresource::kSpec);
  EXPECT_EQ(type->action, Action::kCreateRequest);
  EXPECT_EQ(type->ToString(), kSpecCreateRequestType);
}

TEST(EventTypeTest, AllManifestBundleTypeConstantsRoundTrip) {
  const std::pair<std::string_view, std::pair<Subresource, Action>> cases[] = {
      {kSpecCreateRequestType, {Subresource::kSpec, Action::kCreateRequest}},
      {kSpecUpdateRequestType, {Subresource::kSpec, Action::kUpdateRequest}},
      {kSpecDeleteRequestType, {Subresource::kSpec, Action::kDeleteRequest}},
      {kSpecResyncRequestType, {Subresource::kSpec, Action::kResyncRequest}},
      {kSpecResyncResponseType, {Subresource::kSpec, Action::kResyncResponse}},
      {kStatusUpdateRequestType, {Subresource::kStatus, Action::kUpdateRequest}},
      {kStatusResyncRequestType, {Subresource::kStatus, Action::kResyncRequest}},
      {kStatusResyncResponseType, {Subresource::kStatus, Action::kResyncResponse}},
  };
  for (const auto& [text, expected] : cases) {
    auto type = EventType::Parse(text);
    ASSERT_TRUE(type.ok()) << text;
    EXPECT_EQ(type->subresource, expected.first) << text;
    EXPECT_EQ(type->action, expected.second) << text;
    EXPECT_EQ(type->data_type.ToString(), kManifestBundlesDataType);
    EXPECT_EQ(type->ToString(), text);
  }
}

TEST(EventTypeTest, RejectsMalformedTypes) {
  for (const char* text :
       {"", "a.b.c.spec", "io.works.v1.bundles.Spec.create_request",
        "io.works.v1.bundles.specs.create_request", "io.works.v1.bundles.spec.create",
        "io.works.v1.bundles.spec.CREATE_REQUEST", "io..v1.bundles.spec.create_request",
        ".v1.bundles.spec.create_request", "io.open-cluster-management.cloudevents.heartbeat"}) {
    EXPECT_EQ(EventType::Parse(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_TRUE(EventType::Parse("g.v.r.status.watch_request").ok());
}

TEST(DataTypeTest, NeedsThreeTokens) {
  EXPECT_EQ(DataType::Parse("a.b").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DataType::Parse("a..c").status().code(), absl::StatusCode::kInvalidArgument);
  auto data_type = DataType::Parse(kManifestBundlesDataType);
  ASSERT_TRUE(data_type.ok());
  EXPECT_EQ(data_type->group, "io.open-cluster-management.works");
}

TEST(ExtensionNameTest, AcceptsOnlyLowerCaseAlphanumerics) {
  EXPECT_TRUE(IsValidExtensionName("clustername"));
  EXPECT_TRUE(IsValidExtensionName("kafka0"));
  EXPECT_TRUE(IsValidExtensionName("subject"));
  EXPECT_FALSE(IsValidExtensionName(""));
  EXPECT_FALSE(IsValidExtensionName("clusterName"));
  EXPECT_FALSE(IsValidExtensionName("cluster_name"));
  EXPECT_FALSE(IsValidExtensionName("cluster-name"));
  EXPECT_FALSE(IsValidExtensionName("id"));
  EXPECT_FALSE(IsValidExtensionName("time"));
  EXPECT_FALSE(IsValidExtensionName("data"));
}

TEST(CanonicalStringTest, UsesCloudEventsCanonicalForms) {
  EXPECT_EQ(CanonicalString(AttributeValue(std::string("x"))), "x");
  EXPECT_EQ(CanonicalString(AttributeValue(std::int32_t{-42})), "-42");
  EXPECT_EQ(CanonicalString(AttributeValue(true)), "true");
  EXPECT_EQ(CanonicalString(AttributeValue(false)), "false");
  EXPECT_EQ(CanonicalString(AttributeValue(At(1780308000, 120000000))), "2026-06-01T10:00:00.12Z");
  EXPECT_EQ(CanonicalString(AttributeValue(Binary{"hi!"})), "aGkh");
}

TEST(EventAccessorsTest, ResourceVersionAcceptsIntegerOrDecimalString) {
  Event event;
  event.SetInteger(kExtResourceVersion, 7);
  EXPECT_EQ(*event.ResourceVersion(), 7);
  event.SetString(kExtResourceVersion, "12");
  EXPECT_EQ(*event.ResourceVersion(), 12);
  event.SetString(kExtResourceVersion, "-3");
  EXPECT_EQ(*event.ResourceVersion(), -3);
  event.SetString(kExtResourceVersion, "2147483647");
  EXPECT_EQ(*event.ResourceVersion(), std::numeric_limits<std::int32_t>::max());
}

TEST(EventAccessorsTest, ResourceVersionRejectsNonIntegersAndOutOfRange) {
  Event event;
  EXPECT_EQ(event.ResourceVersion().status().code(), absl::StatusCode::kNotFound);
  for (const char* text : {"", "1.5", "1e3", " 1", "1 ", "abc", "+-1", "0x10", "2147483648",
                           "-2147483649", "99999999999999999999"}) {
    event.SetString(kExtResourceVersion, text);
    auto version = event.ResourceVersion();
    EXPECT_EQ(version.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(version.status().message()).find("resourceversion"), std::string::npos);
  }
  event.SetBoolean(kExtResourceVersion, true);
  EXPECT_EQ(event.ResourceVersion().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EventAccessorsTest, DeletionTimestampAcceptsTimestampOrRfc3339String) {
  Event event;
  EXPECT_EQ(event.DeletionTimestamp().status().code(), absl::StatusCode::kNotFound);
  event.SetTimestamp(kExtDeletionTimestamp, At(1780387200, 412345678));
  EXPECT_EQ(*event.DeletionTimestamp(), At(1780387200, 412345678));
  event.SetString(kExtDeletionTimestamp, "2026-06-02T08:00:00.412345678Z");
  EXPECT_EQ(FormatTimestamp(*event.DeletionTimestamp()), "2026-06-02T08:00:00.412345678Z");
  event.SetString(kExtDeletionTimestamp, "yesterday");
  EXPECT_EQ(event.DeletionTimestamp().status().code(), absl::StatusCode::kInvalidArgument);
  event.SetInteger(kExtDeletionTimestamp, 5);
  EXPECT_EQ(event.DeletionTimestamp().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EventAccessorsTest, StringExtensionsMustBeStrings) {
  Event event;
  event.SetString(kExtClusterName, "");
  EXPECT_EQ(*event.ClusterName(), "");  // empty is meaningful ("all clusters")
  event.SetInteger(kExtClusterName, 1);
  EXPECT_EQ(event.ClusterName().status().code(), absl::StatusCode::kInvalidArgument);
  event.SetString(kExtResourceId, "");
  EXPECT_EQ(event.ResourceId().status().code(), absl::StatusCode::kInvalidArgument);
  event.SetString(kExtResourceId, "278f3a61-efe5-56de-abba-6aedbfcce272");
  EXPECT_EQ(*event.ResourceId(), "278f3a61-efe5-56de-abba-6aedbfcce272");
  EXPECT_EQ(event.SequenceId().status().code(), absl::StatusCode::kNotFound);
  event.SetBinary(kExtMetadata, "{}");
  EXPECT_EQ(event.MetadataJson().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EventAccessorsTest, BooleanAcceptsCanonicalStrings) {
  Event event;
  event.SetString("flag", "true");
  EXPECT_TRUE(*event.GetBoolean("flag"));
  event.SetString("flag", "false");
  EXPECT_FALSE(*event.GetBoolean("flag"));
  event.SetString("flag", "yes");
  EXPECT_EQ(event.GetBoolean("flag").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EventTest, SettersReplaceAndRemove) {
  Event event;
  event.SetString("x", "a");
  event.SetInteger("x", 3);
  EXPECT_EQ(std::get<std::int32_t>(*event.FindExtension("x")), 3);
  EXPECT_TRUE(event.RemoveExtension("x"));
  EXPECT_FALSE(event.RemoveExtension("x"));
  EXPECT_EQ(event.FindExtension("x"), nullptr);
  EXPECT_EQ(event.spec_version, "1.0");
}

TEST(EventTest, ParsedTypeAndHeartbeat) {
  Event event;
  event.type = std::string(kStatusUpdateRequestType);
  EXPECT_EQ(event.ParsedType()->subresource, Subresource::kStatus);
  EXPECT_FALSE(event.IsHeartbeat());
  event.type = std::string(kHeartbeatType);
  EXPECT_TRUE(event.IsHeartbeat());
  EXPECT_EQ(event.ParsedType().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
