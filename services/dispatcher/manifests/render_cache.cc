#include "services/dispatcher/manifests/render_cache.h"

#include <algorithm>
#include <utility>

#include "libs/kube_object/object.h"
#include "services/dispatcher/manifests/render_key.h"

namespace mmi::dispatcher::manifests {
namespace {

using argocd_repo::ManifestRequest;
using argocd_repo::RenderedManifests;
using argocd_repo::ResolvedRevision;
using argocd_repo::ResolveRevisionRequest;

}  // namespace

bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

RenderCache::RenderCache(Deps deps, RenderCacheSettings settings)
    : deps_(deps), settings_(settings) {}

void RenderCache::Render(const ManifestRequest& request, bool refresh, RenderDone done) {
  const auto now = StartAsk();
  const std::string source_key = SourceKeyOf(request);
  SourceType& source = types_[source_key];
  source.last_asked = now;
  const AppNameUse use = AppNameUseOf(request, source.type);
  if (use == AppNameUse::kUnknown && source.probing) {
    // The render under way tells whether this ask can share it.
    // Counted once it is served: rendered again below, or given the probe's error.
    source.parked.push_back(Parked{.request = request, .done = std::move(done)});
    return;
  }
  if (use == AppNameUse::kUnknown && !source.probe_error.ok() && !refresh &&
      !Retryable(source.probe_error)) {
    deps_.loop.Post([done = std::move(done),
                     result = RenderResult{source_key, nullptr, source.probe_error}]() mutable {
      std::move(done)(result);
    });
    Count("hit");
    return;
  }
  const std::string key =
      use == AppNameUse::kUnused ? source_key : RenderKeyOf(request, source.type);
  RenderEntry& entry = renders_[key];
  entry.last_asked = now;
  if (entry.busy) {
    entry.waiters.push_back(std::move(done));
    Count("joined");
    return;
  }
  if (entry.rendered && !refresh && !Retryable(entry.error)) {
    deps_.loop.Post([done = std::move(done),
                     result = RenderResult{key, entry.manifests, entry.error}]() mutable {
      std::move(done)(result);
    });
    Count("hit");
    return;
  }
  entry.busy = true;
  entry.request = RenderRequestOf(request);
  entry.waiters.push_back(std::move(done));
  if (use == AppNameUse::kUnknown) {
    source.probing = true;
    entry.probe_for = source_key;
  }
  Count("render");
  Enqueue(Job{.render = true, .key = key});
}

void RenderCache::Count(std::string_view outcome) {
  if (deps_.on_ask) {
    deps_.on_ask(outcome);
  }
}

void RenderCache::Resolve(const ResolveRevisionRequest& request, bool refresh, ResolveDone done) {
  const std::string key = RevisionKeyOf(request);
  const auto now = StartAsk();
  RevisionEntry& entry = revisions_[key];
  entry.last_asked = now;
  if (entry.busy) {
    entry.waiters.push_back(std::move(done));
    return;
  }
  if (entry.resolved && !refresh && now - entry.resolved_at < settings_.resolve_interval) {
    deps_.loop.Post(
        [done = std::move(done), result = RevisionResult{entry.revision, entry.error}]() mutable {
          std::move(done)(result);
        });
    return;
  }
  entry.busy = true;
  entry.request = request;
  entry.waiters.push_back(std::move(done));
  Enqueue(Job{.render = false, .key = key});
}

void RenderCache::Enqueue(Job job) {
  queue_.push_back(std::move(job));
  Pump();
}

void RenderCache::Pump() {
  while (!queue_.empty() && in_flight_ < std::max(settings_.max_in_flight, 1)) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++in_flight_;
    // The request is copied for the worker: the entry may move when the map grows meanwhile.
    if (job.render) {
      ManifestRequest request = renders_[job.key].request;
      deps_.workers.Post([this, key = std::move(job.key), request = std::move(request)] {
        absl::StatusOr<RenderedManifests> rendered = deps_.client.GenerateManifest(request);
        deps_.loop.Post([this, key, rendered = std::move(rendered)]() mutable {
          OnRendered(key, std::move(rendered));
        });
      });
    } else {
      ResolveRevisionRequest request = revisions_[job.key].request;
      deps_.workers.Post([this, key = std::move(job.key), request = std::move(request)] {
        absl::StatusOr<ResolvedRevision> resolved = deps_.client.ResolveRevision(request);
        deps_.loop.Post([this, key, resolved = std::move(resolved)]() mutable {
          OnResolved(key, std::move(resolved));
        });
      });
    }
  }
}

