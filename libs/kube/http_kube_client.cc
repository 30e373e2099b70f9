#include "libs/kube/http_kube_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "libs/kube/errors.h"
#include "libs/kube/internal/curl_transport.h"
#include "libs/kube/internal/loggers.h"
#include "libs/kube/internal/watch_decoder.h"

namespace mmi::kube {
namespace {

const log::Logger& Log() { return internal::ClientLog(); }

// The query of a CREATE or an UPDATE.
QueryParams WriteQuery(const WriteOptions& options) {
  QueryParams query;
  if (!options.field_manager.empty()) {
    query.emplace_back("fieldManager", options.field_manager);
  }
  if (options.dry_run) {
    query.emplace_back("dryRun", "All");
  }
  return query;
}

constexpr char kJson[] = "application/json";

std::string Dump(const nlohmann::json& value) {
  // Replace invalid UTF-8 instead of throwing: no exception may leave the library.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view ContentTypeFor(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

std::string_view PolicyName(PropagationPolicy policy) {
  switch (policy) {
    case PropagationPolicy::kForeground:
      return "Foreground";
    case PropagationPolicy::kBackground:
      return "Background";
    case PropagationPolicy::kOrphan:
      return "Orphan";
  }
  return "Background";
}

std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& value) {
  int64_t seconds = 0;
  if (value.empty() || !absl::SimpleAtoi(value, &seconds) || seconds < 0) {
    return std::nullopt;  // the HTTP-date form is not used by the API server
  }
  return std::chrono::seconds(seconds);
}

absl::StatusOr<nlohmann::json> ParseBody(const std::string& method, const std::string& path,
                                         const std::string& body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    return absl::DataLossError(
        absl::StrCat(method, " ", path, ": the response is not JSON: ", body.substr(0, 200)));
  }
  return parsed;
}

// The path for a write of `object`: namespace from `ref`, else from the object.
ResourceRef WithObjectNamespace(const ResourceRef& ref, const nlohmann::json& object) {
  if (!ref.namespace_name.empty()) {
    return ref;
  }
  const auto meta = object.find("metadata");
  if (meta != object.end() && meta->is_object()) {
    const auto ns = meta->find("namespace");
    if (ns != meta->end() && ns->is_string()) {
      return ref.InNamespace(ns->get<std::string>());
    }
  }
  return ref;
}

std::string NameOf(const nlohmann::json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return "";
  }
  const auto name = meta->find("name");
  return name != meta->end() && name->is_string() ? name->get<std::string>() : "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpKubeClient>> HttpKubeClient::Create(
    HttpKubeClientSettings settings, const Clock& clock, Sleeper& sleeper,
    prometheus::Registry* registry) {
  internal::CurlTransportSettings transport;
  transport.server = settings.rest.server;
  transport.tls = settings.rest.tls;
  transport.proxy_url = settings.rest.proxy_url;
  transport.disable_compression = settings.rest.disable_compression;
  transport.disable_http2 = settings.disable_http2;
  transport.user_agent = settings.rest.user_agent;
  transport.max_idle_connections = settings.max_idle_connections;
  ASSIGN_OR_RETURN(std::unique_ptr<internal::CurlTransport> curl,
                   internal::CurlTransport::Create(std::move(transport), clock));
  Log().Info("kubernetes client created", {{"config", DescribeForLog(settings.rest)}});
  return std::make_unique<HttpKubeClient>(std::move(curl), std::move(settings), clock, sleeper,
                                          registry);
}

HttpKubeClient::HttpKubeClient(std::unique_ptr<internal::HttpTransport> transport,
                               HttpKubeClientSettings settings, const Clock& clock,
                               Sleeper& sleeper, prometheus::Registry* registry)
    : transport_(std::move(transport)),
      settings_(std::move(settings)),
      clock_(clock),
      sleeper_(sleeper),
      limiter_(settings_.rate_limit, clock),
      token_(settings_.rest.bearer_token, settings_.rest.bearer_token_file, clock,
             settings_.token_refresh_period),
      metrics_(registry) {}

uint64_t HttpKubeClient::NextSeed() { return seed_.fetch_add(0x9e3779b97f4a7c15ULL); }

