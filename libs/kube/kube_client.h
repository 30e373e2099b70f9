// KubeClient: the Kubernetes API as the services see it. Objects are nlohmann::json values (the
// API's JSON encoding), so any group/version/resource works, custom resources included.
//
// Implementations: HttpKubeClient (libs/kube/http_kube_client.h, libcurl) and FakeKubeClient
// (libs/kube/testing/fake_kube_client.h, in memory, for unit tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/kube/resource.h"
#include "libs/kube_object/object.h"  // ObjectKey, ResourceVersionOf: used with every object
#include "nlohmann/json.hpp"

namespace mmi::kube {

struct ListOptions {
  std::string label_selector;  // "app=x,tier in (a,b)"; "" = everything
  std::string field_selector;  // "metadata.name=x"; CRs only support metadata.name/namespace
  int64_t limit = 0;           // page size; 0 = no paging (the whole collection at once)
  std::string continue_token;  // from the previous page's ListResult
  // "" = most recent (a consistent read); "0" = any (may be served from the watch cache).
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
};

struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion: watch from here
  std::string continue_token;    // "" on the last page
  std::optional<int64_t> remaining_item_count;
};

struct WatchOptions {
  std::string resource_version;  // usually the list's; "" = start at the most recent
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = true;
  // A streamed list (sendInitialEvents=true, resourceVersionMatch=NotOlderThan; KEP-3157
  // "WatchList"): the server first sends the collection's state as ADDED events, then one
  // BOOKMARK annotated kInitialEventsEndAnnotation: "true" whose resourceVersion is that state's,
  // then changes as any watch. Needs allow_bookmarks. With resource_version "" the state is a
  // consistent read. Servers without the feature answer with an error (HTTP 422, or an ERROR
  // event: kube-apiserver on an etcd without RequestWatchProgress says so with a 500).
  bool send_initial_events = false;
  // Server-side end of the stream (timeoutSeconds); the stream then ends with an OK status.
  std::chrono::seconds timeout{300};
  // Client-side stall detection: no byte for this long ends the watch with kDeadlineExceeded.
  // Keep it above the server's bookmark interval (about a minute on idle watches).
  std::chrono::milliseconds stall_timeout{150'000};
};

// On the BOOKMARK that ends a streamed list's initial events (send_initial_events).
inline constexpr std::string_view kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view WatchEventTypeName(WatchEventType type);

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json's move constructor does not throw.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object; for kBookmark only apiVersion, kind and metadata.resourceVersion; for kError a
  // metav1.Status (see StatusFromApiStatus in errors.h: code 410 means "relist").
  nlohmann::json object;
};

// Called once per event, in order, on the thread that called Watch(). Return false to end the
// watch (Watch then returns OK).
using WatchHandler = std::function<bool(WatchEvent&& event)>;

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386): lists are replaced whole
  kJson,            // application/json-patch+json (RFC 6902): list of ops, `test` for guards
  kApply,           // application/apply-patch+yaml: server-side apply, needs field_manager
  kStrategicMerge,  // built-in types only; custom resources answer 415 (kInvalidArgument)
};

struct PatchOptions {
  std::string field_manager;  // required for kApply (<= 128 chars)
  bool force = false;         // kApply: take ownership of conflicting fields instead of 409
  bool dry_run = false;
  std::string field_validation;  // "", "Ignore", "Warn" or "Strict"
};

struct WriteOptions {
  std::string field_manager;  // recorded in managedFields; "" = the server's default
  bool dry_run = false;
};

enum class PropagationPolicy { kForeground, kBackground, kOrphan };

struct DeleteOptions {
  // Preconditions: the delete fails with kAborted (409 Conflict) unless they match.
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::optional<PropagationPolicy> propagation_policy;
  std::optional<int64_t> grace_period_seconds;
  bool dry_run = false;
};

