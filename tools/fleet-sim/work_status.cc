#include "tools/fleet-sim/work_status.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "tools/fleet-sim/simulated_object.h"
#include "tools/fleet-sim/status_feedback.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Condition;
using cloudevents::ManifestBundle;
using cloudevents::ManifestBundleStatus;
using cloudevents::ManifestCondition;
using cloudevents::Timestamp;
using kube::StringAt;
using nlohmann::json;

// `argoproj.io/v1alpha1` -> {"argoproj.io", "v1alpha1"}; `v1` -> {"", "v1"}.
std::pair<std::string, std::string> SplitApiVersion(const std::string& api_version) {
  const auto slash = api_version.find('/');
  if (slash == std::string::npos) {
    return {"", api_version};
  }
  return {api_version.substr(0, slash), api_version.substr(slash + 1)};
}

// The manifestConfig that applies to a manifest, or nullptr.
const cloudevents::ManifestConfigOption* ConfigFor(const ManifestBundle& bundle,
                                                   const std::string& group,
                                                   const std::string& name, const std::string& ns) {
  for (const auto& config : bundle.manifest_configs) {
    const auto& id = config.resource_identifier;
    if (id.group == group && id.name == name && id.namespace_ == ns) {
      return &config;
    }
  }
  return nullptr;
}

// Evaluates a simple JSONPath (`.status`, `.status.sync.status`, a backslash escaping the next
// character as in Kubernetes JSONPath: `.metadata.annotations.a\.b/c`) on `object`. nullopt when
// the path does not resolve or uses syntax the simulator does not support (filters, indices).
std::optional<json> Evaluate(const json& object, std::string_view path) {
  if (path.empty() || path.front() != '.' || path.find_first_of("[]*?@") != std::string::npos) {
    return std::nullopt;
  }
  const json* current = &object;
  std::string part;
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '.') {
      if (part.empty()) {
        return std::nullopt;
      }
      current = Child(*current, part);
      if (current == nullptr) {
        return std::nullopt;
      }
      part.clear();
      continue;
    }
    if (path[i] == '\\' && i + 1 < path.size()) {
      ++i;
    }
    part.push_back(path[i]);
  }
  return *current;
}

cloudevents::FieldValue ToFieldValue(const json& value) {
  cloudevents::FieldValue field;
  if (value.is_string()) {
    field.type = cloudevents::FieldValueType::kString;
    field.string = value.get<std::string>();
  } else if (value.is_number_integer()) {
    field.type = cloudevents::FieldValueType::kInteger;
    field.integer = value.get<std::int64_t>();
  } else if (value.is_boolean()) {
    field.type = cloudevents::FieldValueType::kBoolean;
    field.boolean = value.get<bool>();
  } else {
    // Objects, arrays and floats: compact JSON text (RawFeedbackJsonString, §2.3).
    field.type = cloudevents::FieldValueType::kJsonRaw;
    field.json_raw = value.dump();
    field.json_raw_value = value;
  }
  return field;
}

}  // namespace