void HttpKubeClient::WaitForRateLimit() { sleeper_.SleepFor(limiter_.Reserve()); }

absl::Status HttpKubeClient::AddCommonHeaders(internal::HttpRequest& request) {
  request.headers.emplace_back("Accept", kJson);
  ASSIGN_OR_RETURN(std::string token, token_.Token());
  if (!token.empty()) {
    request.headers.emplace_back("Authorization", absl::StrCat("Bearer ", token));
  } else if (!settings_.rest.username.empty()) {
    request.headers.emplace_back(
        "Authorization",
        absl::StrCat("Basic ", absl::Base64Escape(absl::StrCat(settings_.rest.username, ":",
                                                               settings_.rest.password))));
  }
  if (!settings_.rest.impersonate_user.empty()) {
    request.headers.emplace_back("Impersonate-User", settings_.rest.impersonate_user);
  }
  for (const auto& group : settings_.rest.impersonate_groups) {
    request.headers.emplace_back("Impersonate-Group", group);
  }
  return absl::OkStatus();
}

void HttpKubeClient::LogWarnings(const internal::HttpResponse& response) {
  for (const auto& warning : response.warnings) {
    {
      absl::MutexLock lock(&warnings_mu_);
      if (warnings_seen_.size() >= 256 || !warnings_seen_.insert(warning).second) {
        continue;  // each distinct warning once; bounded memory
      }
    }
    Log().Warn("API server warning", {{"warning", warning}});
  }
}

absl::StatusOr<internal::HttpResponse> HttpKubeClient::Execute(internal::HttpRequest request) {
  const std::vector<std::pair<std::string, std::string>> base_headers = request.headers;
  std::optional<Backoff> backoff;
  bool refreshed_token = false;
  int retries = 0;
  while (true) {
    WaitForRateLimit();
    request.headers = base_headers;
    RETURN_IF_ERROR(AddCommonHeaders(request));
    const auto started = clock_.MonotonicNow();
    absl::StatusOr<internal::HttpResponse> response = transport_->Send(request);
    metrics_.ObserveDuration(request.method, clock_.MonotonicNow() - started);
    metrics_.CountRequest(request.method, response.ok() ? response->status : 0);
    const bool can_retry = retries < settings_.retry.max_retries;
    if (!response.ok()) {
      // A GET is safe to repeat; a write may or may not have happened, so the caller decides.
      if (request.method == "GET" && can_retry &&
          response.status().code() == absl::StatusCode::kUnavailable) {
        if (!backoff) {
          backoff.emplace(settings_.retry.backoff, NextSeed());
        }
        const auto delay = backoff->Next();
        Log().Debug("retrying after a transport error",
                    {{"path", request.path},
                     {"delay_ms", static_cast<int64_t>(delay.count())},
                     {"error", std::string(response.status().message())}});
        sleeper_.SleepFor(delay);
        ++retries;
        continue;
      }
      return response.status();
    }
    LogWarnings(*response);
    const long code = response->status;
    if (code == 401 && !refreshed_token && token_.Invalidate()) {
      refreshed_token = true;  // the token file may have rotated: re-read it and try once more
      continue;
    }
    const std::optional<std::chrono::seconds> retry_after = ParseRetryAfter(response->retry_after);
    const bool retryable =
        code == 429 || (code >= 500 && (retry_after.has_value() || request.method == "GET"));
    if (retryable && can_retry) {
      if (!backoff) {
        backoff.emplace(settings_.retry.backoff, NextSeed());
      }
      std::chrono::nanoseconds delay = backoff->Next();
      if (retry_after.has_value()) {
        delay = std::max<std::chrono::nanoseconds>(
            delay, std::min(*retry_after, settings_.retry.max_retry_after));
      }
      Log().Debug("retrying", {{"method", request.method},
                               {"path", request.path},
                               {"code", static_cast<int64_t>(code)},
                               {"retry_after", response->retry_after},
                               {"delay_ms", static_cast<int64_t>(delay.count() / 1'000'000)}});
      sleeper_.SleepFor(delay);
      ++retries;
      continue;
    }
    return response;
  }
}

