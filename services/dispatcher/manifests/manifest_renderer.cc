#include "services/dispatcher/manifests/manifest_renderer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/manifests/delivery_mode.h"
#include "services/dispatcher/manifests/manifest_dispatch.h"
#include "services/dispatcher/manifests/render_key.h"

namespace mmi::dispatcher::manifests {

using kube::ObjectAt;
using kube::StringAt;
using nlohmann::json;

namespace {

// Equal renders (a refresh renders again into a new object; only a change of content counts).
bool SameRender(const std::shared_ptr<const argocd_repo::RenderedManifests>& a,
                const std::shared_ptr<const argocd_repo::RenderedManifests>& b) {
  if (a == b) {
    return true;
  }
  return a && b && a->manifests == b->manifests && a->revision == b->revision &&
         a->source_type == b->source_type;
}

ManifestPlan Refused(std::string message) {
  ManifestPlan plan;
  plan.kind = ManifestPlan::Kind::kRefused;
  plan.message = std::move(message);
  return plan;
}

}  // namespace

ManifestRenderer::ManifestRenderer(Deps deps, ManifestRendererSettings settings)
    : deps_(std::move(deps)), settings_(std::move(settings)) {}

void ManifestRenderer::Forget(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return;
  }
  Untrack(&it->first, it->second);  // before the erase: the source points at the key
  entries_.erase(it);
  retry_.erase(key);
}

uint32_t ManifestRenderer::Source::GenerationOf(Seen seen) {
  for (const Answer& answer : answers) {
    if (answer.seen == seen) {
      return answer.generation;
    }
  }
  answers.push_back(Answer{.generation = ++generations, .seen = std::move(seen)});
  return generations;
}

void ManifestRenderer::Track(const std::string* key, Entry& entry, const std::string& source_key,
                             const argocd_repo::ResolveRevisionRequest& request) {
  Untrack(key, entry);
  auto [it, inserted] = sources_.try_emplace(source_key);
  if (inserted) {
    it->second.request = request;  // the repo-server reads only the source from its app
    it->second.name = &it->first;
  }
  it->second.keys.insert(key);
  entry.source = &it->second;
  entry.resolved = 0;
}

void ManifestRenderer::Untrack(const std::string* key, const Entry& entry) {
  if (entry.source == nullptr) {
    return;
  }
  entry.source->keys.erase(key);
  if (entry.source->keys.empty()) {
    sources_.erase(sources_.find(*entry.source->name));
  }
}

ManifestPlan ManifestRenderer::Prepare(const std::string& key, const json& app, bool refresh,
                                       bool handing_over) {
  const absl::StatusOr<DeliveryMode> mode = DeliveryModeOf(app);
  // Back to Application delivery while the manifests are on the spoke: rendered all the same,
  // for the hand-over's orphaning step.
  const bool asks_application = mode.ok() && *mode == DeliveryMode::kApplication && handing_over;
  if (!mode.ok() || (*mode == DeliveryMode::kApplication && !asks_application)) {
    Forget(key);
    return mode.ok() ? ManifestPlan{} : Refused(std::string(mode.status().message()));
  }
  if (!settings_.enabled || deps_.cache == nullptr) {
    return Refused(kNotConfigured);
  }
  const json& spec = ObjectAt(app, "spec");
  json repository = nullptr;  // public
  if (deps_.secrets != nullptr) {
    argocd_repo::RepositoryMatch match = deps_.secrets->Current()->Lookup(
        StringAt(ObjectAt(spec, "source"), "repoURL"), StringAt(spec, "project"));
    if (!match.skipped.empty()) {
      // Rendering without the credentials the operator meant would fail later, or worse,
      // render a public repository of the same URL: show the bad Secret instead (Argo CD does).
      return Refused(absl::StrCat("repository credentials: ", match.skipped[0].error.message()));
    }
    repository = std::move(match.repository);
  }
  absl::StatusOr<argocd_repo::ResolveRevisionRequest> resolve =
      argocd_repo::BuildResolveRevisionRequest(app, "", repository);
  if (!resolve.ok()) {
    return Refused(std::string(resolve.status().message()));
  }
  if (!tick_armed_ && deps_.loop != nullptr) {
    tick_armed_ = true;
    deps_.loop->PostAfter(settings_.resolve_interval, [this] { Tick(); });
  }
  const auto slot = entries_.try_emplace(key).first;
  Entry& entry = slot->second;
  if (const std::string source_key = RevisionKeyOf(*resolve);
      entry.source == nullptr || *entry.source->name != source_key) {
    Track(&slot->first, entry, source_key, *resolve);
  }
  const uint64_t ask = ++next_ask_;
  entry.asked = ask;
  deps_.cache->Resolve(*resolve, refresh,
                       [this, key, ask, app, repository, refresh](const RevisionResult& r) {
                         OnResolved(key, ask, app, repository, refresh, r);
                       });

  if (!entry.answered) {
    ManifestPlan pending;
    pending.kind = ManifestPlan::Kind::kPending;
    pending.asks_application = asks_application;
    return pending;
  }
  ManifestPlan plan;
  plan.kind = ManifestPlan::Kind::kRendered;
  plan.asks_application = asks_application;
  if (entry.error) {
    plan.render.render_error = *entry.error;
  }
  if (entry.last_good) {
    plan.render.revision = entry.last_good->revision;
    plan.render.source_type = entry.last_good->source_type;
    absl::StatusOr<Dispatch> dispatch =
        BuildManifestDispatch(app, entry.last_good->manifests, settings_.payload);
    if (dispatch.ok()) {
      plan.render.resource_id = dispatch->resource_id;
      plan.dispatch = *std::move(dispatch);
      return plan;
    }
    plan.render.render_error = std::string(dispatch.status().message());
  }
  if (absl::StatusOr<Dispatch> identity = DispatchIdentityOf(app, settings_.payload);
      identity.ok()) {
    plan.render.resource_id = identity->resource_id;
  }
  return plan;
}