const json* Child(const json& value, std::string_view key) {
  if (!value.is_object()) {
    return nullptr;
  }
  auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

const json& MetadataOf(const json& manifest) {
  static const json kEmpty = json::object();
  const json* meta = Child(manifest, "metadata");
  return meta != nullptr ? *meta : kEmpty;
}

bool IsApplication(const json& manifest) {
  return StringAt(manifest, "kind") == "Application" &&
         SplitApiVersion(StringAt(manifest, "apiVersion")).first == "argoproj.io";
}

// The agent's own validation (§6.3 step 4): non-empty, bounded, every manifest named, no
// generateName.
absl::Status ValidateBundle(const ManifestBundle& bundle, std::size_t max_bytes) {
  if (bundle.manifests.empty()) {
    return absl::InvalidArgumentError("data.manifests: must not be empty");
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < bundle.manifests.size(); ++i) {
    const json& manifest = bundle.manifests[i];
    total += manifest.dump().size();
    const json& meta = MetadataOf(manifest);
    if (StringAt(meta, "name").empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.manifests[", i, "].metadata.name: must be set"));
    }
    if (Child(meta, "generateName") != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.manifests[", i, "].metadata.generateName: must not be set"));
    }
  }
  if (total > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.manifests: ", total, " bytes exceed the agent limit of ", max_bytes));
  }
  return absl::OkStatus();
}

Condition MakeCondition(std::string type, std::int64_t generation, Timestamp when,
                        std::string reason, std::string message) {
  Condition condition;
  condition.type = std::move(type);
  condition.status = std::string(cloudevents::kConditionTrue);
  condition.observed_generation = generation;
  condition.last_transition_time = std::chrono::floor<std::chrono::seconds>(when);
  condition.reason = std::move(reason);
  condition.message = std::move(message);
  return condition;
}

ManifestBundleStatus BuildWorkStatus(const ManifestBundle& bundle, std::int32_t version,
                                     Timestamp applied_at,
                                     const std::vector<ApplicationRuntime>& runtimes) {
  ManifestBundleStatus status;
  status.conditions.push_back(MakeCondition("Applied", version, applied_at,
                                            "AppliedManifestWorkComplete",
                                            "Apply manifest work complete"));
  status.conditions.push_back(MakeCondition("Available", version, applied_at, "ResourcesAvailable",
                                            "All resources are available"));
  for (std::size_t i = 0; i < bundle.manifests.size(); ++i) {
    const json& manifest = bundle.manifests[i];
    const json& meta = MetadataOf(manifest);
    ManifestCondition entry;
    auto [group, version] = SplitApiVersion(StringAt(manifest, "apiVersion"));
    entry.resource_meta.ordinal = static_cast<std::int32_t>(i);
    entry.resource_meta.group = group;
    entry.resource_meta.version = version;
    entry.resource_meta.kind = StringAt(manifest, "kind");
    entry.resource_meta.name = StringAt(meta, "name");
    entry.resource_meta.namespace_ = StringAt(meta, "namespace");
    const auto* config =
        ConfigFor(bundle, group, entry.resource_meta.name, entry.resource_meta.namespace_);
    entry.resource_meta.resource =
        config != nullptr ? config->resource_identifier.resource
                          : absl::StrCat(absl::AsciiStrToLower(entry.resource_meta.kind), "s");

    bool has_rules = false;
    std::string feedback_error;
    if (config != nullptr && !config->feedback_rules.empty() && !IsApplication(manifest)) {
      // A plain manifest (manifest delivery): every rule, WellKnownStatus included, read from
      // the object as it would stand once settled, as apply mode reads it from a live one.
      FeedbackResult feedback = ReadFeedback(config->feedback_rules, SettledObject(manifest), group,
                                             version, entry.resource_meta.kind);
      has_rules = true;
      entry.status_feedback = std::move(feedback.values);
      feedback_error = std::move(feedback.error);
    }
    // The live object as the spoke would show it: the Application gets its simulated status.
    json live = manifest;
    if (IsApplication(manifest) && i < runtimes.size()) {
      live["status"] = ApplicationStatus(manifest, runtimes[i]);
    }
    if (config != nullptr && IsApplication(manifest)) {
      for (const auto& rule : config->feedback_rules) {
        if (rule.type != cloudevents::kFeedbackJsonPaths) {
          continue;  // WellKnownStatus covers Deployments/Jobs/Pods, not Applications
        }
        has_rules = true;
        for (const auto& path : rule.json_paths) {
          if (auto value = Evaluate(live, path.path); value.has_value() && !value->is_null()) {
            entry.status_feedback.push_back({path.name, ToFieldValue(*value)});
          }
        }
      }
    }
    entry.conditions.push_back(MakeCondition("Applied", 0, applied_at, "AppliedManifestComplete",
                                             "Apply manifest complete"));
    entry.conditions.push_back(
        MakeCondition("Available", 0, applied_at, "ResourceAvailable", "Resource is available"));
    if (has_rules) {
      Condition synced = MakeCondition("StatusFeedbackSynced", 0, applied_at,
                                       "StatusFeedbackSynced", feedback_error);
      if (!feedback_error.empty()) {
        synced.status = "False";
        synced.reason = "StatusFeedbackSyncFailed";
      }
      entry.conditions.push_back(std::move(synced));
    }
    status.resource_status.push_back(std::move(entry));
  }
  return status;
}

absl::StatusOr<cloudevents::Event> MakeWorkStatusEvent(
    const WorkIdentity& work, const ManifestBundleStatus& status, bool resync_response,
    Timestamp now, cloudevents::SequenceIdGenerator& sequence_ids, std::string* hash) {
  ASSIGN_OR_RETURN(std::string data, cloudevents::EncodeManifestBundleStatus(status));
  ASSIGN_OR_RETURN(std::string status_hash, cloudevents::StatusHash(status));
  if (hash != nullptr) {
    *hash = status_hash;
  }
  cloudevents::ResourceEventHeader header{.id = cloudevents::NewUuidV4(),
                                          .source = work.agent_id,
                                          .time = now,
                                          .cluster = work.cluster,
                                          .resource_id = work.resource_id,
                                          .version = work.version};
  cloudevents::StatusEventFields fields{.original_source = work.original_source,
                                        .sequence_id = sequence_ids.Next().ToString(),
                                        .status_hash = std::move(status_hash),
                                        .metadata_json = work.metadata_json};
  return cloudevents::MakeStatusEvent(std::move(header), resync_response, std::move(fields),
                                      std::move(data));
}

absl::StatusOr<std::string> WorkMetadataJson(cloudevents::ObjectMeta meta,
                                             const std::string& cluster,
                                             const std::string& resource_id, std::int32_t version,
                                             const std::string& original_source,
                                             Timestamp created) {
  meta.namespace_ = cluster;
  meta.uid = resource_id;
  meta.generation = version;
  if (meta.name.empty()) {
    meta.name = resource_id;
  }
  meta.labels[std::string(kOriginalSourceLabel)] = original_source;
  if (!meta.creation_timestamp.has_value()) {
    meta.creation_timestamp = std::chrono::floor<std::chrono::seconds>(created);
  }
  meta.deletion_timestamp.reset();
  return cloudevents::FormatObjectMeta(meta);
}

}  // namespace mmi::fleet_sim
