#include "services/dispatcher/manifests/delivery_mode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;

json Source() {
  return json{{"repoURL", "https://git.example/apps.git"},
              {"path", "guestbook"},
              {"targetRevision", "main"}};
}

// A pull-model hub Application with `annotations` and `spec`.
json App(const json& annotations, const json& spec) {
  return json{
      {"metadata", {{"name", "guestbook"}, {"namespace", "argocd"}, {"annotations", annotations}}},
      {"spec", spec}};
}

json Spec(const json& source) {
  return json{
      {"project", "default"},
      {"destination", {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}},
      {"source", source}};
}

struct Row {
  std::string name;
  json application;
  absl::StatusCode code;
  DeliveryMode mode;        // when OK
  std::string message_has;  // when refused: a part of the reason
};

TEST(DeliveryModeTest, ReadsTheAnnotationAndRefusesWhatItCannotRender) {
  const std::string key(kDeliveryAnnotation);
  json multiple = Spec(Source());
  multiple.erase("source");
  multiple["sources"] = json::array(
      {Source(), json{{"repoURL", "https://git.example/values.git"}, {"ref", "values"}}});
  json no_repo = Source();
  no_repo.erase("repoURL");
  json bad_helm = Source();
  bad_helm["helm"] = "not an object";
  const std::vector<Row> rows = {
      {"no annotations", json{{"metadata", {{"name", "a"}}}, {"spec", Spec(Source())}},
       absl::StatusCode::kOk, DeliveryMode::kApplication, ""},
      {"other annotations only", App({{"a", "b"}}, Spec(Source())), absl::StatusCode::kOk,
       DeliveryMode::kApplication, ""},
      {"application", App({{key, "application"}}, Spec(Source())), absl::StatusCode::kOk,
       DeliveryMode::kApplication, ""},
      {"application ignores the source", App({{key, "application"}}, multiple),
       absl::StatusCode::kOk, DeliveryMode::kApplication, ""},
      {"manifests", App({{key, "manifests"}}, Spec(Source())), absl::StatusCode::kOk,
       DeliveryMode::kManifests, ""},
      {"another value", App({{key, "Manifests"}}, Spec(Source())),
       absl::StatusCode::kInvalidArgument, DeliveryMode::kApplication,
       "unknown delivery mode \"Manifests\"; use \"manifests\" or \"application\""},
      {"empty value", App({{key, ""}}, Spec(Source())), absl::StatusCode::kInvalidArgument,
       DeliveryMode::kApplication, "unknown delivery mode \"\""},
      {"not a string", App({{key, true}}, Spec(Source())), absl::StatusCode::kInvalidArgument,
       DeliveryMode::kApplication, "unknown delivery mode true"},
      {"multiple sources", App({{key, "manifests"}}, multiple), absl::StatusCode::kInvalidArgument,
       DeliveryMode::kApplication,
       "cannot render this Application: spec.sources: an Application with multiple sources"},
      {"no source", App({{key, "manifests"}}, json{{"project", "default"}}),
       absl::StatusCode::kInvalidArgument, DeliveryMode::kApplication, "spec.source: missing"},
      {"no repoURL", App({{key, "manifests"}}, Spec(no_repo)), absl::StatusCode::kInvalidArgument,
       DeliveryMode::kApplication, "spec.source.repoURL: missing"},
      {"a field the builder refuses", App({{key, "manifests"}}, Spec(bad_helm)),
       absl::StatusCode::kInvalidArgument, DeliveryMode::kApplication,
       "spec.source.helm: want an object, got string"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    absl::StatusOr<DeliveryMode> mode = DeliveryModeOf(row.application);
    ASSERT_EQ(mode.status().code(), row.code) << mode.status();
    if (mode.ok()) {
      EXPECT_EQ(*mode, row.mode);
    } else {
      EXPECT_NE(mode.status().message().find(row.message_has), std::string::npos)
          << mode.status().message();
    }
  }
}

TEST(DeliveryModeTest, TheReasonNamesTheAnnotation) {
  absl::StatusOr<DeliveryMode> mode =
      DeliveryModeOf(App({{std::string(kDeliveryAnnotation), "bundle"}}, Spec(Source())));
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(mode.status().message(),
            "metadata.annotations[apps.open-cluster-management.io/delivery]: unknown delivery "
            "mode \"bundle\"; use \"manifests\" or \"application\" (or leave the annotation out)");
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
