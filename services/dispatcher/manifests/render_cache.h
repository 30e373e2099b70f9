// RenderCache: renders through Argo CD's repo-server once per render key and resolves each
// source's revision at most once per interval (ADR 0007, "Rendering" and "One render per distinct
// request"; issue 38 item 2).
//
//   Render(request, refresh, done): single-flight per RenderKeyOf(request). Concurrent asks for one
//     key make one GenerateManifest call and all get its result. A key that rendered is answered
//     from the cache: its request carries a resolved revision, so a good render is final. A key
//     whose last render failed with a retryable error (kUnavailable, kDeadlineExceeded,
//     kResourceExhausted) renders again on the next ask; other errors (kFailedPrecondition: the
//     source does not render at that revision) only with `refresh`. `refresh` (the hub's
//     `argocd.argoproj.io/refresh`) renders again in any case.
//   Resolve(request, refresh, done): the revision per distinct (repoURL, chart, targetRevision):
//     ResolveRevision at most once per `resolve_interval`, at once with `refresh`. Callers may
//     ask on every reconcile; the cache decides when the repo-server is asked.
//   Both keep the last good answer beside the last error: a render error or timeout reports the
//   error with the last good manifests of that key (and a failed resolve the last good revision),
//   so the caller keeps the last good bundle on the spoke and shows the error on the hub.
//
// The source type: whether the Application's name changes the output depends on the source type
// (render_key.h), which the repo-server detects when the source declares none (a `path` holding a
// Chart.yaml is Helm). For such a source the first ask renders under its own name; asks for the
// same source key wait for it, then share its render (Directory, Kustomize) or render per name
// (Helm without releaseName, plugins). If it fails they all get its error, and later asks too
// until a refresh (at once again if the error is retryable), as for a render error.
//
// Bounded: at most `max_in_flight` repo-server calls run at once, each on a worker thread; more
// asks queue, one queue entry per distinct key (asks for a queued key join it). Entries nobody
// asked for during `idle_ttl` are dropped.
//
// Threads: Render() and Resolve() are called on the dispatcher's reconcile loop (`loop`), and
// every `done` runs there, never inside the call that asked. The blocking RepoServerClient calls
// run on `workers` and post their answers to `loop`. Not thread-safe otherwise. Collaborators are
// borrowed; the cache must outlive the tasks it posted (stop both executors before destroying
// it), as with DeletionCheck (services/dispatcher/apps/deletion_check.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/argocd_repo/repo_server_client.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"

namespace mmi::dispatcher::manifests {

struct RenderCacheSettings {
  // How long a resolved revision is used before ResolveRevision is asked again: Argo CD's
  // reconciliation interval (timeout.reconciliation), 180 s by default.
  std::chrono::nanoseconds resolve_interval = std::chrono::seconds(180);
  // Repo-server calls (renders and resolves) running at once, each holding a worker thread.
  // >= 1 (less counts as 1).
  int max_in_flight = 4;
  // A render, revision or source type nobody asked for this long is dropped (memory follows the
  // sources and revisions in use, not every revision ever rendered).
  std::chrono::nanoseconds idle_ttl = std::chrono::minutes(15);
};

// The codes RepoServerClient documents as worth retrying (kUnavailable, kDeadlineExceeded,
// kResourceExhausted): the repo-server was not reached or did not answer in time, so the same
// request may well render on the next ask.
bool Retryable(const absl::Status& status);

struct RenderResult {
  // RenderKeyOf the request (for the error of a source whose type is not known yet: the key of
  // the render that failed, or SourceKeyOf the request).
  std::string key;
  // The last good render of this key; null when none succeeded yet. Shared, not copied: one
  // render serves every Application with this key, and a caller may keep it after the cache
  // dropped the entry. The key holds the revision, so a new revision's first render failing
  // leaves this null: the last good bundle of the previous revision is the caller's to keep.
  std::shared_ptr<const argocd_repo::RenderedManifests> manifests;
  // OK when the last render of this key succeeded; else its error (see RepoServerClient).
  absl::Status error;
};

struct RevisionResult {
  std::string revision;  // the last good resolved revision; "" when none yet
  absl::Status error;    // OK when the last resolve succeeded; else its error
};

class RenderCache {
 public:
  using RenderDone = absl::AnyInvocable<void(const RenderResult&) &&>;
  using ResolveDone = absl::AnyInvocable<void(const RevisionResult&) &&>;
  struct Deps {
    Executor& loop;
    Executor& workers;
    const Clock& clock;
    argocd_repo::RepoServerClient& client;
    // Told how each Render() ask was served, on the loop: "hit" (answered from the cache),
    // "joined" (a render of its key or its source's type probe was under way) or "render" (a
    // GenerateManifest call queued). The dispatcher counts them
    // (mmi_dispatcher_render_asks_total{outcome}). May be empty.
    std::function<void(std::string_view outcome)> on_ask = nullptr;
  };
  RenderCache(Deps deps, RenderCacheSettings settings);
  RenderCache(const RenderCache&) = delete;
  RenderCache& operator=(const RenderCache&) = delete;

