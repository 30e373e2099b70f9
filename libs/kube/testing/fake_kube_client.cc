#include "libs/kube/testing/fake_kube_client.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "libs/common/status_macros.h"
#include "libs/kube/errors.h"
#include "libs/kube/testing/internal/fake_api.h"

namespace mmi::kube::testing {
namespace {

using internal::ApiError;
using internal::InScope;
using internal::MatchesFields;
using internal::MatchesLabels;
using internal::MetaString;
using nlohmann::json;

// Everything but metadata, to decide whether generation moves.
json WithoutMetadata(json object) {
  if (object.is_object()) {
    object.erase("metadata");
  }
  return object;
}

bool HasFinalizers(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return false;
  }
  const auto f = meta->find("finalizers");
  return f != meta->end() && f->is_array() && !f->empty();
}

}  // namespace

std::string FakeKubeClient::CollectionId(const ResourceRef& ref) {
  return absl::StrCat(ref.group, "/", ref.version, "/", ref.resource);
}

std::string FakeKubeClient::NowTimestamp() { return "2024-01-01T00:00:00Z"; }

absl::Status FakeKubeClient::TakeFailure(const std::string& verb) {
  auto it = failures_.find(verb);
  if (it == failures_.end() || it->second.empty()) {
    return absl::OkStatus();
  }
  absl::Status status = it->second.front();
  it->second.pop_front();
  return status;
}

void FakeKubeClient::Record(Call call) { calls_.push_back(std::move(call)); }

void FakeKubeClient::EmitLocked(const ResourceRef& ref, WatchEventType type, const json& object) {
  StoredEvent stored;
  stored.seq = next_seq_++;
  stored.rv = rv_;
  stored.collection = CollectionId(ref);
  stored.event.type = type;
  stored.event.object = object;
  history_.push_back(std::move(stored));
}

json* FakeKubeClient::FindLocked(const ResourceRef& ref, const std::string& ns,
                                 const std::string& name) {
  auto coll = objects_.find(CollectionId(ref));
  if (coll == objects_.end()) {
    return nullptr;
  }
  auto it = coll->second.find(ObjectKey(ns, name));
  return it == coll->second.end() ? nullptr : &it->second;
}

absl::StatusOr<json> FakeKubeClient::StoreUpdateLocked(const ResourceRef& ref, json updated,
                                                       const json& previous) {
  const std::string ns = MetaString(previous, "namespace");
  const std::string name = MetaString(previous, "name");
  if (!updated.is_object()) {
    updated = json::object();
  }
  if (!updated["metadata"].is_object()) {
    updated["metadata"] = json::object();
  }
  // Server-owned fields cannot be changed by a write.
  for (const char* key : {"uid", "creationTimestamp", "deletionTimestamp", "namespace", "name"}) {
    if (previous["metadata"].contains(key)) {
      updated["metadata"][key] = previous["metadata"][key];
    } else {
      updated["metadata"].erase(key);
    }
  }
  int64_t generation = previous["metadata"].value("generation", int64_t{1});
  if (WithoutMetadata(updated) != WithoutMetadata(previous)) {
    ++generation;
  }
  updated["metadata"]["generation"] = generation;
  if (updated == previous) {
    return updated;  // a no-op write keeps the resourceVersion, like the API server
  }
  ++rv_;
  updated["metadata"]["resourceVersion"] = std::to_string(rv_);
  auto& collection = objects_[CollectionId(ref)];
  const std::string key = ObjectKey(ns, name);
  if (updated["metadata"].contains("deletionTimestamp") && !HasFinalizers(updated)) {
    collection.erase(key);
    EmitLocked(ref, WatchEventType::kDeleted, updated);
    return updated;
  }
  collection[key] = updated;
  EmitLocked(ref, WatchEventType::kModified, updated);
  return updated;
}

absl::StatusOr<json> FakeKubeClient::Get(const ResourceRef& ref, std::string_view name) {
  absl::MutexLock lock(&mu_);
  Record({"GET", ref, std::string(name), nullptr, ""});
  if (absl::Status s = TakeFailure("GET"); !s.ok()) {
    return s;
  }
  const json* object = FindLocked(ref, ref.namespace_name, std::string(name));
  if (object == nullptr) {
    return ApiError(absl::StrCat("GET ", ref.ObjectPath(name)), 404, "NotFound",
                    absl::StrCat(ref.GroupResource(), " \"", std::string(name), "\" not found"));
  }
  return *object;
}

