#include "tools/fleet-sim/apply_plan.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/kube_object/object.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::ManifestBundle;
using cloudevents::ManifestConfigOption;
using cloudevents::ResourceIdentifier;
using kube::StringAt;
using nlohmann::json;

const json& Metadata(const json& manifest) {
  static const json kEmpty = json::object();
  auto it = manifest.find("metadata");
  return it != manifest.end() && it->is_object() ? *it : kEmpty;
}

// The manifestConfig naming this manifest, or nullptr. The agent matches group, resource, name
// and namespace (its RESTMapper gives the resource): a Service and a ConfigMap of one name in one
// namespace have a config each. Without discovery the resource is kubectl's guess
// (plan.ref.resource); when no config has the guessed resource, the only config naming the
// object by group, name and namespace is taken (a kind whose plural the guess misses), never one
// of several.
const ManifestConfigOption* ConfigFor(const ManifestBundle& bundle, const ManifestPlan& plan) {
  const ManifestConfigOption* only = nullptr;
  int named = 0;
  for (const ManifestConfigOption& config : bundle.manifest_configs) {
    const ResourceIdentifier& id = config.resource_identifier;
    if (id.group != plan.group || id.name != plan.name || id.namespace_ != plan.namespace_) {
      continue;
    }
    if (id.resource == plan.ref.resource) {
      return &config;
    }
    only = &config;
    ++named;
  }
  return named == 1 ? only : nullptr;
}

// The keys of ".a.b[\"c\"]": a, b, c; empty when the path cannot be parsed.
std::vector<std::string> PathKeys(std::string_view path) {
  std::vector<std::string> keys;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      const std::size_t end = path.find_first_of(".[", i + 1);
      keys.emplace_back(path.substr(i + 1, end == std::string_view::npos ? end : end - i - 1));
      i = end == std::string_view::npos ? path.size() : end;
    } else if (path.substr(i).starts_with("[\"")) {
      const std::size_t end = path.find("\"]", i + 2);
      if (end == std::string_view::npos) {
        return {};
      }
      keys.emplace_back(path.substr(i + 2, end - i - 2));
      i = end + 2;
    } else {
      return {};
    }
    if (keys.back().empty()) {
      return {};
    }
  }
  return keys;
}

// OCM's agent hashes what it applies when ignoreFields are set (see ManifestPlan).
void PlanIgnoreFields(const std::vector<cloudevents::IgnoreField>& fields, ManifestPlan& plan) {
  json present = plan.manifest;
  for (const cloudevents::IgnoreField& field : fields) {
    if (field.condition == "OnSpokePresent") {
      for (const std::string& path : field.json_paths) {
        RemoveJsonPath(present, path);
      }
    }
  }
  plan.config_spec_hash = cloudevents::Sha256Hex(present.dump()).substr(0, 32);
  for (json* manifest : {&present, &plan.manifest}) {
    (*manifest)["metadata"]["annotations"][std::string(kConfigSpecHashAnnotation)] =
        plan.config_spec_hash;
  }
  plan.manifest_when_present = std::move(present);
}

absl::Status ApplyStrategy(const cloudevents::UpdateStrategy& strategy, ManifestPlan& plan,
                           std::string_view where) {
  const std::string type = strategy.type.value_or(std::string(cloudevents::kUpdateStrategyUpdate));
  if (type == cloudevents::kUpdateStrategyUpdate) {
    plan.mode = WriteMode::kUpdate;
  } else if (type == cloudevents::kUpdateStrategyCreateOnly) {
    plan.mode = WriteMode::kCreateOnly;
  } else if (type == cloudevents::kUpdateStrategyReadOnly) {
    plan.mode = WriteMode::kReadOnly;
  } else if (type == cloudevents::kUpdateStrategyServerSideApply) {
    plan.mode = WriteMode::kServerSideApply;
    if (strategy.server_side_apply.has_value()) {
      plan.force = strategy.server_side_apply->force;
      if (strategy.server_side_apply->field_manager.has_value() &&
          !strategy.server_side_apply->field_manager->empty()) {
        plan.field_manager = *strategy.server_side_apply->field_manager;
      }
      if (!strategy.server_side_apply->ignore_fields.empty()) {
        PlanIgnoreFields(strategy.server_side_apply->ignore_fields, plan);
      }
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(where), ".updateStrategy.type: unknown strategy \"", type, "\""));
  }
  return absl::OkStatus();
}

