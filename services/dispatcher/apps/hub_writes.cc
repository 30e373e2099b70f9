#include "services/dispatcher/apps/hub_writes.h"

#include "absl/strings/str_cat.h"
#include "libs/kube/errors.h"
#include "libs/kube_object/object.h"
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

kube::ResourceRef ApplicationsRef(const std::string& ns) {
  return {"argoproj.io", "v1alpha1", "applications", ns};
}

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

bool HasResourcesFinalizer(const json& app) { return ReleaseFinalizerPatch(app).has_value(); }

std::optional<json> ReleaseFinalizerPatch(const json& app) {
  const json* meta = Find(app, "metadata");
  const json* finalizers = meta == nullptr ? nullptr : Find(*meta, "finalizers");
  if (finalizers == nullptr || !finalizers->is_array()) {
    return std::nullopt;
  }
  json ops = json::array();
  // Descending indices: removing one does not shift the ones still to remove.
  for (size_t i = finalizers->size(); i-- > 0;) {
    if ((*finalizers)[i] == kResourcesFinalizer) {
      const std::string path = absl::StrCat("/metadata/finalizers/", i);
      ops.push_back({{"op", "test"}, {"path", path}, {"value", kResourcesFinalizer}});
      ops.push_back({{"op", "remove"}, {"path", path}});
    }
  }
  if (ops.empty()) {
    return std::nullopt;
  }
  return ops;
}

absl::Status StripRequest(kube::KubeClient& hub, const std::string& ns, const std::string& name,
                          const PropagatedRequest& request) {
  const json ops = StripRequestPatch(request);
  if (ops.empty()) {
    return absl::OkStatus();
  }
  auto patched =
      hub.Patch(ApplicationsRef(ns), name, kube::PatchType::kJson, ops, kube::PatchOptions{}, "");
  if (patched.ok()) {
    return absl::OkStatus();
  }
  // A failed `test` is 422 Invalid: the request changed after we sent it.
  if (patched.status().code() == absl::StatusCode::kInvalidArgument) {
    return absl::FailedPreconditionError(
        absl::StrCat("Application ", ns, "/", name,
                     ": operation/refresh changed since it was dispatched; left in place"));
  }
  return patched.status();
}

absl::Status ReleaseFinalizer(kube::KubeClient& hub, const std::string& ns, const std::string& name,
                              int attempts) {
  absl::Status last;
  for (int i = 0; i < attempts; ++i) {
    auto app = hub.Get(ApplicationsRef(ns), name);
    if (absl::IsNotFound(app.status())) {
      return absl::OkStatus();
    }
    if (!app.ok()) {
      return app.status();
    }
    auto ops = ReleaseFinalizerPatch(*app);
    if (!ops) {
      return absl::OkStatus();
    }
    auto patched = hub.Patch(ApplicationsRef(ns), name, kube::PatchType::kJson, *ops,
                             kube::PatchOptions{}, "");
    if (patched.ok() || absl::IsNotFound(patched.status())) {
      return absl::OkStatus();
    }
    last = patched.status();
    // 422 (a `test` failed: the list moved) or 409: re-read and try again.
    if (last.code() != absl::StatusCode::kInvalidArgument && !absl::IsAborted(last)) {
      return last;
    }
  }
  return last;
}

}  // namespace mmi::dispatcher