absl::StatusOr<ListResult> FakeKubeClient::List(const ResourceRef& ref,
                                                const ListOptions& options) {
  if (!options.continue_token.empty()) {
    std::function<void(const ListOptions&)> hook;
    {
      absl::MutexLock lock(&mu_);
      hook = before_list_page_;
    }
    if (hook) {
      hook(options);
    }
  }
  absl::MutexLock lock(&mu_);
  Record({"LIST", ref, "", nullptr, options.continue_token});
  if (absl::Status s = TakeFailure("LIST"); !s.ok()) {
    return s;
  }
  ListResult result;
  std::string after;
  int64_t snapshot_rv = rv_;
  if (!options.continue_token.empty()) {
    const std::vector<std::string> parts =
        absl::StrSplit(options.continue_token, absl::MaxSplits(':', 1));
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &snapshot_rv)) {
      return ApiError(absl::StrCat("GET ", ref.CollectionPath()), 400, "BadRequest",
                      "invalid continue token");
    }
    if (snapshot_rv == -1) {
      snapshot_rv = rv_;  // a token from a 410: go on at the current state
    } else if (snapshot_rv < compacted_rv_) {
      // As the API server: the 410 carries a token that continues at the current state.
      json status = {{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"status", "Failure"},
                     {"reason", "Expired"},
                     {"code", 410},
                     {"message",
                      "The provided continue parameter is too old to display a consistent list "
                      "result (fake: compacted; the token in this status goes on at the current "
                      "state)."}};
      if (continue_on_expiry_) {
        status["metadata"] = {{"continue", absl::StrCat("-1:", parts[1])}};
      }
      return StatusFromApiStatus(absl::StrCat("GET ", ref.CollectionPath()), status);
    }
    after = parts[1];
  }
  result.resource_version = std::to_string(snapshot_rv);
  const auto coll = objects_.find(CollectionId(ref));
  if (coll == objects_.end()) {
    return result;
  }
  auto it = after.empty() ? coll->second.begin() : coll->second.upper_bound(after);
  for (; it != coll->second.end(); ++it) {
    const json& object = it->second;
    if (!InScope(ref, object) || !MatchesLabels(object, options.label_selector) ||
        !MatchesFields(object, options.field_selector)) {
      continue;
    }
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) >= options.limit) {
      result.continue_token = absl::StrCat(
          snapshot_rv, ":", result.items.empty() ? "" : ObjectKey(result.items.back()));
      break;
    }
    result.items.push_back(object);
  }
  return result;
}

absl::StatusOr<json> FakeKubeClient::Create(const ResourceRef& ref, const json& object,
                                            const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  Record({"CREATE", ref, MetaString(object, "name"), object, ""});
  if (absl::Status s = TakeFailure("CREATE"); !s.ok()) {
    return s;
  }
  const std::string ns =
      ref.namespace_name.empty() ? MetaString(object, "namespace") : ref.namespace_name;
  const std::string name = MetaString(object, "name");
  const std::string context = absl::StrCat("POST ", ref.InNamespace(ns).CollectionPath());
  if (!object.is_object() || name.empty()) {
    return ApiError(context, 422, "Invalid", "metadata.name: Required value");
  }
  if (FindLocked(ref, ns, name) != nullptr) {
    return ApiError(context, 409, "AlreadyExists",
                    absl::StrCat(ref.GroupResource(), " \"", name, "\" already exists"));
  }
  json stored = object;
  stored["metadata"].erase("resourceVersion");
  if (!ns.empty()) {
    stored["metadata"]["namespace"] = ns;
  }
  stored["metadata"]["uid"] = absl::StrCat("fake-uid-", next_uid_++);
  stored["metadata"]["creationTimestamp"] = NowTimestamp();
  stored["metadata"]["generation"] = 1;
  ++rv_;
  stored["metadata"]["resourceVersion"] = std::to_string(rv_);
  objects_[CollectionId(ref)][ObjectKey(ns, name)] = stored;
  EmitLocked(ref, WatchEventType::kAdded, stored);
  return stored;
}

