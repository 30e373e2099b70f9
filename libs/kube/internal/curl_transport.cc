#include "libs/kube/internal/curl_transport.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace mmi::kube::internal {
namespace {

constexpr size_t kMaxErrorBody = size_t{1} << 20;

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

void Append(Slist& list, const std::string& line) {
  curl_slist* head = curl_slist_append(list.get(), line.c_str());
  if (head != nullptr) {
    (void)list.release();
    list.reset(head);
  }
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void SetBlob(CURL* curl, CURLoption option, const std::string& data) {
  curl_blob blob{};
  blob.data = const_cast<char*>(data.data());  // copied by curl (CURL_BLOB_COPY)
  blob.len = data.size();
  blob.flags = CURL_BLOB_COPY;
  curl_easy_setopt(curl, option, &blob);
}

absl::Status FileMustExist(const std::string& path, std::string_view what) {
  if (path.empty()) {
    return absl::OkStatus();
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("kube transport: ", std::string(what), " file ", path, " does not exist"));
  }
  return absl::OkStatus();
}

}  // namespace

// Callback state of one request.
struct CurlTransport::Exchange {
  HttpResponse response;
  Slist headers;
  Slist connect_to;
  const StreamDataHandler* on_data = nullptr;  // set for Stream()
  CURL* curl = nullptr;
  bool status_known = false;
  bool stream_body = false;
  bool stopped_by_handler = false;
  size_t body_bytes = 0;
  std::chrono::steady_clock::time_point last_data;
  const Clock* clock = nullptr;
  std::array<char, CURL_ERROR_SIZE> error{};

  static size_t OnHeader(char* data, size_t size, size_t n, void* user) {
    auto* self = static_cast<Exchange*>(user);
    const std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
      // A new response (after 100-continue or a proxy CONNECT): forget earlier headers.
      self->response.retry_after.clear();
      self->response.warnings.clear();
      return size * n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return size * n;
    }
    const std::string name = absl::AsciiStrToLower(std::string(line.substr(0, colon)));
    const std::string value(absl::StripAsciiWhitespace(std::string(line.substr(colon + 1))));
    if (name == "retry-after") {
      self->response.retry_after = value;
    } else if (name == "warning") {
      self->response.warnings.push_back(value);
    }
    return size * n;
  }

  static size_t OnBody(char* data, size_t size, size_t n, void* user) {
    auto* self = static_cast<Exchange*>(user);
    const size_t len = size * n;
    if (self->clock != nullptr) {
      self->last_data = self->clock->MonotonicNow();
    }
    if (!self->status_known) {
      curl_easy_getinfo(self->curl, CURLINFO_RESPONSE_CODE, &self->response.status);
      self->status_known = true;
      self->stream_body =
          self->on_data != nullptr && self->response.status >= 200 && self->response.status < 300;
    }
    self->body_bytes += len;
    if (self->stream_body) {
      if (!(*self->on_data)(std::string_view(data, len))) {
        self->stopped_by_handler = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
      }
      return len;
    }
    if (self->response.body.size() + len > kMaxErrorBody && self->on_data != nullptr) {
      return len;  // an error body that large is not worth keeping
    }
    self->response.body.append(data, len);
    return len;
  }
};

absl::StatusOr<std::unique_ptr<CurlTransport>> CurlTransport::Create(CurlTransportSettings settings,
                                                                     const Clock& clock) {
  GlobalInitOnce();
  if (!settings.server.starts_with("https://") && !settings.server.starts_with("http://")) {
    return absl::InvalidArgumentError(absl::StrCat("kube transport: server '", settings.server,
                                                   "' must start with https:// or http://"));
  }
  if (auto s = FileMustExist(settings.tls.ca_file, "certificate-authority"); !s.ok()) {
    return s;
  }
  if (auto s = FileMustExist(settings.tls.cert_file, "client-certificate"); !s.ok()) {
    return s;
  }
  if (auto s = FileMustExist(settings.tls.key_file, "client-key"); !s.ok()) {
    return s;
  }

  std::string url_base = settings.server;
  std::string connect_to;
  if (!settings.tls.server_name.empty()) {
    // Verify and send SNI for server_name while connecting to the configured host: put the
    // name in the URL and map it back to the real address with CONNECT_TO.
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), curl_url_cleanup);
    if (!url || curl_url_set(url.get(), CURLUPART_URL, settings.server.c_str(), 0) != CURLUE_OK) {
      return absl::InvalidArgumentError(
          absl::StrCat("kube transport: cannot parse server URL '", settings.server, "'"));
    }
    char* host = nullptr;
    char* port = nullptr;
    char* scheme = nullptr;
    curl_url_get(url.get(), CURLUPART_HOST, &host, 0);
    curl_url_get(url.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    curl_url_get(url.get(), CURLUPART_SCHEME, &scheme, 0);
    const std::string host_s = host != nullptr ? host : "";
    const std::string port_s = port != nullptr ? port : "";
    const std::string scheme_s = scheme != nullptr ? scheme : "https";
    curl_free(host);
    curl_free(port);
    curl_free(scheme);
    url_base = absl::StrCat(scheme_s, "://", settings.tls.server_name, ":", port_s);
    connect_to = absl::StrCat(settings.tls.server_name, ":", port_s, ":", host_s, ":", port_s);
  }
  return std::unique_ptr<CurlTransport>(
      new CurlTransport(std::move(settings), clock, std::move(url_base), std::move(connect_to)));
}

