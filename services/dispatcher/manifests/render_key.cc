#include "services/dispatcher/manifests/render_key.h"

#include <utility>

#include "libs/cloudevents/status_hash.h"
#include "libs/kube_object/object.h"

namespace mmi::dispatcher::manifests {
namespace {

using argocd_repo::ManifestRequest;
using nlohmann::json;

// The environment variable the repo-server substitutes with the Application's name.
constexpr std::string_view kAppNameVariable = "ARGOCD_APP_NAME";

bool MentionsAppName(const json& value) {
  if (value.is_string()) {
    return value.get_ref<const std::string&>().find(kAppNameVariable) != std::string::npos;
  }
  if (value.is_structured()) {
    for (const json& item : value) {
      if (MentionsAppName(item)) {
        return true;
      }
    }
  }
  return false;
}

std::string TypeOf(const json& source) {
  // ApplicationSource.ExplicitType: the one type whose field is set (more than one is an error
  // the repo-server reports, and the name then cannot matter).
  std::string type;
  int count = 0;
  for (const auto& [field, name] :
       {std::pair{"helm", "Helm"}, std::pair{"kustomize", "Kustomize"},
        std::pair{"directory", "Directory"}, std::pair{"plugin", "Plugin"}}) {
    if (source.contains(field) && !source.at(field).is_null()) {
      type = name;
      ++count;
    }
  }
  return count == 1 ? type : std::string();
}

std::string HashOf(const json& body) { return cloudevents::Sha256Hex(body.dump()); }

}  // namespace

ManifestRequest RenderRequestOf(ManifestRequest request) {
  for (const char* field : {"appLabelKey", "trackingMethod", "installationID"}) {
    request.body.erase(field);
  }
  return request;
}

AppNameUse AppNameUseOf(const ManifestRequest& request, std::string_view detected_source_type) {
  const json& source = kube::ObjectAt(request.body, "applicationSource");
  if (MentionsAppName(source)) {
    return AppNameUse::kUsed;
  }
  std::string type = TypeOf(source);
  if (type.empty()) {
    type = detected_source_type;
  }
  if (type == "Plugin") {
    return AppNameUse::kUsed;
  }
  if (type == "Helm") {
    const json::json_pointer release("/helm/releaseName");
    const bool named = source.contains(release) && source.at(release).is_string() &&
                       !source.at(release).get_ref<const std::string&>().empty();
    return named ? AppNameUse::kUnused : AppNameUse::kUsed;
  }
  if (type == "Kustomize") {
    // Kustomize runs with the repo-server's environment, ARGOCD_APP_NAME included: exec and
    // alpha plugins, when the build options allow them, may read it.
    const std::string options =
        kube::StringAt(request.body, json::json_pointer("/kustomizeOptions/buildOptions"));
    const bool plugins = options.find("--enable-alpha-plugins") != std::string::npos ||
                         options.find("--enable-exec") != std::string::npos;
    return plugins ? AppNameUse::kUsed : AppNameUse::kUnused;
  }
  if (type == "Directory") {
    return AppNameUse::kUnused;
  }
  return AppNameUse::kUnknown;
}

std::string RenderKeyOf(const ManifestRequest& request, std::string_view detected_source_type) {
  if (AppNameUseOf(request, detected_source_type) != AppNameUse::kUnused) {
    return HashOf(RenderRequestOf(request).body);
  }
  return SourceKeyOf(request);
}

std::string SourceKeyOf(const ManifestRequest& request) {
  ManifestRequest stripped = RenderRequestOf(request);
  stripped.body.erase("appName");
  return HashOf(stripped.body);
}

std::string RevisionKeyOf(const argocd_repo::ResolveRevisionRequest& request) {
  const json& body = request.body;
  return json::array({kube::StringAt(body, json::json_pointer("/app/spec/source/repoURL")),
                      kube::StringAt(body, json::json_pointer("/app/spec/source/chart")),
                      kube::StringAt(body, "ambiguousRevision")})
      .dump();
}

}  // namespace mmi::dispatcher::manifests