absl::StatusOr<json> FakeKubeClient::Update(const ResourceRef& ref, const json& object,
                                            const WriteOptions& /*options*/) {
  absl::MutexLock lock(&mu_);
  const std::string name = MetaString(object, "name");
  Record({"UPDATE", ref, name, object, ""});
  if (absl::Status s = TakeFailure("UPDATE"); !s.ok()) {
    return s;
  }
  const std::string ns =
      ref.namespace_name.empty() ? MetaString(object, "namespace") : ref.namespace_name;
  const std::string context = absl::StrCat("PUT ", ref.InNamespace(ns).ObjectPath(name));
  const json* current = FindLocked(ref, ns, name);
  if (current == nullptr) {
    return ApiError(context, 404, "NotFound",
                    absl::StrCat(ref.GroupResource(), " \"", name, "\" not found"));
  }
  const std::string rv = MetaString(object, "resourceVersion");
  if (rv.empty()) {
    return ApiError(
        context, 422, "Invalid",
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update");
  }
  if (rv != MetaString(*current, "resourceVersion")) {
    return ApiError(
        context, 409, "Conflict",
        absl::StrCat("Operation cannot be fulfilled on ", ref.GroupResource(), " \"", name,
                     "\": the object has been modified; please apply your changes to "
                     "the latest version and try again"));
  }
  const json previous = *current;
  return StoreUpdateLocked(ref, object, previous);
}

absl::StatusOr<json> FakeKubeClient::Patch(const ResourceRef& ref, std::string_view name_view,
                                           PatchType type, const json& patch,
                                           const PatchOptions& options,
                                           std::string_view subresource) {
  absl::MutexLock lock(&mu_);
  const std::string name(name_view);
  const char* type_name = type == PatchType::kMerge   ? "merge"
                          : type == PatchType::kJson  ? "json"
                          : type == PatchType::kApply ? "apply"
                                                      : "strategic";
  Record({"PATCH", ref, name, patch, type_name});
  if (absl::Status s = TakeFailure("PATCH"); !s.ok()) {
    return s;
  }
  const std::string context = absl::StrCat("PATCH ", ref.ObjectPath(name, subresource));
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return ApiError(context, 400, "BadRequest",
                    "PatchOptions.meta.k8s.io is invalid: fieldManager: Required value");
  }
  const json* current = FindLocked(ref, ref.namespace_name, name);
  if (current == nullptr) {
    if (type != PatchType::kApply || !subresource.empty()) {
      return ApiError(context, 404, "NotFound",
                      absl::StrCat(ref.GroupResource(), " \"", name, "\" not found"));
    }
    // Apply creates a missing object.
    json created = patch;
    created["metadata"]["name"] = name;
    if (!ref.namespace_name.empty()) {
      created["metadata"]["namespace"] = ref.namespace_name;
    }
    created["metadata"]["uid"] = absl::StrCat("fake-uid-", next_uid_++);
    created["metadata"]["creationTimestamp"] = NowTimestamp();
    created["metadata"]["generation"] = 1;
    ++rv_;
    created["metadata"]["resourceVersion"] = std::to_string(rv_);
    objects_[CollectionId(ref)][ObjectKey(ref.namespace_name, name)] = created;
    EmitLocked(ref, WatchEventType::kAdded, created);
    return created;
  }
  const json previous = *current;
  json patched = previous;
  if (type == PatchType::kJson) {
    try {
      patched = previous.patch(patch);
    } catch (const json::exception& e) {
      return ApiError(context, 422, "Invalid", e.what());
    }
  } else {
    // merge, apply (approximated) and strategic merge (approximated)
    const std::string wanted_rv = patch.is_object() ? MetaString(patch, "resourceVersion") : "";
    if (!wanted_rv.empty() && wanted_rv != MetaString(previous, "resourceVersion")) {
      return ApiError(context, 409, "Conflict",
                      absl::StrCat("Operation cannot be fulfilled on ", ref.GroupResource(), " \"",
                                   name, "\": the object has been modified"));
    }
    patched.merge_patch(patch);
  }
  if (subresource == "status") {
    json only_status = previous;
    only_status["status"] = patched.value("status", json::object());
    patched = std::move(only_status);
  }
  return StoreUpdateLocked(ref, std::move(patched), previous);
}

