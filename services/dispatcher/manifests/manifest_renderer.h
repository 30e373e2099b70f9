// ManifestRenderer: what one hub Application in manifest delivery sends now (issue 38 items 2
// and 4; ADR 0007), for the reconcile loop: the delivery mode, the revision resolved and the
// source rendered through the RenderCache with the repository's credentials, and the bundle of
// the last good render.
//
//   Prepare(key, app, refresh): answers at once from what is known, and asks the RenderCache for
//   the revision (the cache asks the repo-server at most every resolve_interval, at once with
//   `refresh`) and then for the render of that revision. When an answer changes what Prepare
//   would answer for `key` (a new bundle, a new revision, an error or its end), `on_changed(key)`
//   runs on the loop: the reconciler decides the key again and calls Prepare again.
//
// The resolveInterval tick (a new commit rolls out without a change on the hub): every
// resolve_interval while keys are held, the revision of each distinct source (RevisionKeyOf: what
// the cache resolves per) is asked for once, at once (`refresh` to the cache, so the interval
// does not slip by the time the last answer took). on_changed runs only for the keys of a source
// whose answer (revision or resolve error) differs from the one their last Prepare saw, and for
// the keys whose last render failed with a retryable error (Retryable, render_cache.h). A tick
// that brings nothing new costs O(distinct sources): no key is decided again and the cache is
// asked for no render (mmi_dispatcher_render_asks_total does not move).
//
// Answers: ManifestPlan (apps/manifest_delivery.h). A failed render keeps the last good bundle:
// only the row's error changes. A repository Secret that would have matched but is bad refuses
// the Application (Argo CD fails it too) rather than render it without credentials.
//
// Threads: the loop only (as RenderCache). Collaborators are borrowed and must outlive it; the
// RenderCache's answers call back into it, so stop the loop before destroying it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "libs/argocd_repo/request_builder.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/manifest_delivery.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/manifests/render_cache.h"
#include "services/dispatcher/manifests/repo_secrets.h"

namespace mmi::dispatcher::manifests {

// The refusal when manifests.repoServer.address is empty.
inline constexpr char kNotConfigured[] =
    "manifest delivery is not configured: the dispatcher has no repo-server "
    "(manifests.repoServer.address)";

struct ManifestRendererSettings {
  bool enabled = false;  // manifests.repoServer.address set
  // manifests.resolveInterval: each distinct source's revision is resolved again this often,
  // and the keys whose revision changed are decided again: a new commit rolls out without a
  // change on the hub.
  std::chrono::nanoseconds resolve_interval = std::chrono::seconds(180);
  argocd_repo::RenderSettings render;
  PayloadSettings payload;
};

class ManifestRenderer final : public ManifestDelivery {
 public:
  struct Deps {
    RenderCache* cache = nullptr;    // null when the mode is off
    RepoSecrets* secrets = nullptr;  // null: every repository is public
    Loop* loop = nullptr;            // the reconcile loop, for the resolveInterval timer
    std::function<void(const std::string& key)> on_changed;
  };
  ManifestRenderer(Deps deps, ManifestRendererSettings settings);

  ManifestPlan Prepare(const std::string& key, const nlohmann::json& app, bool refresh,
                       bool handing_over) override;
  // Also when the key's Application left manifest delivery.
  void Forget(const std::string& key) override;

 private:
  // A resolve answer as the tick compares it: the revision and the error's message.
  struct Seen {
    std::string revision;
    std::string error;  // "" when the resolve succeeded
    friend bool operator==(const Seen&, const Seen&) = default;
  };
  struct Source;
  struct Entry {
    std::shared_ptr<const argocd_repo::RenderedManifests> last_good;
    // The last answer's error; null when it rendered (almost always: 8 bytes, not an optional
    // string's 40, in every key's entry).
    std::unique_ptr<const std::string> error;
    uint64_t asked = 0;        // the newest ask; older answers are dropped
    Source* source = nullptr;  // the source of its last Prepare's resolve request
    uint32_t resolved = 0;     // the generation of the resolve answer its last Prepare got; 0: none
    bool answered = false;     // a render (or its refusal) has answered
  };
  // The keys of one distinct source, and the resolve request the tick sends for them.
  struct Source {
    // The generation of `seen`: the number of that answer among the source's distinct answers
    // (the same answer again, the same number), so keys compare numbers instead of strings.
    uint32_t GenerationOf(Seen seen);

    argocd_repo::ResolveRevisionRequest request;
    const std::string* name = nullptr;  // its key in `sources_` (a node map)
    // The keys of `entries_` (a node map, so they stay put): the key strings once per process.
    absl::flat_hash_set<const std::string*> keys;
    // The distinct answers a key or the last tick holds (pruned at each tick that walks the
    // keys): one or two in the common case.
    struct Answer {
      uint32_t generation = 0;
      Seen seen;
    };
    std::vector<Answer> answers;
    uint32_t generations = 0;  // the last generation given out
    // The generation the last tick passed on to the keys; 0 before the first tick.
    uint32_t told = 0;
    // A key's own resolve got an answer other than `told` since the last tick: the next tick
    // compares each key even when its answer equals `told`.
    bool dirty = false;
  };

  // Renders at the resolved revision (`refresh` renders again even a key rendered before).
  void OnResolved(const std::string& key, uint64_t ask, const nlohmann::json& app,
                  const nlohmann::json& repository, bool refresh, const RevisionResult& revision);
  // Records an answer for `key` and tells on_changed when it changes what Prepare answers.
  // `retry`: the render failed with a retryable error, so the next tick asks again.
  void Settle(const std::string& key, uint64_t ask,
              std::shared_ptr<const argocd_repo::RenderedManifests> good,
              std::optional<std::string> error, bool retry);
  // Files `key` (the key held in `entries_`) under the source `source_key` (leaving the one it
  // was under).
  void Track(const std::string* key, Entry& entry, const std::string& source_key,
             const argocd_repo::ResolveRevisionRequest& request);
  void Untrack(const std::string* key, const Entry& entry);

  // Every resolve_interval while keys are held: one resolve per source, then on_changed for the
  // keys it changes (and those to retry).
  void Tick();
  void OnTickResolved(const std::string& source_key, const RevisionResult& result);

  Deps deps_;
  const ManifestRendererSettings settings_;
  // A node map: Source::keys points at its keys.
  absl::node_hash_map<std::string, Entry> entries_;
  // A node map: entries point at their Source.
  absl::node_hash_map<std::string, Source> sources_;
  absl::flat_hash_set<std::string> retry_;  // keys whose last render failed retryably
  uint64_t next_ask_ = 0;
  bool tick_armed_ = false;
};

}  // namespace mmi::dispatcher::manifests
