// The ManifestBundle (spec) half of manifest_bundle.h: manifests, manifestConfigs, deleteOption
// and executer; the status half is in manifest_bundle_status.cc.
#include "libs/cloudevents/manifest_bundle.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/bundle_json.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents {
namespace {

using internal::CheckEventData;
using internal::EncodeJson;
using internal::ForEachElement;
using internal::Json;
using internal::ObjectReader;

// --- encoding ------------------------------------------------------------------------------------

Json StringArray(const std::vector<std::string>& values) {
  Json out = Json::array();
  for (const auto& value : values) {
    out.push_back(value);
  }
  return out;
}

Json ToJson(const ResourceIdentifier& id) {
  return Json{{"group", id.group},
              {"resource", id.resource},
              {"name", id.name},
              {"namespace", id.namespace_}};
}

Json ToJson(const JsonPath& path) {
  Json out{{"name", path.name}, {"path", path.path}};
  if (path.version.has_value()) {
    out["version"] = *path.version;
  }
  return out;
}

Json ToJson(const FeedbackRule& rule) {
  Json out{{"type", rule.type}};
  if (!rule.json_paths.empty()) {
    Json paths = Json::array();
    for (const auto& path : rule.json_paths) {
      paths.push_back(ToJson(path));
    }
    out["jsonPaths"] = std::move(paths);
  }
  return out;
}

Json ToJson(const IgnoreField& field) {
  Json out{{"condition", field.condition}};
  if (!field.json_paths.empty()) {
    out["jsonPaths"] = StringArray(field.json_paths);
  }
  if (!field.json_pointers.empty()) {
    out["jsonPointers"] = StringArray(field.json_pointers);
  }
  if (!field.jq_path_expressions.empty()) {
    out["jqPathExpressions"] = StringArray(field.jq_path_expressions);
  }
  return out;
}

Json ToJson(const UpdateStrategy& strategy) {
  Json out = Json::object();
  if (strategy.type.has_value()) {
    out["type"] = *strategy.type;
  }
  if (strategy.server_side_apply.has_value()) {
    const auto& ssa = *strategy.server_side_apply;
    Json ssa_json{{"force", ssa.force}};
    if (ssa.field_manager.has_value()) {
      ssa_json["fieldManager"] = *ssa.field_manager;
    }
    if (!ssa.ignore_fields.empty()) {
      Json fields = Json::array();
      for (const auto& field : ssa.ignore_fields) {
        fields.push_back(ToJson(field));
      }
      ssa_json["ignoreFields"] = std::move(fields);
    }
    out["serverSideApply"] = std::move(ssa_json);
  }
  return out;
}

Json ToJson(const ConditionRule& rule) {
  return Json{{"condition", rule.condition},
              {"type", rule.type},
              {"celExpressions", StringArray(rule.cel_expressions)},
              {"message", rule.message},
              {"messageExpression", rule.message_expression}};
}

Json ToJson(const ManifestConfigOption& option) {
  Json out{{"resourceIdentifier", ToJson(option.resource_identifier)}};
  if (!option.feedback_rules.empty()) {
    Json rules = Json::array();
    for (const auto& rule : option.feedback_rules) {
      rules.push_back(ToJson(rule));
    }
    out["feedbackRules"] = std::move(rules);
  }
  if (option.update_strategy.has_value()) {
    out["updateStrategy"] = ToJson(*option.update_strategy);
  }
  if (!option.condition_rules.empty()) {
    Json rules = Json::array();
    for (const auto& rule : option.condition_rules) {
      rules.push_back(ToJson(rule));
    }
    out["conditionRules"] = std::move(rules);
  }
  if (option.feedback_scrape_type.has_value()) {
    out["feedbackScrapeType"] = *option.feedback_scrape_type;
  }
  return out;
}

Json ToJson(const DeleteOption& option) {
  Json out{{"propagationPolicy", option.propagation_policy}};
  if (option.orphaning_rules.has_value()) {
    Json rules = Json::array();
    for (const auto& rule : *option.orphaning_rules) {
      rules.push_back(ToJson(rule));
    }
    out["selectivelyOrphans"] = Json{{"orphaningRules", std::move(rules)}};
  }
  if (option.ttl_seconds_after_finished.has_value()) {
    out["ttlSecondsAfterFinished"] = *option.ttl_seconds_after_finished;
  }
  return out;
}

Json ToJson(const ManifestWorkExecutor& executor) {
  Json subject{{"type", executor.subject_type}};
  if (executor.service_account_name.has_value() || executor.service_account_namespace.has_value()) {
    subject["serviceAccount"] = Json{{"namespace", executor.service_account_namespace.value_or("")},
                                     {"name", executor.service_account_name.value_or("")}};
  }
  return Json{{"subject", std::move(subject)}};
}

// --- decoding ------------------------------------------------------------------------------------

absl::StatusOr<ResourceIdentifier> ResourceIdentifierFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  ResourceIdentifier id;
  RETURN_IF_ERROR(reader.String("group", &id.group));
  RETURN_IF_ERROR(reader.String("resource", &id.resource));
  RETURN_IF_ERROR(reader.String("name", &id.name));
  RETURN_IF_ERROR(reader.String("namespace", &id.namespace_));
  return id;
}

