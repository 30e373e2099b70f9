#include "libs/kube_object/object.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace mmi::kube {
namespace {

using nlohmann::json;
using std::chrono::system_clock;

const json kApp = {
    {"metadata",
     {{"name", "guestbook"},
      {"namespace", "argocd"},
      {"resourceVersion", "42"},
      {"labels", {{"app", "web"}, {"tier", 3}}},
      {"annotations", {{"note", "hello"}}}}},
    {"spec", {{"project", "default"}, {"syncPolicy", {{"automated", {{"prune", true}}}}}}},
    {"status", "not an object"}};

TEST(ObjectTest, ReadsStringFieldsAndReadsEverythingElseAsEmpty) {
  EXPECT_EQ(StringAt(kApp["spec"], "project"), "default");
  EXPECT_EQ(StringAt(kApp["spec"], "missing"), "");
  EXPECT_EQ(StringAt(kApp["spec"], "syncPolicy"), "") << "an object is not a string";
  EXPECT_EQ(StringAt(json("text"), "project"), "") << "not an object";
  EXPECT_EQ(StringAt(json(), "project"), "");
}

TEST(ObjectTest, FindStringTellsAnAbsentFieldFromAnEmptyOne) {
  EXPECT_EQ(FindString(json{{"a", ""}}, "a"), std::optional<std::string>(""));
  EXPECT_EQ(FindString(json{{"a", 1}}, "a"), std::nullopt);
  EXPECT_EQ(FindString(json::object(), "a"), std::nullopt);
}

TEST(ObjectTest, ReadsStringsAndBooleansAtAPointer) {
  EXPECT_EQ(StringAt(kApp, json::json_pointer("/metadata/name")), "guestbook");
  EXPECT_EQ(StringAt(kApp, json::json_pointer("/metadata/missing/deeper")), "");
  EXPECT_EQ(StringAt(kApp, json::json_pointer("/spec")), "");
  EXPECT_TRUE(BoolAt(kApp, json::json_pointer("/spec/syncPolicy/automated/prune")));
  EXPECT_FALSE(BoolAt(kApp, json::json_pointer("/spec/syncPolicy/automated/selfHeal")));
  EXPECT_FALSE(BoolAt(kApp, json::json_pointer("/spec/project"))) << "a string is not a bool";
}

TEST(ObjectTest, FieldAtReturnsAnyTypeOrNullAndObjectAtOnlyObjects) {
  EXPECT_EQ(FieldAt(kApp, "status"), json("not an object"));
  EXPECT_TRUE(FieldAt(kApp, "missing").is_null());
  EXPECT_TRUE(FieldAt(json::array(), "status").is_null());
  EXPECT_EQ(ObjectAt(kApp, "status"), json::object());
  EXPECT_EQ(ObjectAt(kApp, "spec")["project"], "default");
}

TEST(ObjectTest, ReadsMetadataLabelsAndAnnotations) {
  EXPECT_EQ(StringAt(Metadata(kApp), "name"), "guestbook");
  EXPECT_EQ(Label(kApp, "app"), "web");
  EXPECT_EQ(Label(kApp, "tier"), "") << "not a string";
  EXPECT_EQ(Label(kApp, "missing"), "");
  EXPECT_EQ(Annotation(kApp, "note"), "hello");
  EXPECT_EQ(Labels(kApp).size(), 2U);
  EXPECT_EQ(Annotations(json::object()), json::object());
  EXPECT_EQ(Labels(json("no metadata")), json::object());
}

TEST(ObjectTest, KeysNamespacedObjectsByNamespaceAndNameAndClusterScopedOnesByName) {
  EXPECT_EQ(ObjectKey(kApp), "argocd/guestbook");
  EXPECT_EQ(ObjectKey(json{{"metadata", {{"name", "local-cluster"}}}}), "local-cluster");
  EXPECT_EQ(ObjectKey("ns", "name"), "ns/name");
  EXPECT_EQ(ResourceVersionOf(kApp), "42");
  EXPECT_EQ(ResourceVersionOf(json::object()), "");
}

TEST(ObjectTest, FormatsTimesAsTheApiServerDoes) {
  const system_clock::time_point t =
      system_clock::from_time_t(1'800'000'000) + std::chrono::milliseconds(250);
  EXPECT_EQ(KubeTime(t), "2027-01-15T08:00:00Z") << "whole seconds, truncated";
  EXPECT_EQ(KubeMicroTime(t), "2027-01-15T08:00:00.250000Z");
}

TEST(ObjectTest, ParsesWhatItFormatsAndOtherRfc3339Times) {
  const system_clock::time_point t = system_clock::from_time_t(1'800'000'000);
  EXPECT_EQ(ParseKubeTime("2027-01-15T08:00:00Z").value(), t);
  EXPECT_EQ(ParseKubeTime(KubeMicroTime(t + std::chrono::microseconds(5))).value(),
            t + std::chrono::microseconds(5));
  EXPECT_EQ(ParseKubeTime("2027-01-15T10:00:00+02:00").value(), t);
}

TEST(ObjectTest, RefusesTextThatIsNotATime) {
  for (const char* text :
       {"", "yesterday", "2027-01-15", "2027-13-15T08:00:00Z", "2027-01-15T08:00:00"}) {
    const auto parsed = ParseKubeTime(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(ObjectTest, AcceptsOnlyDns1123Labels) {
  for (const std::string& good : {std::string("a"), std::string("argocd"), std::string("cluster-1"),
                                  std::string("0abc"), std::string(63, 'x')}) {
    EXPECT_TRUE(IsDns1123Label(good)) << good;
  }
  const std::string too_long(64, 'x');
  for (const std::string& bad :
       {std::string(), std::string("-a"), std::string("a-"), std::string("Upper"),
        std::string("a.b"), std::string("a_b"), too_long}) {
    EXPECT_FALSE(IsDns1123Label(bad)) << bad;
  }
}

TEST(ObjectTest, AcceptsOnlyDns1123Subdomains) {
  for (const char* good : {"a", "acm-placement", "kube-root-ca.crt", "a.b.c"}) {
    EXPECT_TRUE(IsDns1123Subdomain(good)) << good;
  }
  for (const std::string& bad :
       {std::string(), std::string(".a"), std::string("a."), std::string("a..b"),
        std::string("a.-b"), std::string("A.b"), std::string(254, 'a')}) {
    EXPECT_FALSE(IsDns1123Subdomain(bad)) << bad;
  }
}

}  // namespace
}  // namespace mmi::kube
