// ManifestWrites: the writes of manifest delivery (ADR 0007) besides the bundle itself, for the
// Reconciler, each made once per change rather than on every decision of the key:
//   * ShowProblem: an Application that asks for manifests but has no bundle (a refusal, or its
//     first render failed) gets a Warning Event `ManifestDeliveryFailed` and, through a merge
//     patch of its status, `sync.status: Unknown` and one `ComparisonError` condition: no
//     resource row exists yet, so the status sink cannot show it (the sink takes over once a
//     bundle is recorded);
//   * PutRender: the `manifest_renders` row of a resource whose bundle did not change (a new
//     revision rendering the same output, a render error, its end), with its NOTIFY, through
//     DispatchStore::PutManifestRender;
//   * StripRefresh: the hub's `argocd.argoproj.io/refresh` annotation, once a refresh was asked
//     (the spoke has no Argo CD to remove it, and it would render again at every decision).
// Writes run on the worker pool; failures are logged and counted (mmi_dispatcher_hub_writes_total
// {operation="manifest_*"}), and the next change of the key writes again.
//
// Threads: the reconcile loop (the writes themselves on the workers). Collaborators borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "libs/store/dispatch_store.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

// The merge patch of a hub Application's status for a manifest-delivered Application with no
// bundle: sync.status Unknown, conditions = [ComparisonError `message` since `now_rfc3339`].
// Pure.
nlohmann::json ComparisonErrorPatch(const std::string& message, const std::string& now_rfc3339);

class ManifestWrites {
 public:
  struct Deps {
    WorkerPool& workers;
    store::DispatchStore& store;
    kube::KubeClient& hub;
    DispatcherMetrics& metrics;
    const Clock& clock;
  };
  ManifestWrites(Deps deps, const ReconcilerSettings& settings);

  // `app` (of `key`) cannot be delivered: `message` on the hub, unless it is shown already.
  void ShowProblem(const std::string& key, const nlohmann::json& app, const std::string& message);
  // The row, unless it is the one last written or recorded for its resource.
  void PutRender(const store::ManifestRender& render);
  // The row went with a recorded bundle (DispatchStore::Record): not written again.
  void Recorded(const store::ManifestRender& render);
  // Removes the refresh annotation `value` from the hub Application (guarded: a newer one
  // stays).
  void StripRefresh(const std::string& ns, const std::string& name, const std::string& value);
  // `key` is delivered again, or gone: a later problem is shown again.
  void Forget(const std::string& key, const std::string& resource_id);

  // Resources with a row written or recorded, and the distinct rows they hold (for tests and
  // the memory bench: the second stays near the number of sources and revisions in use).
  size_t resources_held() const { return written_.size() + written_other_.size(); }
  size_t distinct_rows_held() const { return facts_.size(); }

 private:
  // A manifest_renders row without its resource id. Every resource of one source at one
  // revision has the same row, so rows are shared: a fleet of 300,000 Applications on 100
  // sources holds ~100, and each resource only a pointer (issue 38: the dispatcher's memory in
  // manifest delivery; a copy of the row per resource cost ~440 bytes per Application).
  struct RenderFacts {
    std::string revision;
    std::string source_type;
    std::optional<std::string> render_error;
    friend bool operator==(const RenderFacts&, const RenderFacts&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const RenderFacts& f) {
      return H::combine(std::move(h), f.revision, f.source_type, f.render_error);
    }
  };
  using FactsPtr = std::shared_ptr<const RenderFacts>;

  // The shared row equal to `render`'s: equal rows get the same pointer while one is held.
  FactsPtr Intern(const store::ManifestRender& render);
  // The entry of `resource_id`, created empty when missing.
  FactsPtr& Written(const std::string& resource_id);

  Deps deps_;
  const ReconcilerSettings& settings_;
  absl::flat_hash_map<std::string, std::string> shown_;  // key -> message on the hub
  // resource id -> the row last written or recorded. Resource ids are UUIDs (apps/payload.h):
  // kept as their 16 bytes, not as 36-character strings on the heap; other ids (none in
  // service) by string.
  absl::flat_hash_map<cloudevents::Uuid, FactsPtr> written_;
  absl::flat_hash_map<std::string, FactsPtr> written_other_;
  // The shared rows; entries no resource holds any more are dropped when the table has doubled
  // since the last sweep.
  absl::flat_hash_map<RenderFacts, std::weak_ptr<const RenderFacts>> facts_;
  size_t facts_swept_at_ = 0;
  uint64_t event_counter_ = 0;
};

}  // namespace mmi::dispatcher
