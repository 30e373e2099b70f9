#include "services/dispatcher/apps/manifest_writes.h"

#include <chrono>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/event.h"
#include "libs/service/kube_event.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"
#include "services/dispatcher/apps/propagated_request.h"

namespace mmi::dispatcher {

using nlohmann::json;

json ComparisonErrorPatch(const std::string& message, const std::string& now_rfc3339) {
  return json{{"status",
               {{"sync", {{"status", "Unknown"}}},
                {"conditions", json::array({json{{"type", "ComparisonError"},
                                                 {"message", message},
                                                 {"lastTransitionTime", now_rfc3339}}})}}}};
}

ManifestWrites::ManifestWrites(Deps deps, const ReconcilerSettings& settings)
    : deps_(std::move(deps)), settings_(settings) {}

void ManifestWrites::ShowProblem(const std::string& key, const json& app,
                                 const std::string& message) {
  auto [it, added] = shown_.try_emplace(key, message);
  if (!added && it->second == message) {
    return;
  }
  it->second = message;
  internal::ReconcilerLog().Warn("Application cannot be delivered as manifests",
                                 {{"resource", key}, {"error", message}});
  service::KubeEventSpec spec;
  spec.reason = "ManifestDeliveryFailed";
  spec.message = message;
  spec.component = settings_.event_component;
  spec.instance = settings_.event_instance;
  const auto wall_now = deps_.clock.Now();
  json event = service::MakeKubeEvent(
      app, spec, wall_now,
      absl::StrCat(absl::Hex(static_cast<uint64_t>(wall_now.time_since_epoch().count())),
                   absl::Hex(++event_counter_)));
  json patch = ComparisonErrorPatch(
      message,
      cloudevents::FormatTimestamp(std::chrono::time_point_cast<std::chrono::seconds>(wall_now)));
  const std::string ns = event["metadata"]["namespace"].get<std::string>();
  const std::string name = app["metadata"]["name"].get<std::string>();
  deps_.workers.Post([this, ns, name, event = std::move(event), patch = std::move(patch)] {
    auto created = deps_.hub.Create({"", "v1", "events", ns}, event, kube::WriteOptions{});
    deps_.metrics.HubWrite("manifest_event", created.ok() ? "ok" : "error");
    auto patched = deps_.hub.Patch(ApplicationsRef(ns), name, kube::PatchType::kMerge, patch,
                                   kube::PatchOptions{}, "");
    deps_.metrics.HubWrite("manifest_condition", patched.ok() ? "ok" : "error");
    if (!created.ok() || !patched.ok()) {
      internal::ReconcilerLog().Warn(
          "could not show a manifest delivery problem on the hub",
          {{"resource", absl::StrCat(ns, "/", name)},
           {"error",
            std::string(!created.ok() ? created.status().message() : patched.status().message())}});
    }
  });
}

ManifestWrites::FactsPtr ManifestWrites::Intern(const store::ManifestRender& render) {
  RenderFacts facts{.revision = render.revision,
                    .source_type = render.source_type,
                    .render_error = render.render_error};
  if (facts_.size() > 2 * facts_swept_at_ + 64) {
    absl::erase_if(facts_, [](const auto& entry) { return entry.second.expired(); });
    facts_swept_at_ = facts_.size();
  }
  auto [it, added] = facts_.try_emplace(facts);
  FactsPtr shared = it->second.lock();
  if (shared == nullptr) {
    shared = std::make_shared<const RenderFacts>(std::move(facts));
    it->second = shared;
  }
  return shared;
}

ManifestWrites::FactsPtr& ManifestWrites::Written(const std::string& resource_id) {
  if (absl::StatusOr<cloudevents::Uuid> uuid = cloudevents::ParseUuid(resource_id); uuid.ok()) {
    return written_[*uuid];
  }
  return written_other_[resource_id];
}

void ManifestWrites::PutRender(const store::ManifestRender& render) {
  FactsPtr facts = Intern(render);
  FactsPtr& written = Written(render.resource_id);
  if (written == facts) {
    return;  // interned: the same pointer is the same row
  }
  written = std::move(facts);
  deps_.workers.Post([this, render] {
    const absl::Status put = deps_.store.PutManifestRender(render);
    deps_.metrics.HubWrite("manifest_render", put.ok() ? "ok" : "error");
    if (!put.ok()) {
      internal::ReconcilerLog().Warn(
          "could not record a manifest render",
          {{"resource", render.resource_id}, {"error", std::string(put.message())}});
    }
  });
}

void ManifestWrites::Recorded(const store::ManifestRender& render) {
  Written(render.resource_id) = Intern(render);
}

void ManifestWrites::StripRefresh(const std::string& ns, const std::string& name,
                                  const std::string& value) {
  deps_.workers.Post([this, ns, name, value] {
    const absl::Status stripped =
        StripRequest(deps_.hub, ns, name, PropagatedRequest{.operation = {}, .refresh = value});
    deps_.metrics.HubWrite("manifest_refresh", stripped.ok() ? "ok" : "error");
  });
}

void ManifestWrites::Forget(const std::string& key, const std::string& resource_id) {
  shown_.erase(key);
  if (resource_id.empty()) {
    return;
  }
  if (absl::StatusOr<cloudevents::Uuid> uuid = cloudevents::ParseUuid(resource_id); uuid.ok()) {
    written_.erase(*uuid);
  } else {
    written_other_.erase(resource_id);
  }
}

}  // namespace mmi::dispatcher
