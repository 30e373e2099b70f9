#include "services/status-sink/decoding/status_update.h"

#include <utility>

#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/status_hash.h"
#include "services/status-sink/decoding/internal/json_tree.h"

namespace mmi::status_sink {
namespace {

// The tree of a status the one-pass decoder vouched for (its parser agrees with nlohmann on
// it; nlohmann's own parser only if it did not).
nlohmann::json ParseStatusText(const std::string& text) {
  thread_local internal::JsonTreeParser parser;
  if (auto tree = parser.Parse(text, cloudevents::CodecLimits{}.max_json_depth)) {
    return *std::move(tree);
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

bool IsVolatileMember(std::string_view key) {
  return key == "reconciledAt" || key == "observedAt" || key == "controllerNamespace";
}

std::string MaterialHashOf(const StatusUpdate& update, bool ignore_resource_health_messages) {
  if (!update.material_hash.empty() &&
      update.material_hash_ignores_health_messages == ignore_resource_health_messages) {
    return update.material_hash;
  }
  if (update.status.is_null() && !update.status_text.empty()) {
    return MaterialHash(ParseStatusText(update.status_text), ignore_resource_health_messages);
  }
  return MaterialHash(update.status, ignore_resource_health_messages);
}

const nlohmann::json& StatusTree(StatusUpdate& update) {
  if (update.status.is_null() && !update.status_text.empty()) {
    update.status = ParseStatusText(update.status_text);
    std::string().swap(update.status_text);
  }
  return update.status;
}

void KeepStatusAsText(StatusUpdate& update, bool ignore_resource_health_messages) {
  if (update.status.is_null()) {
    return;
  }
  update.material_hash = MaterialHash(update.status, ignore_resource_health_messages);
  update.material_hash_ignores_health_messages = ignore_resource_health_messages;
  // As the hub write dumps it: invalid UTF-8 replaced, never an exception on the loop.
  update.status_text = update.status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  update.status_text.shrink_to_fit();  // dump() grows by appending
  update.status = nullptr;
}

std::string MaterialHash(const nlohmann::json& status, bool ignore_resource_health_messages) {
  using Json = nlohmann::json;
  if (status.is_object() && !ignore_resource_health_messages) {
    // The text of dump() on a copy without the volatile members, written straight from the
    // status: no copy of the tree (the hash must stay what it was: the store keeps it).
    std::string text = "{";
    nlohmann::detail::serializer<Json> out(nlohmann::detail::output_adapter<char>(text), ' ',
                                           Json::error_handler_t::replace);
    for (const auto& [key, value] : status.get_ref<const Json::object_t&>()) {
      if (IsVolatileMember(key)) {
        continue;
      }
      if (text.size() > 1) {
        text.push_back(',');
      }
      out.dump(Json(key), false, false, 0);
      text.push_back(':');
      out.dump(value, false, false, 0);
    }
    text.push_back('}');
    return cloudevents::Sha256Hex(text);
  }
  Json material = status;
  if (material.is_object()) {
    for (const char* key : {"reconciledAt", "observedAt", "controllerNamespace"}) {
      material.erase(key);
    }
    auto resources = material.find("resources");
    if (resources != material.end() && resources->is_array()) {
      for (auto& item : *resources) {
        if (item.is_object() && item.contains("health") && item["health"].is_object()) {
          item["health"].erase("message");
        }
      }
    }
  }
  // Object keys are sorted (std::map), so equal statuses serialize equally.
  return cloudevents::Sha256Hex(material.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace mmi::status_sink