void ManifestRenderer::Tick() {
  tick_armed_ = false;
  // One resolve per distinct source, at once: the cache's answer may be younger than the
  // interval by the time the last resolve took, and waiting for it would resolve every second
  // tick only. Asks joining a resolve under way share it.
  for (const auto& [source_key, source] : sources_) {
    deps_.cache->Resolve(
        source.request, /*refresh=*/true,
        [this, source_key](const RevisionResult& result) { OnTickResolved(source_key, result); });
  }
  // Renders that failed retryably are asked for again (the cache renders them again).
  const std::vector<std::string> retry(retry_.begin(), retry_.end());
  for (const std::string& key : retry) {
    if (deps_.on_changed) {
      deps_.on_changed(key);
    }
  }
  if (!entries_.empty() && deps_.loop != nullptr) {
    tick_armed_ = true;
    deps_.loop->PostAfter(settings_.resolve_interval, [this] { Tick(); });
  }
}

void ManifestRenderer::OnTickResolved(const std::string& source_key, const RevisionResult& result) {
  auto it = sources_.find(source_key);
  if (it == sources_.end()) {
    return;  // its keys are gone
  }
  Source& source = it->second;
  const uint32_t told = source.GenerationOf(
      Seen{.revision = result.revision,
           .error = result.error.ok() ? "" : std::string(result.error.message())});
  if (told == source.told && !source.dirty) {
    return;  // nothing new for any of its keys: O(1) per source
  }
  // Copies: on_changed may forget a key, and with it the string a source points at.
  std::vector<std::string> changed;
  std::vector<uint32_t> held = {told};  // the answers still referenced, to prune the others
  for (const std::string* key : source.keys) {
    auto entry = entries_.find(*key);
    // A key without an answer yet gets its own (its ask is under way).
    if (entry == entries_.end() || entry->second.resolved == 0) {
      continue;
    }
    const uint32_t resolved = entry->second.resolved;
    if (resolved != told) {
      changed.push_back(*key);
    }
    if (std::find(held.begin(), held.end(), resolved) == held.end()) {
      held.push_back(resolved);
    }
  }
  std::erase_if(source.answers, [&held](const Source::Answer& answer) {
    return std::find(held.begin(), held.end(), answer.generation) == held.end();
  });
  source.told = told;
  source.dirty = false;
  for (const std::string& key : changed) {
    if (deps_.on_changed) {
      deps_.on_changed(key);
    }
  }
}

void ManifestRenderer::OnResolved(const std::string& key, uint64_t ask, const json& app,
                                  const json& repository, bool refresh,
                                  const RevisionResult& revision) {
  if (auto it = entries_.find(key);
      it != entries_.end() && it->second.asked == ask && it->second.source != nullptr) {
    Source& source = *it->second.source;
    const uint32_t resolved = source.GenerationOf(
        Seen{.revision = revision.revision,
             .error = revision.error.ok() ? "" : std::string(revision.error.message())});
    if (resolved != source.told) {
      source.dirty = true;  // the next tick compares its keys one by one
    }
    it->second.resolved = resolved;
  }
  if (!revision.error.ok()) {
    // The last good bundle stays; the hub shows why the revision could not be resolved.
    Settle(key, ask, nullptr, absl::StrCat("resolving the revision: ", revision.error.message()),
           /*retry=*/false);
    return;
  }
  absl::StatusOr<argocd_repo::ManifestRequest> request =
      argocd_repo::BuildManifestRequest(app, revision.revision, settings_.render, repository);
  if (!request.ok()) {
    Settle(key, ask, nullptr, std::string(request.status().message()), /*retry=*/false);
    return;
  }
  deps_.cache->Render(*request, refresh, [this, key, ask](const RenderResult& r) {
    Settle(key, ask, r.manifests,
           r.error.ok() ? std::nullopt : std::optional<std::string>(r.error.message()),
           /*retry=*/Retryable(r.error));
  });
}

void ManifestRenderer::Settle(const std::string& key, uint64_t ask,
                              std::shared_ptr<const argocd_repo::RenderedManifests> good,
                              std::optional<std::string> error, bool retry) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.asked != ask) {
    return;  // forgotten, or a newer ask answers (the cache joins them: same answer or newer)
  }
  if (retry) {
    retry_.insert(key);
  } else {
    retry_.erase(key);
  }
  Entry& entry = it->second;
  if (!good) {
    good = entry.last_good;  // an error keeps the last good bundle
  }
  const bool same_error =
      error.has_value() ? entry.error && *entry.error == *error : entry.error == nullptr;
  const bool changed = !entry.answered || !SameRender(good, entry.last_good) || !same_error;
  entry.answered = true;
  entry.last_good = std::move(good);
  if (!same_error) {
    entry.error =
        error.has_value() ? std::make_unique<const std::string>(*std::move(error)) : nullptr;
  }
  if (changed && deps_.on_changed) {
    deps_.on_changed(key);
  }
}

}  // namespace mmi::dispatcher::manifests
