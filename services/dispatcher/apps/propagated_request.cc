#include "services/dispatcher/apps/propagated_request.h"

#include "absl/strings/str_cat.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

// RFC 6901 escaping of one reference token.
std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

const json* Find(const json& obj, const char* key) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace

PropagatedRequest PropagatedRequestOf(const json& app) {
  PropagatedRequest r;
  if (const json* op = Find(app, "operation"); op != nullptr && op->is_object()) {
    r.operation = *op;
  }
  if (const json* meta = Find(app, "metadata"); meta != nullptr) {
    if (const json* ann = Find(*meta, "annotations"); ann != nullptr) {
      if (const json* v = Find(*ann, kRefreshAnnotation); v != nullptr && v->is_string()) {
        r.refresh = v->get<std::string>();
      }
    }
  }
  return r;
}

json StripRequestPatch(const PropagatedRequest& request) {
  json ops = json::array();
  if (request.operation) {
    ops.push_back({{"op", "test"}, {"path", "/operation"}, {"value", *request.operation}});
    ops.push_back({{"op", "remove"}, {"path", "/operation"}});
  }
  if (request.refresh) {
    const std::string path =
        absl::StrCat("/metadata/annotations/", PointerToken(kRefreshAnnotation));
    ops.push_back({{"op", "test"}, {"path", path}, {"value", *request.refresh}});
    ops.push_back({{"op", "remove"}, {"path", path}});
  }
  return ops;
}

}  // namespace mmi::dispatcher
