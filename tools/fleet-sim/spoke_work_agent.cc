#include "tools/fleet-sim/spoke_work_agent.h"

#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "tools/fleet-sim/agent_protocol.h"
#include "tools/fleet-sim/work_status.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using cloudevents::ManifestBundleStatus;
using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.spoke");
  return logger;
}

std::string UidOf(const json& object) {
  const json& meta = MetadataOf(object);
  return kube::StringAt(meta, "uid");
}

// Whether the live object already carries what `manifest` asks for (every top-level member but
// metadata and status equal; labels and annotations contained): an Update would change nothing.
bool Matches(const json& manifest, const json& live) {
  for (const auto& [key, value] : manifest.items()) {
    if (key == "metadata" || key == "status" || key == "apiVersion" || key == "kind") {
      continue;
    }
    auto it = live.find(key);
    if (it == live.end() || *it != value) {
      return false;
    }
  }
  const json& want = MetadataOf(manifest);
  const json& have = MetadataOf(live);
  for (const char* map : {"labels", "annotations"}) {
    const json* wanted = Child(want, map);
    if (wanted == nullptr || !wanted->is_object()) {
      continue;
    }
    const json* held = Child(have, map);
    for (const auto& [key, value] : wanted->items()) {
      if (held == nullptr || !held->contains(key) || (*held)[key] != value) {
        return false;
      }
    }
  }
  return true;
}

kube::PatchOptions ApplyOptions(const ManifestPlan& m) {
  kube::PatchOptions options;
  options.field_manager = m.field_manager;
  options.force = m.force;
  return options;
}

kube::DeleteOptions DeleteOptionsFor(const SpokeAgentSettings& settings) {
  kube::DeleteOptions options;
  options.propagation_policy = settings.delete_propagation;
  return options;
}

bool SameCollection(const kube::ResourceRef& a, const kube::ResourceRef& b) {
  return a.group == b.group && a.resource == b.resource && a.namespace_name == b.namespace_name;
}

}  // namespace

SpokeWorkAgent::SpokeWorkAgent(std::string cluster, SpokeAgentSettings settings,
                               kube::KubeClient& client, const Clock& clock,
                               cloudevents::SequenceIdGenerator& sequence_ids)
    : cluster_(std::move(cluster)),
      agent_id_(absl::StrCat(cluster_, "-work-agent")),
      settings_(std::move(settings)),
      client_(client),
      clock_(clock),
      sequence_ids_(sequence_ids) {}

cloudevents::Timestamp SpokeWorkAgent::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now());
}

absl::StatusOr<std::vector<Event>> SpokeWorkAgent::Handle(const Event& event) {
  ASSIGN_OR_RETURN(const cloudevents::EventType type, event.ParsedType());
  if (type.data_type.ToString() != cloudevents::kManifestBundlesDataType) {
    return std::vector<Event>{};
  }
  return RunAgentStep<absl::StatusOr<std::vector<Event>>>(
      AgentStepFor(type, event), [&] { return AnswerStatusResync(event); },
      [&] { return Apply(event); }, [&](bool from_resync) { return Delete(event, from_resync); },
      std::vector<Event>{});
}

absl::StatusOr<std::vector<Event>> SpokeWorkAgent::Apply(const Event& event) {
  ASSIGN_OR_RETURN(const ResourceKey key, ResourceKeyOf(event));
  ASSIGN_OR_RETURN(cloudevents::ManifestBundle bundle,
                   cloudevents::ManifestBundleOf(event, settings_.limits));
  RETURN_IF_ERROR(ValidateBundle(bundle, settings_.max_bundle_bytes));
  ASSIGN_OR_RETURN(ApplyPlan plan, PlanBundle(bundle));
  ASSIGN_OR_RETURN(cloudevents::ObjectMeta meta, SpecMetadataOf(event, settings_.limits));
  auto existing = works_.find(key.id);
  if (existing != works_.end()) {
    if (existing->second.deleting) {
      return std::vector<Event>{};  // the agent applies nothing to a work being deleted
    }
    if (key.version != 0 && key.version < existing->second.version) {
      return std::vector<Event>{};  // stale (§6.1)
    }
  }
  Work& work = existing != works_.end() ? existing->second : works_[key.id];
  if (existing == works_.end()) {
    work.id = key.id;
    work.applied_at = Now();
  } else {
    DeleteDropped(work.plan, plan);
  }
  work.version = key.version;
  work.original_source = event.source;
  ASSIGN_OR_RETURN(work.metadata_json,
                   WorkMetadataJson(std::move(meta), cluster_, work.id, work.version,
                                    work.original_source, work.applied_at));
  work.plan = std::move(plan);
  work.observed.assign(work.plan.manifests.size(), ManifestObservation{});
  for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
    const ManifestPlan& m = work.plan.manifests[i];
    auto live = Write(m);
    if (live.ok()) {
      work.observed[i] = {absl::OkStatus(), *std::move(live)};
      continue;
    }
    Log().Warn("cannot apply a manifest",
               {{"cluster", cluster_},
                {"resource", work.id},
                {"object", absl::StrCat(m.ref.GroupResource(), " ", m.namespace_, "/", m.name)},
                {"error", std::string(live.status().message())}});
    auto read = Read(m);
    work.observed[i] = {live.status(), read.ok() ? *std::move(read) : std::nullopt};
  }
  std::vector<Event> out;
  ASSIGN_OR_RETURN(Event reply, StatusEvent(work, /*deleted=*/false, /*resync_response=*/false));
  out.push_back(std::move(reply));
  return out;
}