absl::Status FakeKubeClient::Delete(const ResourceRef& ref, std::string_view name_view,
                                    const DeleteOptions& options) {
  absl::MutexLock lock(&mu_);
  const std::string name(name_view);
  Record({"DELETE", ref, name, nullptr, ""});
  if (absl::Status s = TakeFailure("DELETE"); !s.ok()) {
    return s;
  }
  const std::string context = absl::StrCat("DELETE ", ref.ObjectPath(name));
  json* current = FindLocked(ref, ref.namespace_name, name);
  if (current == nullptr) {
    return ApiError(context, 404, "NotFound",
                    absl::StrCat(ref.GroupResource(), " \"", name, "\" not found"));
  }
  if ((!options.precondition_uid.empty() &&
       options.precondition_uid != MetaString(*current, "uid")) ||
      (!options.precondition_resource_version.empty() &&
       options.precondition_resource_version != MetaString(*current, "resourceVersion"))) {
    return ApiError(context, 409, "Conflict",
                    absl::StrCat("Operation cannot be fulfilled on ", ref.GroupResource(), " \"",
                                 name, "\": Precondition failed"));
  }
  if (options.dry_run) {
    return absl::OkStatus();
  }
  if (HasFinalizers(*current)) {
    if (!(*current)["metadata"].contains("deletionTimestamp")) {
      ++rv_;
      (*current)["metadata"]["deletionTimestamp"] = NowTimestamp();
      (*current)["metadata"]["resourceVersion"] = std::to_string(rv_);
      EmitLocked(ref, WatchEventType::kModified, *current);
    }
    return absl::OkStatus();
  }
  json last = *current;
  objects_[CollectionId(ref)].erase(ObjectKey(ref.namespace_name, name));
  ++rv_;
  last["metadata"]["resourceVersion"] = std::to_string(rv_);
  EmitLocked(ref, WatchEventType::kDeleted, last);
  return absl::OkStatus();
}

// Locks and unlocks mu_ by hand around the handler calls (the analysis cannot follow).
void FakeKubeClient::FailNext(const std::string& verb, absl::Status status) {
  absl::MutexLock lock(&mu_);
  failures_[verb].push_back(std::move(status));
}

std::vector<FakeKubeClient::Call> FakeKubeClient::Calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

size_t FakeKubeClient::CountCalls(const std::string& verb) const {
  absl::MutexLock lock(&mu_);
  return static_cast<size_t>(
      std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) { return c.verb == verb; }));
}

void FakeKubeClient::ClearCalls() {
  absl::MutexLock lock(&mu_);
  calls_.clear();
}

void FakeKubeClient::SetContinueOnExpiry(bool offered) {
  absl::MutexLock lock(&mu_);
  continue_on_expiry_ = offered;
}

std::string FakeKubeClient::CurrentResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return std::to_string(rv_);
}

size_t FakeKubeClient::ObjectCount(const ResourceRef& ref) const {
  absl::MutexLock lock(&mu_);
  const auto coll = objects_.find(CollectionId(ref));
  if (coll == objects_.end()) {
    return 0;
  }
  return static_cast<size_t>(
      std::count_if(coll->second.begin(), coll->second.end(),
                    [&](const auto& kv) { return InScope(ref, kv.second); }));
}

void FakeKubeClient::SetBeforeListPage(std::function<void(const ListOptions&)> hook) {
  absl::MutexLock lock(&mu_);
  before_list_page_ = std::move(hook);
}

}  // namespace mmi::kube::testing

// --- watches: where a watch starts, what it is sent from the history, and the test controls
// that end, expire, pause or feed open watches.

namespace mmi::kube::testing {
namespace {

using internal::ApiError;
using internal::FailureStatus;
using internal::InScope;
using internal::MatchesFields;
using internal::MatchesLabels;
using nlohmann::json;

// The BOOKMARK that ends a streamed list's initial events at `rv`.
WatchEvent InitialEventsEnd(int64_t rv) {
  return {WatchEventType::kBookmark,
          {{"kind", "Bookmark"},
           {"metadata",
            {{"resourceVersion", std::to_string(rv)},
             {"annotations", {{kInitialEventsEndAnnotation, "true"}}}}}}};
}

// Holds a mutex while the fake's state is read and gives it up around handler calls (a handler
// may call back into the fake). Released on destruction.
class HandOverLock {
 public:
  explicit HandOverLock(absl::Mutex& mu) ABSL_NO_THREAD_SAFETY_ANALYSIS : mu_(mu) { mu_.Lock(); }
  ~HandOverLock() { Unlock(); }
  HandOverLock(const HandOverLock&) = delete;
  HandOverLock& operator=(const HandOverLock&) = delete;
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (locked_) {
      mu_.Unlock();
      locked_ = false;
    }
  }
  void Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!locked_) {
      mu_.Lock();
      locked_ = true;
    }
  }

 private:
  absl::Mutex& mu_;
  bool locked_ = true;
};

}  // namespace

