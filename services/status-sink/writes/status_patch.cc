#include "services/status-sink/writes/status_patch.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/event.h"

namespace mmi::status_sink {
namespace {

using Json = nlohmann::json;

// Members of Application `.status` (argoproj.io_applications.yaml), and for object members the
// members below them that a merge patch must be able to clear.
const std::map<std::string, std::vector<std::string>>& KnownStatusMembers() {
  static const auto* const kMembers = new std::map<std::string, std::vector<std::string>>{
      {"conditions", {}},
      {"controllerNamespace", {}},
      {"health", {"status", "message", "lastTransitionTime"}},
      {"history", {}},
      {"observedAt", {}},
      {"operationState",
       {"operation", "phase", "message", "syncResult", "startedAt", "finishedAt", "retryCount"}},
      {"reconciledAt", {}},
      {"resourceHealthSource", {}},
      {"resources", {}},
      {"sourceHydrator", {"lastSuccessfulOperation", "currentOperation"}},
      {"sourceType", {}},
      {"sourceTypes", {}},
      {"summary", {"externalURLs", "images", "isAppOfApps"}},
      {"sync", {"status", "revision", "revisions", "comparedTo"}},
  };
  return *kMembers;
}

bool IsNonEmptyString(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() && !it->get<std::string>().empty();
}

// Keeps only list entries that have every `required` member; fills a missing `message`.
void RepairList(Json& status, const char* list, std::vector<const char*> required,
                const char* fill_empty_string) {
  auto it = status.find(list);
  if (it == status.end() || !it->is_array()) {
    return;
  }
  Json kept = Json::array();
  for (auto& item : *it) {
    if (!item.is_object()) {
      continue;
    }
    bool ok = true;
    for (const char* key : required) {
      ok = ok && item.contains(key) && !item[key].is_null();
    }
    if (!ok) {
      continue;
    }
    if (fill_empty_string != nullptr && !item.contains(fill_empty_string)) {
      item[fill_empty_string] = "";
    }
    kept.push_back(std::move(item));
  }
  *it = std::move(kept);
}

// Makes `status` pass the CRD's required-member rules (see the header).
void Repair(Json& status, std::chrono::system_clock::time_point now) {
  if (auto sync = status.find("sync"); sync != status.end() && sync->is_object()) {
    if (!IsNonEmptyString(*sync, "status")) {
      (*sync)["status"] = "Unknown";
    }
  }
  if (auto op = status.find("operationState"); op != status.end()) {
    if (!op->is_object() || !IsNonEmptyString(*op, "phase")) {
      // No truthful phase to show: leave the hub's operationState out rather than invent one.
      status.erase(op);
    } else {
      if (!op->contains("operation") || !(*op)["operation"].is_object()) {
        (*op)["operation"] = Json::object();
      }
      if (!IsNonEmptyString(*op, "startedAt")) {
        (*op)["startedAt"] =
            cloudevents::FormatTimestamp(std::chrono::time_point_cast<std::chrono::seconds>(now));
      }
      if (auto result = op->find("syncResult"); result != op->end() && result->is_object()) {
        if (!result->contains("revision")) {
          (*result)["revision"] = "";
        }
      }
    }
  }
  if (auto hydrator = status.find("sourceHydrator");
      hydrator != status.end() && hydrator->is_object()) {
    if (auto current = hydrator->find("currentOperation");
        current != hydrator->end() && current->is_object()) {
      if (!IsNonEmptyString(*current, "phase")) {
        hydrator->erase(current);
      } else if (!current->contains("message")) {
        (*current)["message"] = "";
      }
    }
  }
  RepairList(status, "conditions", {"type"}, "message");
  RepairList(status, "history", {"id", "deployedAt"}, nullptr);
}

// Adds `null` for each known member the spoke did not report (two levels).
void NullFill(Json& status) {
  for (const auto& [member, children] : KnownStatusMembers()) {
    auto it = status.find(member);
    if (it == status.end()) {
      status[member] = nullptr;
      continue;
    }
    if (it->is_object()) {
      for (const auto& child : children) {
        if (!it->contains(child)) {
          (*it)[child] = nullptr;
        }
      }
    }
  }
}

std::size_t Size(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace).size();
}

}  // namespace

absl::StatusOr<Json> BuildStatusPatch(const Json& spoke_status, const StatusPatchSettings& settings,
                                      std::chrono::system_clock::time_point now) {
  if (!spoke_status.is_object()) {
    return absl::InvalidArgumentError("the Application status to write is not a JSON object");
  }
  Json status = spoke_status;
  Repair(status, now);
  if (const std::size_t size = Size(status); size > settings.max_status_bytes) {
    status.erase("resources");
    if (auto op = status.find("operationState"); op != status.end() && op->is_object()) {
      if (auto result = op->find("syncResult"); result != op->end() && result->is_object()) {
        result->erase("resources");
      }
    }
    status["conditions"] = Json::array(
        {{{"type", "UnknownError"},
          {"message",
           absl::StrCat("the application status (", size, " bytes) exceeds the hub write limit of ",
                        settings.max_status_bytes,
                        " bytes; resources are omitted, see the managed cluster")}}});
    if (Size(status) > settings.max_status_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("the application status stays larger than ",
                                                     settings.max_status_bytes,
                                                     " bytes without its resources"));
    }
  }
  NullFill(status);
  return Json{{"status", std::move(status)}};
}

std::optional<std::string> HealthOf(const Json& status) {
  if (!status.is_object()) {
    return std::nullopt;
  }
  auto health = status.find("health");
  if (health == status.end() || !health->is_object()) {
    return std::nullopt;
  }
  auto value = health->find("status");
  if (value == health->end() || !value->is_string()) {
    return std::nullopt;
  }
  return value->get<std::string>();
}

bool NeedsProgressingFirst(const Json& status,
                           const std::optional<std::string>& last_written_health) {
  if (HealthOf(status) != kHealthHealthy) {
    return false;
  }
  return last_written_health != kHealthHealthy && last_written_health != kHealthProgressing;
}

Json ProgressingPatch(Json patch) {
  auto status = patch.find("status");
  if (status != patch.end() && status->is_object()) {
    auto health = status->find("health");
    if (health != status->end() && health->is_object()) {
      (*health)["status"] = kHealthProgressing;
    }
  }
  return patch;
}

}  // namespace mmi::status_sink