absl::StatusOr<FeedbackRule> FeedbackRuleFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  FeedbackRule rule;
  RETURN_IF_ERROR(reader.String("type", &rule.type));
  RETURN_IF_ERROR(ForEachElement(reader, "jsonPaths", [&](const Json& element, std::string p) {
    ASSIGN_OR_RETURN(auto path_reader, ObjectReader::Make(element, std::move(p)));
    JsonPath json_path;
    RETURN_IF_ERROR(path_reader.String("name", &json_path.name));
    RETURN_IF_ERROR(path_reader.OptionalString("version", &json_path.version));
    RETURN_IF_ERROR(path_reader.String("path", &json_path.path));
    rule.json_paths.push_back(std::move(json_path));
    return absl::OkStatus();
  }));
  return rule;
}

absl::StatusOr<UpdateStrategy> UpdateStrategyFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  UpdateStrategy strategy;
  RETURN_IF_ERROR(reader.OptionalString("type", &strategy.type));
  if (const Json* ssa_value = reader.Find("serverSideApply")) {
    ASSIGN_OR_RETURN(auto ssa_reader,
                     ObjectReader::Make(*ssa_value, reader.PathOf("serverSideApply")));
    ServerSideApplyConfig ssa;
    RETURN_IF_ERROR(ssa_reader.Bool("force", &ssa.force));
    RETURN_IF_ERROR(ssa_reader.OptionalString("fieldManager", &ssa.field_manager));
    RETURN_IF_ERROR(
        ForEachElement(ssa_reader, "ignoreFields", [&](const Json& element, std::string p) {
          ASSIGN_OR_RETURN(auto field_reader, ObjectReader::Make(element, std::move(p)));
          IgnoreField field;
          RETURN_IF_ERROR(field_reader.String("condition", &field.condition));
          RETURN_IF_ERROR(field_reader.StringList("jsonPaths", &field.json_paths));
          RETURN_IF_ERROR(field_reader.StringList("jsonPointers", &field.json_pointers));
          RETURN_IF_ERROR(field_reader.StringList("jqPathExpressions", &field.jq_path_expressions));
          ssa.ignore_fields.push_back(std::move(field));
          return absl::OkStatus();
        }));
    strategy.server_side_apply = std::move(ssa);
  }
  return strategy;
}

absl::StatusOr<ManifestConfigOption> ManifestConfigFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  ManifestConfigOption option;
  if (const Json* id = reader.Find("resourceIdentifier")) {
    ASSIGN_OR_RETURN(option.resource_identifier,
                     ResourceIdentifierFromJson(*id, reader.PathOf("resourceIdentifier")));
  }
  RETURN_IF_ERROR(ForEachElement(reader, "feedbackRules", [&](const Json& element, std::string p) {
    ASSIGN_OR_RETURN(auto rule, FeedbackRuleFromJson(element, std::move(p)));
    option.feedback_rules.push_back(std::move(rule));
    return absl::OkStatus();
  }));
  if (const Json* strategy = reader.Find("updateStrategy")) {
    ASSIGN_OR_RETURN(option.update_strategy,
                     UpdateStrategyFromJson(*strategy, reader.PathOf("updateStrategy")));
  }
  RETURN_IF_ERROR(ForEachElement(reader, "conditionRules", [&](const Json& element, std::string p) {
    ASSIGN_OR_RETURN(auto rule_reader, ObjectReader::Make(element, std::move(p)));
    ConditionRule rule;
    RETURN_IF_ERROR(rule_reader.String("condition", &rule.condition));
    RETURN_IF_ERROR(rule_reader.String("type", &rule.type));
    RETURN_IF_ERROR(rule_reader.StringList("celExpressions", &rule.cel_expressions));
    RETURN_IF_ERROR(rule_reader.String("message", &rule.message));
    RETURN_IF_ERROR(rule_reader.String("messageExpression", &rule.message_expression));
    option.condition_rules.push_back(std::move(rule));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(reader.OptionalString("feedbackScrapeType", &option.feedback_scrape_type));
  return option;
}

absl::StatusOr<DeleteOption> DeleteOptionFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  DeleteOption option;
  RETURN_IF_ERROR(reader.String("propagationPolicy", &option.propagation_policy));
  if (const Json* orphans = reader.Find("selectivelyOrphans")) {
    ASSIGN_OR_RETURN(auto orphans_reader,
                     ObjectReader::Make(*orphans, reader.PathOf("selectivelyOrphans")));
    option.orphaning_rules.emplace();
    RETURN_IF_ERROR(
        ForEachElement(orphans_reader, "orphaningRules", [&](const Json& element, std::string p) {
          ASSIGN_OR_RETURN(auto rule, ResourceIdentifierFromJson(element, std::move(p)));
          option.orphaning_rules->push_back(std::move(rule));
          return absl::OkStatus();
        }));
  }
  RETURN_IF_ERROR(
      reader.OptionalInt64("ttlSecondsAfterFinished", &option.ttl_seconds_after_finished));
  return option;
}

absl::StatusOr<ManifestWorkExecutor> ExecutorFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  ManifestWorkExecutor executor;
  if (const Json* subject = reader.Find("subject")) {
    ASSIGN_OR_RETURN(auto subject_reader, ObjectReader::Make(*subject, reader.PathOf("subject")));
    RETURN_IF_ERROR(subject_reader.String("type", &executor.subject_type));
    if (const Json* account = subject_reader.Find("serviceAccount")) {
      ASSIGN_OR_RETURN(auto account_reader,
                       ObjectReader::Make(*account, subject_reader.PathOf("serviceAccount")));
      std::string ns;
      std::string name;
      RETURN_IF_ERROR(account_reader.String("namespace", &ns));
      RETURN_IF_ERROR(account_reader.String("name", &name));
      executor.service_account_namespace = std::move(ns);
      executor.service_account_name = std::move(name);
    }
  }
  return executor;
}

}  // namespace

