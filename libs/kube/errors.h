// How kube-apiserver answers become absl::Status values, and helpers to inspect them.
//
// | HTTP | absl code            | notes                                                       |
// |------|----------------------|-------------------------------------------------------------|
// | 400  | kInvalidArgument     | bad request: a bug on our side, do not retry                |
// | 401  | kUnauthenticated     | credentials rejected (the client re-reads a token file once) |
// | 403  | kPermissionDenied    | RBAC missing                                                |
// | 404  | kNotFound            | object (or CRD) absent; on delete it means "already gone"   |
// | 405  | kUnimplemented       | verb not supported for the resource                         |
// | 409  | kAlreadyExists       | reason AlreadyExists (create of a taken name)               |
// | 409  | kAborted             | reason Conflict: stale resourceVersion, failed precondition, |
// |      |                      | server-side apply conflict -> re-read and retry, or force   |
// | 410  | kOutOfRange          | Expired/Gone: resourceVersion or continue token too old ->  |
// |      |                      | relist (IsGone)                                             |
// | 413, 415, 422 | kInvalidArgument | too large / wrong patch type / schema validation        |
// | 429  | kResourceExhausted   | APF rejected it; retried by the client before surfacing     |
// | 504  | kDeadlineExceeded    | server-side timeout                                         |
// | 5xx  | kUnavailable         | retried by the client before surfacing                      |
// Messages read "<METHOD> <path>: HTTP <code> <reason>: <server message>".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json_fwd.hpp"

namespace mmi::kube {

// Maps an HTTP answer to a Status (OK for 2xx). `body` is the response body: a metav1.Status
// JSON for API errors (its message, reason and causes go into the Status message).
absl::Status StatusFromHttp(std::string_view method, std::string_view path, long http_status,
                            std::string_view body);

// Maps a metav1.Status object (e.g. the object of a watch ERROR event) to a Status, using its
// `code` and `reason`. `context` prefixes the message ("WATCH /apis/...").
absl::Status StatusFromApiStatus(std::string_view context, const nlohmann::json& status_object);

// HTTP 410 (Expired / Gone): the resourceVersion or continue token is no longer available.
bool IsGone(const absl::Status& status);
// The continue token of a 410 for an expired continue token ("" if none): it continues the list
// from the next key at the server's current state, so the pages after it are not the first
// page's snapshot (an "inconsistent" continuation, see ForEachListItem).
std::string ContinueTokenOf(const absl::Status& status);
// HTTP 409 with reason Conflict (not AlreadyExists).
bool IsConflict(const absl::Status& status);

// The HTTP status code and Kubernetes reason recorded on a Status made by this library.
std::optional<int> HttpCodeOf(const absl::Status& status);
std::string ApiReasonOf(const absl::Status& status);

}  // namespace mmi::kube