// Contract shared by every implementation:
//  * Thread-safe: any method may be called from several threads at once.
//  * Errors are absl::Status values mapped from the HTTP answer (errors.h): kNotFound,
//    kAlreadyExists (create of a taken name), kAborted (409 Conflict: stale resourceVersion,
//    failed precondition, server-side apply conflict), kOutOfRange (410 Gone, IsGone()),
//    kInvalidArgument (400/413/415/422), kUnauthenticated, kPermissionDenied,
//    kResourceExhausted (429 after retries), kUnavailable (5xx after retries, connection
//    failures), kDeadlineExceeded (timeouts). Messages name the verb and path and carry the
//    server's Status message. No method throws.
//  * `ref.namespace_name` selects the namespace; "" means cluster-scoped (or, for List and
//    Watch, all namespaces).
//  * No default arguments (they do not mix with virtual functions): pass `{}` for default
//    options and "" for no subresource.
class KubeClient {
 public:
  virtual ~KubeClient() = default;

  virtual absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view name) = 0;

  // One page (or the whole collection when options.limit == 0). See ListAll() for paging.
  virtual absl::StatusOr<ListResult> List(const ResourceRef& ref, const ListOptions& options) = 0;

  // POST. The namespace comes from `ref`, else from the object's metadata.namespace.
  virtual absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref,
                                                const nlohmann::json& object,
                                                const WriteOptions& options) = 0;

  // PUT of the whole object; metadata.resourceVersion is the precondition (custom resources
  // reject updates without it). A stale version fails with kAborted: re-read and retry.
  virtual absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref,
                                                const nlohmann::json& object,
                                                const WriteOptions& options) = 0;

  // PATCH; `subresource` "" for the main resource ("status" only where the CRD has one — Argo
  // CD Applications do not: patch their status through the main resource).
  virtual absl::StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view name,
                                               PatchType type, const nlohmann::json& patch,
                                               const PatchOptions& options,
                                               std::string_view subresource) = 0;

  // DELETE. kNotFound when already gone (callers usually treat that as success).
  virtual absl::Status Delete(const ResourceRef& ref, std::string_view name,
                              const DeleteOptions& options) = 0;

  // Streams events to `handler` on the calling thread until one of:
  //  * the server ends the stream (options.timeout) or `handler` returns false -> OK;
  //  * `stop` is requested -> kCancelled (promptly, even while no data flows);
  //  * no data for options.stall_timeout -> kDeadlineExceeded;
  //  * the connection breaks -> kUnavailable (events delivered so far stay delivered);
  //  * the request is refused: HTTP 410 -> kOutOfRange (IsGone: relist), others as above.
  // ERROR events are delivered to the handler like any other event.
  virtual absl::Status Watch(const ResourceRef& ref, const WatchOptions& options,
                             const WatchHandler& handler, std::stop_token stop) = 0;
};

// Lists every page (options.limit is the page size, 500 when 0) into one result whose
// resource_version is the first page's (all pages are one snapshot). When a continue token has
// expired (410) it restarts once with one unpaged list, as client-go's pager does.
absl::StatusOr<ListResult> ListAll(KubeClient& client, const ResourceRef& ref, ListOptions options);

// What ForEachListItem calls as the pages arrive.
struct ListItemCallbacks {
  std::function<void(nlohmann::json&&)> on_item;  // required: each item, in list order
  // The listing restarts unpaged after an expired continue token: drop what came so far.
  std::function<void()> on_restart;
  // The first page's resourceVersion, before its items: a caller can start watching from it
  // while the remaining pages are fetched.
  std::function<void(const std::string&)> on_first_page;
  // Set only by a caller that watches since the first page's version: when a continue token
  // expires and the 410 carries a fresh one, this is called and the listing goes on from the
  // next key at the server's current state instead of restarting unpaged. The remaining pages
  // are then newer than the first; the watch's events repair the seam (objects created or
  // changed under keys already listed, deleted under keys not listed yet).
  std::function<void()> on_inconsistent_continue;
};

// Lists page by page (options.limit, 500 when 0) and hands each item to `callbacks.on_item` as
// it arrives, so a caller can shrink items before the next page is fetched. When a continue
// token expires (410) the listing continues inconsistently (see ListItemCallbacks) or restarts
// once, unpaged, as client-go's pager does. Returns the (first page's) resourceVersion. A
// `stop` requested between pages ends the listing with kCancelled.
absl::StatusOr<std::string> ForEachListItem(KubeClient& client, const ResourceRef& ref,
                                            ListOptions options, const ListItemCallbacks& callbacks,
                                            const std::stop_token& stop = {});

}  // namespace mmi::kube