absl::StatusOr<nlohmann::json> HttpKubeClient::JsonCall(std::string method, std::string path,
                                                        std::string content_type, std::string body,
                                                        std::chrono::milliseconds timeout) {
  internal::HttpRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.body = std::move(body);
  request.timeout = timeout;
  if (!content_type.empty()) {
    request.headers.emplace_back("Content-Type", std::move(content_type));
  }
  ASSIGN_OR_RETURN(internal::HttpResponse response, Execute(request));
  RETURN_IF_ERROR(StatusFromHttp(request.method, request.path, response.status, response.body));
  return ParseBody(request.method, request.path, response.body);
}

absl::StatusOr<nlohmann::json> HttpKubeClient::Get(const ResourceRef& ref, std::string_view name) {
  return JsonCall("GET", ref.ObjectPath(name), "", "", settings_.request_timeout);
}

absl::StatusOr<ListResult> HttpKubeClient::List(const ResourceRef& ref,
                                                const ListOptions& options) {
  QueryParams query;
  if (!options.label_selector.empty()) {
    query.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    query.emplace_back("fieldSelector", options.field_selector);
  }
  if (options.limit > 0) {
    query.emplace_back("limit", std::to_string(options.limit));
  }
  if (!options.continue_token.empty()) {
    query.emplace_back("continue", options.continue_token);
  }
  if (!options.resource_version.empty()) {
    query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!options.resource_version_match.empty()) {
    query.emplace_back("resourceVersionMatch", options.resource_version_match);
  }
  const std::string path = ref.CollectionPath() + BuildQuery(query);
  ASSIGN_OR_RETURN(nlohmann::json list, JsonCall("GET", path, "", "", settings_.list_timeout));
  ListResult result;
  if (!list.is_object()) {
    return absl::DataLossError(absl::StrCat("GET ", path, ": the response is not a list object"));
  }
  if (const auto meta = list.find("metadata"); meta != list.end() && meta->is_object()) {
    result.resource_version = meta->value("resourceVersion", std::string());
    result.continue_token = meta->value("continue", std::string());
    if (const auto rem = meta->find("remainingItemCount");
        rem != meta->end() && rem->is_number_integer()) {
      result.remaining_item_count = rem->get<int64_t>();
    }
  }
  auto items = list.find("items");
  if (items != list.end() && items->is_array()) {
    // Items of built-in types come without apiVersion/kind: fill them in from the list's.
    const std::string api_version = list.value("apiVersion", std::string());
    std::string kind = list.value("kind", std::string());
    if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
      kind.resize(kind.size() - 4);
    }
    result.items.reserve(items->size());
    for (auto& item : *items) {
      if (item.is_object()) {
        if (!item.contains("apiVersion") && !api_version.empty()) {
          item["apiVersion"] = api_version;
        }
        if (!item.contains("kind") && !kind.empty()) {
          item["kind"] = kind;
        }
      }
      result.items.push_back(std::move(item));
    }
  }
  return result;
}

absl::StatusOr<nlohmann::json> HttpKubeClient::Create(const ResourceRef& ref,
                                                      const nlohmann::json& object,
                                                      const WriteOptions& options) {
  const QueryParams query = WriteQuery(options);
  const ResourceRef target = WithObjectNamespace(ref, object);
  return JsonCall("POST", target.CollectionPath() + BuildQuery(query), kJson, Dump(object),
                  settings_.request_timeout);
}

absl::StatusOr<nlohmann::json> HttpKubeClient::Update(const ResourceRef& ref,
                                                      const nlohmann::json& object,
                                                      const WriteOptions& options) {
  const std::string name = NameOf(object);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PUT ", ref.CollectionPath(), ": the object has no metadata.name to update"));
  }
  const QueryParams query = WriteQuery(options);
  const ResourceRef target = WithObjectNamespace(ref, object);
  return JsonCall("PUT", target.ObjectPath(name) + BuildQuery(query), kJson, Dump(object),
                  settings_.request_timeout);
}

