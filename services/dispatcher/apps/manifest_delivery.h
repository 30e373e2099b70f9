// ManifestDelivery: what the Reconciler asks of manifest delivery (ADR 0007) for one hub
// Application: which way it is delivered and, in manifest delivery, the bundle of its latest good
// render and the `manifest_renders` row. Implemented by services/dispatcher/manifests
// (ManifestRenderer), which needs Argo CD's repo-server client; the Reconciler only sees this
// interface, so builds without that client keep apps/ unchanged.
//
// Threads: the reconcile loop only.
#pragma once

#include <optional>
#include <string>

#include "libs/store/dispatch_store.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {

struct ManifestPlan {
  enum class Kind {
    kApplication,  // not in manifest delivery: Application delivery, unchanged
    // The Application asks for manifests but cannot have them (another annotation value, a
    // source this mode does not render, the mode off): `message` becomes the Warning Event and
    // the ComparisonError condition on the hub; nothing is delivered.
    kRefused,
    kPending,  // nothing rendered yet: the key is decided again once something is
    // `render` is the manifest_renders row (revision and source type of the last good render,
    // the latest error); `dispatch` the bundle of the last good render, nullopt when none
    // succeeded yet (the first render failed: `render.render_error` is for the hub).
    kRendered,
  };
  Kind kind = Kind::kApplication;
  std::string message;               // kRefused
  std::optional<Dispatch> dispatch;  // kRendered: the last good render's bundle
  store::ManifestRender render;      // kRendered (resource_id set)
  // kPending, kRendered: asked with `handing_over`, the Application asks for Application
  // delivery; this is the render of the manifests its hand-over sends last (handover.h).
  bool asks_application = false;
};

class ManifestDelivery {
 public:
  virtual ~ManifestDelivery() = default;
  // The plan for the live pull-model Application `app` of `key`; `refresh`: the hub asked for
  // one (argocd.argoproj.io/refresh). `handing_over`: its manifests are on the spoke, so an
  // Application that asks for Application delivery is rendered all the same (the hand-over's
  // first step sends its manifests once more, orphaning them), answered with
  // `asks_application`. May start a resolve or render whose answer decides `key` again.
  virtual ManifestPlan Prepare(const std::string& key, const nlohmann::json& app, bool refresh,
                               bool handing_over) = 0;
  // `key`'s Application is gone: whatever is kept for it is dropped.
  virtual void Forget(const std::string& key) = 0;
};

}  // namespace mmi::dispatcher
