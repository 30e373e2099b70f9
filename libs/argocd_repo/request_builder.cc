#include "libs/argocd_repo/request_builder.h"

#include <string_view>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"

namespace mmi::argocd_repo {
namespace {

using kube::StringAt;
using nlohmann::json;

absl::Status WrongType(std::string_view field, std::string_view want, const json& got) {
  return absl::InvalidArgumentError(absl::StrCat("spec.source.", std::string(field), ": want ",
                                                 std::string(want), ", got ", got.type_name()));
}

// Kubernetes IntOrString (a number or a string) as intstr.IntOrString's message.
absl::StatusOr<json> IntOrString(const json& value, std::string_view field) {
  if (value.is_number_integer()) {
    return json{{"type", 0}, {"intVal", value.get<int64_t>()}};
  }
  if (value.is_string()) {
    return json{{"type", 1}, {"strVal", value.get<std::string>()}};
  }
  return WrongType(field, "an integer or a string", value);
}

absl::Status ConvertHelm(json& helm) {
  if (!helm.is_object()) {
    return WrongType("helm", "an object", helm);
  }
  auto values_object = helm.find("valuesObject");
  if (values_object != helm.end()) {
    // A RawExtension: the JSON text itself, base64 in protobuf's JSON form of `bytes`.
    *values_object = json{{"raw", absl::Base64Escape(values_object->dump())}};
  }
  return absl::OkStatus();
}

absl::Status ConvertKustomize(json& kustomize) {
  if (!kustomize.is_object()) {
    return WrongType("kustomize", "an object", kustomize);
  }
  if (auto replicas = kustomize.find("replicas"); replicas != kustomize.end()) {
    if (!replicas->is_array()) {
      return WrongType("kustomize.replicas", "an array", *replicas);
    }
    for (size_t i = 0; i < replicas->size(); ++i) {
      json& replica = (*replicas)[i];
      if (replica.is_object() && replica.contains("count")) {
        const std::string field = absl::StrCat("kustomize.replicas[", i, "].count");
        absl::StatusOr<json> count = IntOrString(replica["count"], field);
        if (!count.ok()) {
          return count.status();
        }
        replica["count"] = *std::move(count);
      }
    }
  }
  if (auto patches = kustomize.find("patches"); patches != kustomize.end()) {
    if (!patches->is_array()) {
      return WrongType("kustomize.patches", "an array", *patches);
    }
    for (size_t i = 0; i < patches->size(); ++i) {
      json& patch = (*patches)[i];
      if (!patch.is_object() || !patch.contains("target")) {
        continue;
      }
      json& target = patch["target"];
      if (!target.is_object()) {
        return WrongType(absl::StrCat("kustomize.patches[", i, "].target"), "an object", target);
      }
      // Go's KustomizeSelector inlines KustomizeResId, which inlines KustomizeGvk; the proto
      // nests them.
      json selector = json::object();
      json res_id = json::object();
      json gvk = json::object();
      for (auto& [key, value] : target.items()) {
        if (key == "group" || key == "version" || key == "kind") {
          gvk[key] = value;
        } else if (key == "name" || key == "namespace") {
          res_id[key] = value;
        } else {
          selector[key] = value;
        }
      }
      if (!gvk.empty()) {
        res_id["gvk"] = std::move(gvk);
      }
      if (!res_id.empty()) {
        selector["resId"] = std::move(res_id);
      }
      target = std::move(selector);
    }
  }
  return absl::OkStatus();
}

absl::Status ConvertPlugin(json& plugin) {
  if (!plugin.is_object()) {
    return WrongType("plugin", "an object", plugin);
  }
  auto parameters = plugin.find("parameters");
  if (parameters == plugin.end()) {
    return absl::OkStatus();
  }
  if (!parameters->is_array()) {
    return WrongType("plugin.parameters", "an array", *parameters);
  }
  for (json& parameter : *parameters) {
    if (!parameter.is_object()) {
      continue;
    }
    if (auto map = parameter.find("map"); map != parameter.end()) {
      *map = json{{"map", *map}};
    }
    if (auto array = parameter.find("array"); array != parameter.end()) {
      *array = json{{"array", *array}};
    }
  }
  return absl::OkStatus();
}

// spec.source of a single-source Application, or kInvalidArgument saying why there is none.
absl::StatusOr<json> SingleSource(const json& application) {
  if (!application.is_object()) {
    return absl::InvalidArgumentError("the Application is not a JSON object");
  }
  const json::json_pointer sources("/spec/sources");
  if (application.contains(sources) && application.at(sources).is_array() &&
      !application.at(sources).empty()) {
    return absl::InvalidArgumentError(
        "spec.sources: an Application with multiple sources is not rendered by the repo-server "
        "client (single spec.source only)");
  }
  const json::json_pointer source("/spec/source");
  if (!application.contains(source) || !application.at(source).is_object()) {
    return absl::InvalidArgumentError("spec.source: missing");
  }
  const json& result = application.at(source);
  if (StringAt(result, json::json_pointer("/repoURL")).empty()) {
    return absl::InvalidArgumentError("spec.source.repoURL: missing");
  }
  return result;
}

// What both requests take from an Application: its source in both forms and the repository.
struct Source {
  json kube;   // spec.source as the Application has it
  json proto;  // the same in protobuf's JSON form
  json repo;   // the v1alpha1.Repository
  std::string target_revision;
};

absl::StatusOr<Source> SourceOf(const json& application, const json& repository) {
  absl::StatusOr<json> kube = SingleSource(application);
  if (!kube.ok()) {
    return kube.status();
  }
  absl::StatusOr<json> proto = SourceToProtoJson(*kube);
  if (!proto.ok()) {
    return proto.status();
  }
  Source source{.kube = *std::move(kube),
                .proto = *std::move(proto),
                .repo = repository,
                .target_revision = ""};
  source.target_revision = StringAt(source.kube, json::json_pointer("/targetRevision"));
  if (source.repo.is_null()) {
    source.repo = PublicRepository(StringAt(source.kube, json::json_pointer("/repoURL")));
  }
  return source;
}

}  // namespace

json PublicRepository(const std::string& repo_url) { return json{{"repo", repo_url}}; }

absl::StatusOr<json> SourceToProtoJson(const json& source) {
  if (!source.is_object()) {
    return WrongType("", "an object", source);
  }
  json out = source;
  if (auto helm = out.find("helm"); helm != out.end()) {
    if (absl::Status s = ConvertHelm(*helm); !s.ok()) {
      return s;
    }
  }
  if (auto kustomize = out.find("kustomize"); kustomize != out.end()) {
    if (absl::Status s = ConvertKustomize(*kustomize); !s.ok()) {
      return s;
    }
  }
  if (auto plugin = out.find("plugin"); plugin != out.end()) {
    if (absl::Status s = ConvertPlugin(*plugin); !s.ok()) {
      return s;
    }
  }
  return out;
}

absl::StatusOr<ManifestRequest> BuildManifestRequest(const json& application,
                                                     const std::string& revision,
                                                     const RenderSettings& settings,
                                                     const json& repository) {
  absl::StatusOr<Source> source = SourceOf(application, repository);
  if (!source.ok()) {
    return source.status();
  }
  const std::string name = StringAt(application, json::json_pointer("/metadata/name"));
  const std::string app_namespace =
      StringAt(application, json::json_pointer("/metadata/namespace"));
  const std::string instance_name =
      app_namespace.empty() || app_namespace == settings.controller_namespace
          ? name
          : absl::StrCat(app_namespace, "_", name);
  std::string project = StringAt(application, json::json_pointer("/spec/project"));

  ManifestRequest request;
  json& body = request.body;
  body["repo"] = std::move(source->repo);
  body["revision"] = revision.empty() ? source->target_revision : revision;
  body["appLabelKey"] = settings.app_label_key;
  body["appName"] = instance_name;
  body["namespace"] = StringAt(application, json::json_pointer("/spec/destination/namespace"));
  body["applicationSource"] = std::move(source->proto);
  json kustomize_options = json::object();
  if (!settings.kustomize_build_options.empty()) {
    kustomize_options["buildOptions"] = settings.kustomize_build_options;
  }
  body["kustomizeOptions"] = std::move(kustomize_options);
  body["kubeVersion"] = settings.kube_version;
  body["apiVersions"] = settings.api_versions;
  body["trackingMethod"] = settings.tracking_method;
  body["enabledSourceTypes"] = settings.enabled_source_types;
  body["helmOptions"] = json{{"valuesFileSchemes", settings.helm_values_file_schemes}};
  body["hasMultipleSources"] = false;
  body["projectName"] = project.empty() ? "default" : std::move(project);
  body["installationID"] = settings.installation_id;
  return request;
}

absl::StatusOr<ResolveRevisionRequest> BuildResolveRevisionRequest(
    const json& application, const std::string& ambiguous_revision, const json& repository) {
  absl::StatusOr<Source> source = SourceOf(application, repository);
  if (!source.ok()) {
    return source.status();
  }
  std::string revision = ambiguous_revision.empty() ? source->target_revision : ambiguous_revision;
  if (revision.empty()) {
    revision = "HEAD";  // Argo CD's default for an empty targetRevision of a git source
  }
  json metadata = json::object();
  for (const char* key : {"name", "namespace"}) {
    const std::string value =
        StringAt(application, json::json_pointer(std::string("/metadata/") + key));
    if (!value.empty()) {
      metadata[key] = value;
    }
  }
  json spec = json{{"source", std::move(source->proto)}};
  if (std::string project = StringAt(application, json::json_pointer("/spec/project"));
      !project.empty()) {
    spec["project"] = std::move(project);
  }

  ResolveRevisionRequest request;
  request.body["repo"] = std::move(source->repo);
  request.body["app"] = json{{"metadata", std::move(metadata)}, {"spec", std::move(spec)}};
  request.body["ambiguousRevision"] = std::move(revision);
  request.body["sourceIndex"] = 0;
  return request;
}

}  // namespace mmi::argocd_repo