absl::StatusOr<json> SpokeWorkAgent::Write(const ManifestPlan& m) {
  switch (m.mode) {
    case WriteMode::kServerSideApply: {
      if (m.config_spec_hash.empty()) {
        return client_.Patch(m.ref, m.name, kube::PatchType::kApply, m.manifest, ApplyOptions(m),
                             "");
      }
      // As OCM's agent: what it applied last (by hash) is not applied again.
      ASSIGN_OR_RETURN(std::optional<json> live, Read(m));
      static const json::json_pointer kHashAt =
          json::json_pointer("/metadata/annotations") / std::string(kConfigSpecHashAnnotation);
      if (live.has_value() && live->value(kHashAt, std::string()) == m.config_spec_hash) {
        return *std::move(live);
      }
      return client_.Patch(m.ref, m.name, kube::PatchType::kApply,
                           live.has_value() ? m.manifest_when_present : m.manifest, ApplyOptions(m),
                           "");
    }
    case WriteMode::kReadOnly: {
      ASSIGN_OR_RETURN(std::optional<json> live, Read(m));
      if (!live.has_value()) {
        return absl::NotFoundError(
            absl::StrCat(m.ref.GroupResource(), " \"", m.name, "\" not found (ReadOnly)"));
      }
      return *std::move(live);
    }
    case WriteMode::kCreateOnly:
    case WriteMode::kUpdate:
      break;
  }
  kube::WriteOptions options;
  options.field_manager = std::string(kDefaultFieldManager);
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(std::optional<json> live, Read(m));
    if (!live.has_value()) {
      return client_.Create(m.ref, m.manifest, options);
    }
    if (m.mode == WriteMode::kCreateOnly || Matches(m.manifest, *live)) {
      return *std::move(live);
    }
    json updated = m.manifest;
    updated["metadata"]["resourceVersion"] = kube::ResourceVersionOf(*live);
    // As the agent merges metadata: labels and annotations others set on the object stay.
    for (const char* map : {"labels", "annotations"}) {
      const json* held = Child(MetadataOf(*live), map);
      if (held == nullptr || !held->is_object()) {
        continue;
      }
      json merged = *held;
      if (const json* wanted = Child(MetadataOf(m.manifest), map);
          wanted != nullptr && wanted->is_object()) {
        merged.update(*wanted);
      }
      updated["metadata"][map] = std::move(merged);
    }
    auto written = client_.Update(m.ref, updated, options);
    if (written.ok() || !absl::IsAborted(written.status()) || attempt >= 2) {
      return written;
    }
  }
}

absl::StatusOr<std::optional<json>> SpokeWorkAgent::Read(const ManifestPlan& m) {
  auto live = client_.Get(m.ref, m.name);
  if (live.ok()) {
    return std::optional<json>(*std::move(live));
  }
  if (absl::IsNotFound(live.status())) {
    return std::optional<json>();
  }
  return live.status();
}