nlohmann::json ToJson(const ManifestBundle& bundle) {
  Json manifests = Json::array();
  for (const auto& manifest : bundle.manifests) {
    manifests.push_back(manifest);
  }
  Json out{{"manifests", std::move(manifests)}};
  if (bundle.delete_option.has_value()) {
    out["deleteOption"] = ToJson(*bundle.delete_option);
  }
  if (!bundle.manifest_configs.empty()) {
    Json configs = Json::array();
    for (const auto& config : bundle.manifest_configs) {
      configs.push_back(ToJson(config));
    }
    out["manifestConfigs"] = std::move(configs);
  }
  if (bundle.executer.has_value()) {
    out["executer"] = ToJson(*bundle.executer);
  }
  return out;
}

absl::StatusOr<ManifestBundle> ManifestBundleFromJson(const nlohmann::json& value,
                                                      std::string_view path,
                                                      const CodecLimits& /*limits*/) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::string(path)));
  ManifestBundle bundle;
  RETURN_IF_ERROR(
      ForEachElement(reader, "manifests", [&](const Json& element, const std::string& p) {
        if (!element.is_object()) {
          return absl::InvalidArgumentError(
              absl::StrCat(p, " must be a Kubernetes object (JSON object), got ",
                           std::string(internal::JsonTypeName(element))));
        }
        bundle.manifests.push_back(element);
        return absl::OkStatus();
      }));
  if (const Json* option = reader.Find("deleteOption")) {
    ASSIGN_OR_RETURN(bundle.delete_option,
                     DeleteOptionFromJson(*option, reader.PathOf("deleteOption")));
  }
  RETURN_IF_ERROR(
      ForEachElement(reader, "manifestConfigs", [&](const Json& element, std::string p) {
        ASSIGN_OR_RETURN(auto config, ManifestConfigFromJson(element, std::move(p)));
        bundle.manifest_configs.push_back(std::move(config));
        return absl::OkStatus();
      }));
  if (const Json* executer = reader.Find("executer")) {
    ASSIGN_OR_RETURN(bundle.executer, ExecutorFromJson(*executer, reader.PathOf("executer")));
  }
  return bundle;
}

absl::StatusOr<std::string> EncodeManifestBundle(const ManifestBundle& bundle) {
  for (std::size_t i = 0; i < bundle.manifests.size(); ++i) {
    if (!bundle.manifests[i].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot encode ManifestBundle: manifests[", i, "] must be a JSON object, got ",
          std::string(internal::JsonTypeName(bundle.manifests[i]))));
    }
  }
  return EncodeJson(ToJson(bundle), "ManifestBundle");
}

absl::StatusOr<ManifestBundle> DecodeManifestBundle(std::string_view data,
                                                    const CodecLimits& limits) {
  ASSIGN_OR_RETURN(auto json, internal::ParseJson(data, limits, "ManifestBundle data"));
  return ManifestBundleFromJson(json, "data", limits);
}

absl::StatusOr<ManifestBundle> ManifestBundleOf(const Event& event, const CodecLimits& limits) {
  RETURN_IF_ERROR(CheckEventData(event));
  return DecodeManifestBundle(*event.data, limits);
}

}  // namespace mmi::cloudevents