void RenderCache::OnRendered(const std::string& key, absl::StatusOr<RenderedManifests> rendered) {
  --in_flight_;
  RenderEntry& entry = renders_[key];  // busy entries are never swept
  entry.busy = false;
  entry.rendered = true;
  if (rendered.ok()) {
    entry.manifests = std::make_shared<const RenderedManifests>(*std::move(rendered));
    entry.error = absl::OkStatus();
  } else {
    entry.error = rendered.status();  // the last good manifests stay
  }
  const RenderResult result{key, entry.manifests, entry.error};
  std::vector<RenderDone> waiters = std::move(entry.waiters);
  entry.waiters.clear();
  const ManifestRequest request = std::move(entry.request);
  entry.request = ManifestRequest{};
  const std::string probe_for = std::move(entry.probe_for);
  entry.probe_for.clear();
  // `entry` is not used below: the callbacks may ask again and grow the map.

  std::vector<Parked> parked;
  if (!probe_for.empty()) {
    SourceType& source = types_[probe_for];
    source.probing = false;
    parked = std::move(source.parked);
    source.parked.clear();
    source.probe_error = result.error;
    if (result.error.ok()) {
      source.type = result.manifests->source_type;
      // When the detected type leaves the name out, this render is the shared one too.
      const std::string shared_key = RenderKeyOf(request, source.type);
      if (shared_key != key) {
        RenderEntry& shared = renders_[shared_key];
        if (!shared.busy) {
          shared.manifests = result.manifests;
          shared.error = result.error;
          shared.rendered = true;
          shared.last_asked = deps_.clock.MonotonicNow();
        }
      }
    }
  }
  for (RenderDone& done : waiters) {
    std::move(done)(result);
  }
  for (Parked& ask : parked) {
    if (result.error.ok()) {
      Render(ask.request, /*refresh=*/false, std::move(ask.done));  // the type is known now
    } else {
      std::move(ask.done)(result);  // the source failed to render: the same error for each
      Count("joined");
    }
  }
  Pump();
}

void RenderCache::OnResolved(const std::string& key, absl::StatusOr<ResolvedRevision> resolved) {
  --in_flight_;
  RevisionEntry& entry = revisions_[key];
  entry.busy = false;
  entry.resolved = true;
  entry.resolved_at = deps_.clock.MonotonicNow();
  if (resolved.ok()) {
    entry.revision = std::move(resolved->revision);
    entry.error = absl::OkStatus();
  } else {
    entry.error = resolved.status();  // the last good revision stays
  }
  const RevisionResult result{entry.revision, entry.error};
  std::vector<ResolveDone> waiters = std::move(entry.waiters);
  entry.waiters.clear();
  entry.request = ResolveRevisionRequest{};
  for (ResolveDone& done : waiters) {
    std::move(done)(result);
  }
  Pump();
}

std::chrono::steady_clock::time_point RenderCache::StartAsk() {
  const auto now = deps_.clock.MonotonicNow();
  if (now - last_sweep_ < settings_.idle_ttl) {
    return now;
  }
  last_sweep_ = now;
  const auto idle = [&](const auto& entry) { return now - entry.last_asked >= settings_.idle_ttl; };
  absl::erase_if(renders_,
                 [&](const auto& item) { return !item.second.busy && idle(item.second); });
  absl::erase_if(revisions_,
                 [&](const auto& item) { return !item.second.busy && idle(item.second); });
  absl::erase_if(types_, [&](const auto& item) {
    return !item.second.probing && item.second.parked.empty() && idle(item.second);
  });
  return now;
}

}  // namespace mmi::dispatcher::manifests