std::vector<WatchEvent> FakeKubeClient::CurrentStateLocked(const std::string& collection,
                                                           const WatchMatcher& matches) const {
  std::vector<WatchEvent> events;
  if (const auto coll = objects_.find(collection); coll != objects_.end()) {
    for (const auto& [key, object] : coll->second) {
      if (matches(object)) {
        events.push_back({WatchEventType::kAdded, object});
      }
    }
  }
  return events;
}

absl::StatusOr<int64_t> FakeKubeClient::WatchStartLocked(const ResourceRef& ref,
                                                         const WatchOptions& options,
                                                         const WatchMatcher& matches,
                                                         std::vector<WatchEvent>& initial,
                                                         bool& awaiting_initial_events_end) {
  if (options.send_initial_events) {
    initial = CurrentStateLocked(CollectionId(ref), matches);
    if (initial_events_end_held_) {
      awaiting_initial_events_end = true;
    } else {
      initial.push_back(InitialEventsEnd(rv_));
    }
    return rv_;
  }
  if (options.resource_version.empty() || options.resource_version == "0") {
    // "Start at the most recent": synthetic ADDED events for the current state first.
    initial = CurrentStateLocked(CollectionId(ref), matches);
    return rv_;
  }
  int64_t start_rv = 0;
  if (!absl::SimpleAtoi(options.resource_version, &start_rv)) {
    return ApiError(absl::StrCat("WATCH ", ref.CollectionPath()), 400, "BadRequest",
                    absl::StrCat("invalid resourceVersion ", options.resource_version));
  }
  return start_rv;
}

int64_t FakeKubeClient::CursorAfterLocked(int64_t rv) const {
  for (const auto& e : history_) {
    if (e.rv > rv) {
      return e.seq;
    }
  }
  return next_seq_;
}

void FakeKubeClient::CollectEventsLocked(int id, int64_t cursor, const std::string& collection,
                                         bool allow_bookmarks, const WatchMatcher& matches,
                                         std::vector<WatchEvent>& pending) {
  for (const auto& e : history_) {
    if (e.seq < cursor) {
      continue;
    }
    if (e.collection.empty()) {
      if (watches_[id].awaiting_initial_events_end) {
        WatchEvent end = e.event;
        end.object["metadata"]["annotations"][std::string(kInitialEventsEndAnnotation)] = "true";
        pending.push_back(std::move(end));
        watches_[id].awaiting_initial_events_end = false;
      } else if (allow_bookmarks) {
        pending.push_back(e.event);
      }
    } else if (e.collection == collection && matches(e.event.object)) {
      pending.push_back(e.event);
    }
  }
}

bool FakeKubeClient::AwaitWatchLocked(int id, int64_t cursor, const std::stop_token& stop) {
  const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const OpenWatch& w = watches_[id];
    return w.end || w.expired || (!paused_ && !history_.empty() && history_.back().seq >= cursor);
  };
  const auto ready_or_stopped = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ready() || stop.stop_requested();
  };
  mu_.Await(absl::Condition(&ready_or_stopped));
  return ready();
}