void SpokeWorkAgent::DeleteDropped(const ApplyPlan& old_plan, const ApplyPlan& new_plan) {
  // Only what still carries the agent's owner reference (apply_plan.h): an object applied under
  // an orphaning delete option stays on the spoke when the work drops it.
  for (const ManifestPlan& old : DroppedToDelete(old_plan, new_plan)) {
    absl::Status status = client_.Delete(old.ref, old.name, DeleteOptionsFor(settings_));
    if (!status.ok() && !absl::IsNotFound(status)) {
      Log().Warn(
          "cannot delete an object dropped from its work",
          {{"cluster", cluster_}, {"name", old.name}, {"error", std::string(status.message())}});
    }
  }
}

void SpokeWorkAgent::DeleteObjects(const Work& work) {
  for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
    const ManifestPlan& m = work.plan.manifests[i];
    if (!CarriesOwnerReference(m)) {
      continue;
    }
    kube::DeleteOptions options = DeleteOptionsFor(settings_);
    if (i < work.observed.size() && work.observed[i].live.has_value()) {
      options.precondition_uid = UidOf(*work.observed[i].live);
    }
    absl::Status status = client_.Delete(m.ref, m.name, options);
    if (!status.ok() && !absl::IsNotFound(status)) {
      Log().Warn("cannot delete an object", {{"cluster", cluster_},
                                             {"resource", work.id},
                                             {"name", m.name},
                                             {"error", std::string(status.message())}});
    }
  }
}

bool SpokeWorkAgent::Gone(const Work& work) {
  for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
    const ManifestPlan& m = work.plan.manifests[i];
    if (m.orphan_on_delete || m.mode == WriteMode::kReadOnly) {
      continue;
    }
    if (i < work.observed.size() && work.observed[i].live.has_value()) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::vector<Event>> SpokeWorkAgent::Delete(const Event& event, bool from_resync) {
  ASSIGN_OR_RETURN(const ResourceKey key, ResourceKeyOf(event));
  std::vector<Event> out;
  auto it = works_.find(key.id);
  if (it == works_.end()) {
    if (from_resync) {
      return out;  // told to delete what this agent does not hold: nothing to do
    }
    // Confirmed all the same, so that the source's deletion completes (as agent_state.h does).
    Work gone;
    gone.id = key.id;
    gone.version = key.version;
    gone.original_source = event.source;
    auto metadata = event.MetadataJson();
    gone.metadata_json = metadata.ok() ? *metadata : "{}";
    ASSIGN_OR_RETURN(Event reply, StatusEvent(gone, /*deleted=*/true, /*resync_response=*/false));
    out.push_back(std::move(reply));
    return out;
  }
  Work& work = it->second;
  if (!work.deleting) {
    work.deleting = true;
    DeleteObjects(work);
  }
  // Re-read: objects without finalizers are gone at once; the others when their owners let go.
  for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
    if (auto live = Read(work.plan.manifests[i]); live.ok()) {
      work.observed[i].live = *std::move(live);
    }
  }
  if (Gone(work)) {
    Complete(it, out);
    return out;
  }
  ASSIGN_OR_RETURN(Event reply, StatusEvent(work, /*deleted=*/false, /*resync_response=*/false));
  out.push_back(std::move(reply));
  return out;
}

void SpokeWorkAgent::Complete(std::map<std::string, Work, std::less<>>::iterator it,
                              std::vector<Event>& out) {
  auto event = StatusEvent(it->second, /*deleted=*/true, /*resync_response=*/false);
  if (event.ok()) {
    out.push_back(*std::move(event));
  } else {
    Log().Warn("cannot build the Deleted status",
               {{"cluster", cluster_},
                {"resource", it->first},
                {"error", std::string(event.status().message())}});
  }
  works_.erase(it);
}

absl::StatusOr<std::vector<Event>> SpokeWorkAgent::AnswerStatusResync(const Event& event) {
  ASSIGN_OR_RETURN(
      cloudevents::ResourceStatusHashList hashes,
      cloudevents::DecodeResourceStatusHashList(event.data.value_or(""), settings_.limits));
  std::vector<Event> out;
  std::map<std::string, std::string, std::less<>> wanted;
  for (const auto& entry : hashes.status_hashes) {
    wanted[entry.resource_id] = entry.status_hash;
  }
  for (auto& [id, work] : works_) {
    if (work.original_source != event.source) {
      continue;
    }
    if (!wanted.empty()) {
      auto it = wanted.find(id);
      if (it == wanted.end() || it->second == work.last_hash) {
        continue;
      }
    }
    ASSIGN_OR_RETURN(Event reply, StatusEvent(work, /*deleted=*/false, /*resync_response=*/true));
    out.push_back(std::move(reply));
  }
  return out;
}

