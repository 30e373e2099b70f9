#include "services/dispatcher/apps/hub_writes.h"

#include "absl/strings/str_cat.h"
#include "libs/kube/errors.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/apps/finalizers.h"

namespace mmi::dispatcher {
using nlohmann::json;

kube::ResourceRef ApplicationsRef(const std::string& ns) {
  return {"argoproj.io", "v1alpha1", "applications", ns};
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