CurlTransport::CurlTransport(CurlTransportSettings settings, const Clock& clock,
                             std::string url_base, std::string connect_to)
    : settings_(std::move(settings)),
      clock_(clock),
      url_base_(std::move(url_base)),
      connect_to_(std::move(connect_to)) {}

CurlTransport::~CurlTransport() {
  absl::MutexLock lock(&mu_);
  for (CURL* curl : idle_) {
    curl_easy_cleanup(curl);
  }
  idle_.clear();
}

CURL* CurlTransport::AcquireHandle() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      CURL* curl = idle_.back();
      idle_.pop_back();
      return curl;
    }
  }
  return curl_easy_init();
}

void CurlTransport::ReleaseHandle(CURL* curl) {
  {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < settings_.max_idle_connections) {
      idle_.push_back(curl);
      return;
    }
  }
  curl_easy_cleanup(curl);
}

absl::Status CurlTransport::Configure(CURL* curl, const HttpRequest& request,
                                      Exchange& exchange) const {
  curl_easy_reset(curl);  // keeps the live connection and TLS session cache
  exchange.curl = curl;
  exchange.clock = &clock_;
  exchange.last_data = clock_.MonotonicNow();
  const std::string url = url_base_ + request.path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());  // copied by curl
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, exchange.error.data());
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION,
                   settings_.disable_http2 ? static_cast<long>(CURL_HTTP_VERSION_1_1)
                                           : static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 15L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(settings_.connect_timeout.count()));
  if (request.timeout.count() > 0) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  }
  curl_easy_setopt(curl, CURLOPT_USERAGENT, settings_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_PROXY, settings_.proxy_url.c_str());  // "" = no proxy at all
  if (!settings_.disable_compression) {
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  }
  // TLS.
  const TlsConfig& tls = settings_.tls;
  if (tls.insecure_skip_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!tls.ca_data.empty()) {
    SetBlob(curl, CURLOPT_CAINFO_BLOB, tls.ca_data);
  } else if (!tls.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, tls.ca_file.c_str());
  }
  if (!tls.cert_data.empty()) {
    SetBlob(curl, CURLOPT_SSLCERT_BLOB, tls.cert_data);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!tls.cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, tls.cert_file.c_str());
  }
  if (!tls.key_data.empty()) {
    SetBlob(curl, CURLOPT_SSLKEY_BLOB, tls.key_data);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!tls.key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, tls.key_file.c_str());
  }
  if (!connect_to_.empty()) {
    Append(exchange.connect_to, connect_to_);
    curl_easy_setopt(curl, CURLOPT_CONNECT_TO, exchange.connect_to.get());
  }
  // Method and body.
  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty() || request.method != "DELETE") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    }
  }
  for (const auto& [name, value] : request.headers) {
    Append(exchange.headers, absl::StrCat(name, ": ", value));
  }
  Append(exchange.headers, "Expect:");  // no 100-continue round trip on HTTP/1.1
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, exchange.headers.get());
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Exchange::OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Exchange::OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  return absl::OkStatus();
}