bool Orphaned(const cloudevents::DeleteOption& option, const ManifestPlan& plan) {
  if (option.propagation_policy == "Orphan") {
    return true;
  }
  if (option.propagation_policy != "SelectivelyOrphan" || !option.orphaning_rules.has_value()) {
    return false;
  }
  for (const ResourceIdentifier& rule : *option.orphaning_rules) {
    if (rule.group == plan.group && rule.resource == plan.ref.resource && rule.name == plan.name &&
        rule.namespace_ == plan.namespace_) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view WriteModeName(WriteMode mode) {
  switch (mode) {
    case WriteMode::kUpdate:
      return cloudevents::kUpdateStrategyUpdate;
    case WriteMode::kCreateOnly:
      return cloudevents::kUpdateStrategyCreateOnly;
    case WriteMode::kServerSideApply:
      return cloudevents::kUpdateStrategyServerSideApply;
    case WriteMode::kReadOnly:
      return cloudevents::kUpdateStrategyReadOnly;
  }
  return "";
}

void RemoveJsonPath(json& object, std::string_view path) {
  const std::vector<std::string> keys = PathKeys(path);
  json* at = &object;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    auto it = at->is_object() ? at->find(keys[i]) : at->end();
    if (it == at->end()) {
      return;
    }
    at = &*it;
  }
  if (!keys.empty() && at->is_object()) {
    at->erase(keys.back());
  }
}

std::string GuessResource(std::string_view kind) {
  std::string lower = absl::AsciiStrToLower(std::string(kind));
  if (lower.empty()) {
    return lower;
  }
  if (lower.back() == 'y' && lower.size() > 1 &&
      std::string_view("aeiou").find(lower[lower.size() - 2]) == std::string_view::npos) {
    lower.pop_back();
    return absl::StrCat(lower, "ies");
  }
  if (lower.back() == 's' || lower.back() == 'x' || lower.back() == 'z' ||
      absl::EndsWith(lower, "ch") || absl::EndsWith(lower, "sh")) {
    return absl::StrCat(lower, "es");
  }
  return absl::StrCat(lower, "s");
}

absl::StatusOr<ApplyPlan> PlanBundle(const ManifestBundle& bundle) {
  ApplyPlan plan;
  for (std::size_t i = 0; i < bundle.manifests.size(); ++i) {
    const json& manifest = bundle.manifests[i];
    const std::string where = absl::StrCat("manifests[", i, "]");
    ManifestPlan m;
    m.ordinal = i;
    const std::string api_version = StringAt(manifest, "apiVersion");
    m.kind = StringAt(manifest, "kind");
    m.name = StringAt(Metadata(manifest), "name");
    m.namespace_ = StringAt(Metadata(manifest), "namespace");
    if (api_version.empty() || m.kind.empty() || m.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": apiVersion, kind and metadata.name are required"));
    }
    if (const auto slash = api_version.find('/'); slash != std::string::npos) {
      m.group = api_version.substr(0, slash);
      m.version = api_version.substr(slash + 1);
    } else {
      m.version = api_version;
    }
    m.ref = kube::ResourceRef{m.group, m.version, GuessResource(m.kind), m.namespace_};
    m.manifest = manifest;
    m.field_manager = std::string(kDefaultFieldManager);
    if (const ManifestConfigOption* config = ConfigFor(bundle, m); config != nullptr) {
      if (!config->resource_identifier.resource.empty()) {
        m.ref.resource = config->resource_identifier.resource;
      }
      m.feedback_rules = config->feedback_rules;
      if (config->update_strategy.has_value()) {
        if (absl::Status status = ApplyStrategy(*config->update_strategy, m, where); !status.ok()) {
          return status;
        }
      }
    }
    if (bundle.delete_option.has_value()) {
      m.orphan_on_delete = Orphaned(*bundle.delete_option, m);
    }
    plan.manifests.push_back(std::move(m));
  }
  return plan;
}

bool CarriesOwnerReference(const ManifestPlan& applied) {
  return !applied.orphan_on_delete && applied.mode != WriteMode::kReadOnly;
}

std::vector<ManifestPlan> DroppedToDelete(const ApplyPlan& applied, const ApplyPlan& next) {
  auto key = [](const ManifestPlan& m) {
    return std::tie(m.ref.group, m.ref.resource, m.namespace_, m.name);
  };
  std::vector<ManifestPlan> out;
  for (const ManifestPlan& old : applied.manifests) {
    const bool kept = std::ranges::any_of(
        next.manifests, [&](const ManifestPlan& now) { return key(now) == key(old); });
    if (!kept && CarriesOwnerReference(old)) {
      out.push_back(old);
    }
  }
  return out;
}

}  // namespace mmi::fleet_sim