ABSL_NO_THREAD_SAFETY_ANALYSIS absl::Status FakeKubeClient::Watch(const ResourceRef& ref,
                                                                  const WatchOptions& options,
                                                                  const WatchHandler& handler,
                                                                  std::stop_token stop) {
  // A stop request wakes the wait below: releasing mu_ makes Await re-check its condition.
  // Registered before mu_ is taken (a callback for a stop already requested runs right here).
  const std::stop_callback wake(stop, [this] { absl::MutexLock wake_lock(&mu_); });
  HandOverLock lock(mu_);
  Record({"WATCH", ref, "", nullptr,
          options.send_initial_events ? "sendInitialEvents" : options.resource_version});
  if (absl::Status s = TakeFailure("WATCH"); !s.ok()) {
    return s;
  }
  const std::string context = absl::StrCat("WATCH ", ref.CollectionPath());
  const std::string collection = CollectionId(ref);
  const WatchMatcher matches = [&](const json& object) {
    return InScope(ref, object) && MatchesLabels(object, options.label_selector) &&
           MatchesFields(object, options.field_selector);
  };
  if (options.send_initial_events && !watch_list_supported_) {
    lock.Unlock();
    handler({WatchEventType::kError,
             FailureStatus(500, "InternalError",
                           "a watch stream was requested by the client but the required storage "
                           "feature RequestWatchProgress is disabled")});
    return absl::OkStatus();
  }
  std::vector<WatchEvent> pending;
  bool awaiting_initial_events_end = false;
  ASSIGN_OR_RETURN(const int64_t start_rv,
                   WatchStartLocked(ref, options, matches, pending, awaiting_initial_events_end));
  json gone =
      FailureStatus(410, "Expired",
                    absl::StrCat("too old resource version: ", start_rv, " (", compacted_rv_, ")"));
  if (start_rv < compacted_rv_) {
    if (gone_as_http_error_) {
      return ApiError(context, 410, "Expired", gone["message"].get<std::string>());
    }
    lock.Unlock();
    handler({WatchEventType::kError, gone});
    return absl::OkStatus();
  }
  // Position: the first history entry newer than start_rv.
  int64_t cursor = CursorAfterLocked(start_rv);
  const int id = next_watch_id_++;
  watches_[id].id = id;
  watches_[id].awaiting_initial_events_end = awaiting_initial_events_end;
  auto finish = [&](absl::Status status) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    lock.Lock();
    watches_.erase(id);
    return status;
  };
  while (true) {
    if (!pending.empty()) {
      lock.Unlock();
      for (auto& event : pending) {
        if (!handler(std::move(event))) {
          return finish(absl::OkStatus());
        }
      }
      pending.clear();
      lock.Lock();
    }
    if (!AwaitWatchLocked(id, cursor, stop)) {
      return finish(absl::CancelledError(absl::StrCat(context, ": stopped")));
    }
    const OpenWatch w = watches_[id];
    if (w.expired) {
      lock.Unlock();
      gone["message"] = "too old resource version (compacted)";
      handler({WatchEventType::kError, gone});
      return finish(absl::OkStatus());
    }
    if (w.end) {
      return finish(w.end_status);
    }
    CollectEventsLocked(id, cursor, collection, options.allow_bookmarks, matches, pending);
    cursor = history_.back().seq + 1;
  }
}

void FakeKubeClient::CloseWatches() { BreakWatches(absl::OkStatus()); }

void FakeKubeClient::BreakWatches(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, w] : watches_) {
    w.end = true;
    w.end_status = status;
  }
}

void FakeKubeClient::Compact(bool expire_open_watches) {
  absl::MutexLock lock(&mu_);
  compacted_rv_ = rv_;
  history_.clear();
  for (auto& [id, w] : watches_) {
    w.expired = w.expired || expire_open_watches;
  }
}

void FakeKubeClient::SetWatchListSupported(bool supported) {
  absl::MutexLock lock(&mu_);
  watch_list_supported_ = supported;
}

void FakeKubeClient::SetInitialEventsEndHeld(bool held) {
  absl::MutexLock lock(&mu_);
  initial_events_end_held_ = held;
}

void FakeKubeClient::SetWatchDeliveryPaused(bool paused) {
  absl::MutexLock lock(&mu_);
  paused_ = paused;
}

void FakeKubeClient::SendBookmark() {
  absl::MutexLock lock(&mu_);
  StoredEvent stored;
  stored.seq = next_seq_++;
  stored.rv = rv_;
  stored.event.type = WatchEventType::kBookmark;
  stored.event.object = {{"kind", "Bookmark"},
                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  history_.push_back(std::move(stored));
}

void FakeKubeClient::SetGoneAsHttpError(bool http_error) {
  absl::MutexLock lock(&mu_);
  gone_as_http_error_ = http_error;
}

int FakeKubeClient::OpenWatches() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(watches_.size());
}

bool FakeKubeClient::WaitForOpenWatches(int count, std::chrono::milliseconds timeout) const {
  absl::MutexLock lock(&mu_);
  const auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(watches_.size()) >= count;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::FromChrono(timeout));
}

}  // namespace mmi::kube::testing