absl::StatusOr<nlohmann::json> HttpKubeClient::Patch(const ResourceRef& ref, std::string_view name,
                                                     PatchType type, const nlohmann::json& patch,
                                                     const PatchOptions& options,
                                                     std::string_view subresource) {
  const std::string path = ref.ObjectPath(name, subresource);
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PATCH ", path, ": server-side apply needs PatchOptions.field_manager"));
  }
  QueryParams query;
  if (!options.field_manager.empty()) {
    query.emplace_back("fieldManager", options.field_manager);
  }
  if (type == PatchType::kApply && options.force) {
    query.emplace_back("force", "true");
  }
  if (options.dry_run) {
    query.emplace_back("dryRun", "All");
  }
  if (!options.field_validation.empty()) {
    query.emplace_back("fieldValidation", options.field_validation);
  }
  return JsonCall("PATCH", path + BuildQuery(query), std::string(ContentTypeFor(type)), Dump(patch),
                  settings_.request_timeout);
}

absl::Status HttpKubeClient::Delete(const ResourceRef& ref, std::string_view name,
                                    const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.precondition_uid.empty()) {
    body["preconditions"]["uid"] = options.precondition_uid;
  }
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (options.propagation_policy.has_value()) {
    body["propagationPolicy"] = std::string(PolicyName(*options.propagation_policy));
  }
  if (options.grace_period_seconds.has_value()) {
    body["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  if (options.dry_run) {
    body["dryRun"] = nlohmann::json::array({"All"});
  }
  return JsonCall("DELETE", ref.ObjectPath(name), kJson, Dump(body), settings_.request_timeout)
      .status();
}

absl::Status HttpKubeClient::Watch(const ResourceRef& ref, const WatchOptions& options,
                                   const WatchHandler& handler, std::stop_token stop) {
  QueryParams query = {{"watch", "true"}};
  if (!options.resource_version.empty()) {
    query.emplace_back("resourceVersion", options.resource_version);
  }
  if (options.allow_bookmarks) {
    query.emplace_back("allowWatchBookmarks", "true");
  }
  if (options.send_initial_events) {
    query.emplace_back("sendInitialEvents", "true");
    query.emplace_back("resourceVersionMatch", "NotOlderThan");
  }
  if (options.timeout.count() > 0) {
    query.emplace_back("timeoutSeconds", std::to_string(options.timeout.count()));
  }
  if (!options.label_selector.empty()) {
    query.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    query.emplace_back("fieldSelector", options.field_selector);
  }
  internal::HttpRequest request;
  request.method = "GET";
  request.path = ref.CollectionPath() + BuildQuery(query);

  internal::StreamOptions stream_options;
  stream_options.stall_timeout = options.stall_timeout;
  if (options.timeout.count() > 0) {
    stream_options.max_duration = options.timeout + std::chrono::seconds(60);
  }
  bool refreshed_token = false;
  while (true) {
    WaitForRateLimit();
    internal::HttpRequest attempt = request;
    RETURN_IF_ERROR(AddCommonHeaders(attempt));
    internal::WatchDecoder decoder;
    absl::Status decode_error;
    const internal::StreamDataHandler on_data = [&](std::string_view chunk) {
      absl::StatusOr<bool> keep_going = decoder.Feed(chunk, handler);
      if (!keep_going.ok()) {
        decode_error = keep_going.status();
        return false;
      }
      return *keep_going;
    };
    absl::StatusOr<internal::HttpResponse> response =
        transport_->Stream(attempt, stream_options, on_data, stop);
    metrics_.CountRequest("GET", response.ok() ? response->status : 0);
    if (!decode_error.ok()) {
      return absl::DataLossError(
          absl::StrCat("WATCH ", request.path, ": ", std::string(decode_error.message())));
    }
    if (!response.ok()) {
      return response.status();
    }
    LogWarnings(*response);
    if (response->status == 401 && !refreshed_token && token_.Invalidate()) {
      refreshed_token = true;
      continue;
    }
    RETURN_IF_ERROR(StatusFromHttp("WATCH", request.path, response->status, response->body));
    absl::StatusOr<bool> last = decoder.Finish(handler);
    if (!last.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "WATCH ", request.path,
          ": the stream ended inside an event: ", std::string(last.status().message())));
    }
    return absl::OkStatus();
  }
}

}  // namespace mmi::kube