  // `request` as argocd_repo::BuildManifestRequest builds it; what is sent is
  // RenderRequestOf(request) (render_key.h).
  void Render(const argocd_repo::ManifestRequest& request, bool refresh, RenderDone done);
  // `request` as argocd_repo::BuildResolveRevisionRequest builds it. The first asker's request
  // is the one sent: the repo-server reads only the source from its Application.
  void Resolve(const argocd_repo::ResolveRevisionRequest& request, bool refresh, ResolveDone done);

  int in_flight() const { return in_flight_; }
  size_t queued() const { return queue_.size(); }
  // Render keys and sources held (answered, queued or in flight).
  size_t renders() const { return renders_.size(); }
  size_t revisions() const { return revisions_.size(); }

 private:
  struct RenderEntry {
    std::shared_ptr<const argocd_repo::RenderedManifests> manifests;
    absl::Status error;
    bool rendered = false;  // a render of this key has answered
    bool busy = false;      // queued or in flight; `request` and `waiters` are set
    argocd_repo::ManifestRequest request;
    std::vector<RenderDone> waiters;
    // Set while this render detects the source type of this source key.
    std::string probe_for;
    std::chrono::steady_clock::time_point last_asked;
  };
  struct Parked {
    argocd_repo::ManifestRequest request;
    RenderDone done;
  };
  // Per SourceKeyOf: the source type the repo-server detected, or the asks waiting for it.
  struct SourceType {
    std::string type;
    bool probing = false;
    // The last probe's error: a source that does not render at this revision is not probed
    // again per Application name, only on a refresh (or, if retryable, on the next ask).
    absl::Status probe_error;
    std::vector<Parked> parked;
    std::chrono::steady_clock::time_point last_asked;
  };
  struct RevisionEntry {
    std::string revision;
    absl::Status error;
    bool resolved = false;  // a resolve has answered, at `resolved_at`
    std::chrono::steady_clock::time_point resolved_at;
    bool busy = false;
    argocd_repo::ResolveRevisionRequest request;
    std::vector<ResolveDone> waiters;
    std::chrono::steady_clock::time_point last_asked;
  };
  struct Job {
    bool render;  // else a resolve
    std::string key;
  };

  void Enqueue(Job job);
  void Count(std::string_view outcome);
  // Starts the queued calls the bound allows.
  void Pump();
  void OnRendered(const std::string& key, absl::StatusOr<argocd_repo::RenderedManifests> rendered);
  void OnResolved(const std::string& key, absl::StatusOr<argocd_repo::ResolvedRevision> resolved);
  // The time of an ask, after dropping the idle entries (at most once per idle_ttl).
  std::chrono::steady_clock::time_point StartAsk();

  Deps deps_;
  const RenderCacheSettings settings_;

  absl::flat_hash_map<std::string, RenderEntry> renders_;
  absl::flat_hash_map<std::string, SourceType> types_;
  absl::flat_hash_map<std::string, RevisionEntry> revisions_;
  std::deque<Job> queue_;
  int in_flight_ = 0;
  std::chrono::steady_clock::time_point last_sweep_{};
};

}  // namespace mmi::dispatcher::manifests