std::vector<Event> SpokeWorkAgent::ObjectChanged(const kube::ResourceRef& ref, const json& object,
                                                 bool deleted) {
  const json& meta = MetadataOf(object);
  const std::string name = kube::StringAt(meta, "name");
  const std::string ns = kube::StringAt(meta, "namespace");
  std::vector<Event> out;
  for (auto it = works_.begin(); it != works_.end();) {
    Work& work = it->second;
    bool touched = false;
    for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
      const ManifestPlan& m = work.plan.manifests[i];
      if (m.name != name || m.namespace_ != ns || !SameCollection(m.ref, ref.InNamespace(ns))) {
        continue;
      }
      work.observed[i].live = deleted ? std::nullopt : std::optional<json>(object);
      touched = true;
    }
    if (touched && work.deleting && Gone(work)) {
      Complete(it++, out);
      continue;
    }
    if (touched) {
      AppendIfChanged(work, out);
    }
    ++it;
  }
  return out;
}

std::vector<Event> SpokeWorkAgent::Resync() {
  std::vector<Event> out;
  for (auto it = works_.begin(); it != works_.end();) {
    Work& work = it->second;
    for (std::size_t i = 0; i < work.plan.manifests.size(); ++i) {
      // The agent requeues a work whose apply failed (its controller returns the errors): a
      // Deployment applied before the Namespace it lives in, in the repo-server's order, is
      // applied again once that Namespace exists.
      if (!work.deleting && !work.observed[i].applied.ok()) {
        auto written = Write(work.plan.manifests[i]);
        if (written.ok()) {
          work.observed[i] = {absl::OkStatus(), *std::move(written)};
          continue;
        }
        work.observed[i].applied = written.status();
      }
      if (auto live = Read(work.plan.manifests[i]); live.ok()) {
        work.observed[i].live = *std::move(live);
      }
    }
    if (work.deleting && Gone(work)) {
      Complete(it++, out);
      continue;
    }
    AppendIfChanged(work, out);
    ++it;
  }
  return out;
}

ManifestBundleStatus SpokeWorkAgent::BuildStatus(const Work& work, bool deleted) const {
  return BuildSpokeStatus(SpokeStatusInput{.plan = &work.plan,
                                           .observed = &work.observed,
                                           .version = work.version,
                                           .cluster = cluster_,
                                           .deleting = work.deleting,
                                           .deleted = deleted,
                                           .now = Now(),
                                           .previous = &work.last_status});
}

absl::StatusOr<Event> SpokeWorkAgent::StatusEvent(Work& work, bool deleted, bool resync_response) {
  ManifestBundleStatus status = BuildStatus(work, deleted);
  const WorkIdentity identity{
      cluster_, agent_id_, work.id, work.version, work.original_source, work.metadata_json};
  ASSIGN_OR_RETURN(Event event, MakeWorkStatusEvent(identity, status, resync_response, Now(),
                                                    sequence_ids_, &work.last_hash));
  work.last_status = std::move(status);
  return event;
}

void SpokeWorkAgent::AppendIfChanged(Work& work, std::vector<Event>& out) {
  const ManifestBundleStatus status = BuildStatus(work, /*deleted=*/false);
  auto hash = cloudevents::StatusHash(status);
  if (hash.ok() && *hash == work.last_hash) {
    return;
  }
  auto event = StatusEvent(work, /*deleted=*/false, /*resync_response=*/false);
  if (event.ok()) {
    out.push_back(*std::move(event));
  }
}

Event SpokeWorkAgent::SpecResyncRequest() const {
  cloudevents::ResourceVersionList list;
  for (const auto& [id, work] : works_) {
    list.resource_versions.push_back({id, work.version});
  }
  return AgentSpecResyncRequest(agent_id_, cluster_, list, Now());
}

std::vector<kube::ResourceRef> SpokeWorkAgent::WatchedCollections() const {
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  std::vector<kube::ResourceRef> refs;
  for (const auto& [id, work] : works_) {
    for (const ManifestPlan& m : work.plan.manifests) {
      if (seen.emplace(m.ref.group, m.ref.version, m.ref.resource, m.ref.namespace_name).second) {
        refs.push_back(m.ref);
      }
    }
  }
  return refs;
}

}  // namespace mmi::fleet_sim
