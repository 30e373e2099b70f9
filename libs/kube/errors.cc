#include "libs/kube/errors.h"

#include <nlohmann/json.hpp>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace mmi::kube {
namespace {

constexpr char kPayloadUrl[] = "type.mmi/kube.ApiStatus";
// A 410 for an expired continue token carries one that continues the list at the server's
// current state (metav1.Status.metadata.continue).
constexpr char kContinuePayloadUrl[] = "type.mmi/kube.Continue";
constexpr size_t kMaxBodyInMessage = 300;

absl::StatusCode CodeFor(long http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
    case 406:
    case 413:
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http_status >= 500) {
    return absl::StatusCode::kUnavailable;
  }
  return absl::StatusCode::kUnknown;
}

// "msg; causes: spec.project: Required value, ..." from a metav1.Status.
std::string DescribeApiStatus(const nlohmann::json& status) {
  std::string out;
  if (const auto it = status.find("message"); it != status.end() && it->is_string()) {
    out = it->get<std::string>();
  }
  const auto details = status.find("details");
  if (details == status.end() || !details->is_object()) {
    return out;
  }
  const auto causes = details->find("causes");
  if (causes == details->end() || !causes->is_array() || causes->empty()) {
    return out;
  }
  absl::StrAppend(&out, " (causes:");
  for (const auto& cause : *causes) {
    if (!cause.is_object()) {
      continue;
    }
    absl::StrAppend(&out, " [", cause.value("field", std::string()), ": ",
                    cause.value("message", std::string()), "]");
  }
  absl::StrAppend(&out, ")");
  return out;
}

std::string ContinueOf(const nlohmann::json& status) {
  const auto meta = status.find("metadata");
  if (meta == status.end() || !meta->is_object()) {
    return "";
  }
  const auto token = meta->find("continue");
  return token != meta->end() && token->is_string() ? token->get<std::string>() : "";
}

absl::Status MakeStatus(std::string_view context, long http_status, const std::string& reason,
                        const std::string& detail, const std::string& continue_token) {
  const absl::StatusCode code = CodeFor(http_status, reason);
  std::string message = absl::StrCat(std::string(context), ": HTTP ", http_status);
  if (!reason.empty()) {
    absl::StrAppend(&message, " ", reason);
  }
  if (!detail.empty()) {
    absl::StrAppend(&message, ": ", detail);
  }
  absl::Status status(code, message);
  status.SetPayload(kPayloadUrl, absl::Cord(absl::StrCat(http_status, " ", reason)));
  if (!continue_token.empty()) {
    status.SetPayload(kContinuePayloadUrl, absl::Cord(continue_token));
  }
  return status;
}

}  // namespace

absl::Status StatusFromHttp(std::string_view method, std::string_view path, long http_status,
                            std::string_view body) {
  if (http_status >= 200 && http_status < 300) {
    return absl::OkStatus();
  }
  const std::string context = absl::StrCat(std::string(method), " ", std::string(path));
  std::string reason;
  std::string detail;
  std::string continue_token;
  const auto parsed = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (parsed.is_object() && parsed.value("kind", std::string()) == "Status") {
    reason = parsed.value("reason", std::string());
    detail = DescribeApiStatus(parsed);
    continue_token = ContinueOf(parsed);
  } else {
    detail = std::string(body.substr(0, kMaxBodyInMessage));
  }
  return MakeStatus(context, http_status, reason, detail, continue_token);
}

absl::Status StatusFromApiStatus(std::string_view context, const nlohmann::json& status_object) {
  long code = 500;
  std::string reason;
  if (status_object.is_object()) {
    if (const auto it = status_object.find("code");
        it != status_object.end() && it->is_number_integer()) {
      code = it->get<long>();
    }
    reason = status_object.value("reason", std::string());
  }
  if (!status_object.is_object()) {
    return MakeStatus(context, code, reason, "", "");
  }
  return MakeStatus(context, code, reason, DescribeApiStatus(status_object),
                    ContinueOf(status_object));
}

std::optional<int> HttpCodeOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) {
    return std::nullopt;
  }
  const std::string text(*payload);
  const std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits(' ', 1));
  int code = 0;
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &code)) {
    return std::nullopt;
  }
  return code;
}

std::string ApiReasonOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) {
    return "";
  }
  const std::string text(*payload);
  const auto space = text.find(' ');
  return space == std::string::npos ? "" : text.substr(space + 1);
}

bool IsGone(const absl::Status& status) { return HttpCodeOf(status) == 410; }

std::string ContinueTokenOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kContinuePayloadUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

bool IsConflict(const absl::Status& status) {
  return HttpCodeOf(status) == 409 && status.code() == absl::StatusCode::kAborted;
}

}  // namespace mmi::kube