namespace {

absl::Status CurlError(CURLcode code, const char* detail, const HttpRequest& request,
                       const std::string& server, size_t body_bytes) {
  const std::string where = absl::StrCat(request.method, " ", server, request.path.substr(0, 200));
  std::string message = absl::StrCat(where, ": ", curl_easy_strerror(code));
  if (detail != nullptr && detail[0] != '\0') {
    absl::StrAppend(&message, " (", detail, ")");
  }
  if (body_bytes > 0) {
    absl::StrAppend(&message, " after ", body_bytes, " body bytes");
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return absl::DeadlineExceededError(message);
  }
  return absl::UnavailableError(
      absl::StrCat(message, "; check that the API server is reachable and its TLS settings"));
}

// A stream that is still open: DeadlineExceeded once no byte came for `stall_timeout` (a dead
// connection) or it outlived `max_duration` (the server did not end it), else OK.
absl::Status CheckStreamDeadlines(const HttpRequest& request, const StreamOptions& options,
                                  std::chrono::steady_clock::time_point started,
                                  std::chrono::steady_clock::time_point last_data,
                                  std::chrono::steady_clock::time_point now) {
  if (options.stall_timeout.count() > 0 && now - last_data > options.stall_timeout) {
    return absl::DeadlineExceededError(
        absl::StrCat(request.method, " ", request.path.substr(0, 200), ": stalled, no data for ",
                     options.stall_timeout.count(), "ms (dead connection?)"));
  }
  if (options.max_duration.count() > 0 && now - started > options.max_duration) {
    return absl::DeadlineExceededError(
        absl::StrCat(request.method, " ", request.path.substr(0, 200),
                     ": exceeded its maximum duration; the server did not end it"));
  }
  return absl::OkStatus();
}

// How long to poll: at least once a second, and in time to notice a stall.
std::chrono::milliseconds PollWait(const StreamOptions& options,
                                   std::chrono::steady_clock::time_point last_data,
                                   std::chrono::steady_clock::time_point now) {
  auto wait = std::chrono::milliseconds(1000);
  if (options.stall_timeout.count() > 0) {
    const auto until_stall = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_data + options.stall_timeout - now);
    wait =
        std::clamp(until_stall + std::chrono::milliseconds(1), std::chrono::milliseconds(1), wait);
  }
  return wait;
}

int HttpVersionOf(CURL* curl) {
  long version = 0;
  curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &version);
  return version == CURL_HTTP_VERSION_2_0 ? 2 : 1;
}

}  // namespace

absl::StatusOr<HttpResponse> CurlTransport::Send(const HttpRequest& request) {
  CURL* curl = AcquireHandle();
  if (curl == nullptr) {
    return absl::ResourceExhaustedError("kube transport: curl_easy_init failed");
  }
  Exchange exchange;
  if (absl::Status s = Configure(curl, request, exchange); !s.ok()) {
    ReleaseHandle(curl);
    return s;
  }
  const CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) {
    absl::Status error =
        CurlError(code, exchange.error.data(), request, settings_.server, exchange.body_bytes);
    // The connection may be broken: do not return it to the pool.
    curl_easy_cleanup(curl);
    return error;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &exchange.response.status);
  exchange.response.http_version = HttpVersionOf(curl);
  ReleaseHandle(curl);
  return std::move(exchange.response);
}

absl::StatusOr<HttpResponse> CurlTransport::Stream(const HttpRequest& request,
                                                   const StreamOptions& options,
                                                   const StreamDataHandler& on_data,
                                                   std::stop_token stop) {
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(),
                                                              curl_multi_cleanup);
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), curl_easy_cleanup);
  if (!multi || !easy) {
    return absl::ResourceExhaustedError("kube transport: curl handle allocation failed");
  }
  Exchange exchange;
  exchange.on_data = &on_data;
  if (absl::Status s = Configure(easy.get(), request, exchange); !s.ok()) {
    return s;
  }
  curl_multi_add_handle(multi.get(), easy.get());
  const auto started = clock_.MonotonicNow();
  absl::Status outcome = absl::OkStatus();
  CURLcode done_code = CURLE_OK;
  bool done = false;
  {
    // Wakes curl_multi_poll when a stop is requested; destroyed before the handles.
    std::stop_callback wake(stop, [m = multi.get()] { curl_multi_wakeup(m); });
    while (true) {
      int running = 0;
      const CURLMcode mc = curl_multi_perform(multi.get(), &running);
      if (mc != CURLM_OK) {
        outcome = absl::InternalError(
            absl::StrCat("kube transport: curl_multi_perform: ", curl_multi_strerror(mc)));
        break;
      }
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
        if (msg->msg == CURLMSG_DONE) {
          done = true;
          done_code = msg->data.result;
        }
      }
      if (done || running == 0) {
        done = true;
        break;
      }
      if (stop.stop_requested()) {
        outcome =
            absl::CancelledError(absl::StrCat("WATCH ", request.path.substr(0, 200), ": stopped"));
        break;
      }
      const auto now = clock_.MonotonicNow();
      outcome = CheckStreamDeadlines(request, options, started, exchange.last_data, now);
      if (!outcome.ok()) {
        break;
      }
      const auto wait = PollWait(options, exchange.last_data, now);
      curl_multi_poll(multi.get(), nullptr, 0, static_cast<int>(wait.count()), nullptr);
    }
  }
  curl_multi_remove_handle(multi.get(), easy.get());
  if (!outcome.ok()) {
    return outcome;
  }
  if (done && done_code != CURLE_OK &&
      !(done_code == CURLE_WRITE_ERROR && exchange.stopped_by_handler)) {
    return CurlError(done_code, exchange.error.data(), request, settings_.server,
                     exchange.body_bytes);
  }
  if (!exchange.status_known) {
    curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &exchange.response.status);
  }
  exchange.response.http_version = HttpVersionOf(easy.get());
  return std::move(exchange.response);
}

}  // namespace mmi::kube::internal
