#include "libs/metrics/admin_server.h"

#include <CivetServer.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"

namespace mmi::metrics {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("metrics.admin_server");
  return logger;
}

void Reply(mg_connection* conn, int code, std::string_view content_type, const std::string& body) {
  const char* reason = code == 200 ? "OK" : (code == 503 ? "Service Unavailable" : "Error");
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %.*s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            code, reason, static_cast<int>(content_type.size()), content_type.data(), body.size());
  mg_write(conn, body.data(), body.size());
}

class ChecksHandler : public CivetHandler {
 public:
  explicit ChecksHandler(const std::vector<std::pair<std::string, HealthCheck>>* checks)
      : checks_(checks) {}
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    auto [ok, body] = RunChecks(*checks_);
    Reply(conn, ok ? 200 : 503, "text/plain; charset=utf-8", body);
    return true;
  }

 private:
  const std::vector<std::pair<std::string, HealthCheck>>* checks_;
};

class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::shared_ptr<prometheus::Registry> registry)
      : registry_(std::move(registry)) {}
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    const prometheus::TextSerializer serializer;
    const std::string body = serializer.Serialize(registry_->Collect());
    Reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", body);
    return true;
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
};

}  // namespace

std::pair<bool, std::string> RunChecks(
    const std::vector<std::pair<std::string, HealthCheck>>& checks) {
  bool all_ok = true;
  std::string body;
  for (const auto& [name, check] : checks) {
    const absl::Status status = check();
    if (status.ok()) {
      absl::StrAppend(&body, "[+]", name, " ok\n");
    } else {
      all_ok = false;
      absl::StrAppend(&body, "[-]", name, " failed: ", std::string(status.message()), "\n");
    }
  }
  if (all_ok) {
    body = checks.empty() ? "ok\n" : body + "ok\n";
  }
  return {all_ok, body};
}

class AdminServer::Impl {
 public:
  Impl(AdminServerSettings settings, std::shared_ptr<prometheus::Registry> registry)
      : settings_(std::move(settings)), metrics_(std::move(registry)) {}

  AdminServerSettings settings_;
  MetricsHandler metrics_;
  std::vector<std::pair<std::string, HealthCheck>> liveness_;
  std::vector<std::pair<std::string, HealthCheck>> readiness_;
  ChecksHandler healthz_{&liveness_};
  ChecksHandler readyz_{&readiness_};
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

AdminServer::AdminServer(AdminServerSettings settings,
                         std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(settings), std::move(registry))) {}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::AddLivenessCheck(std::string name, HealthCheck check) {
  impl_->liveness_.emplace_back(std::move(name), std::move(check));
}

void AdminServer::AddReadinessCheck(std::string name, HealthCheck check) {
  impl_->readiness_.emplace_back(std::move(name), std::move(check));
}

absl::Status AdminServer::Start() {
  if (impl_->server_) {
    return absl::OkStatus();
  }
  const std::vector<std::string> options = {
      "listening_ports",
      impl_->settings_.listen_address,
      "num_threads",
      std::to_string(impl_->settings_.threads),
  };
  try {
    impl_->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("admin server cannot listen on ",
                                               impl_->settings_.listen_address, ": ", e.what(),
                                               " (is the port in use?)"));
  }
  impl_->server_->addHandler("/metrics", impl_->metrics_);
  impl_->server_->addHandler("/healthz", impl_->healthz_);
  impl_->server_->addHandler("/readyz", impl_->readyz_);
  const auto ports = impl_->server_->getListeningPorts();
  impl_->port_ = ports.empty() ? 0 : ports.front();
  Log().Info("admin server listening",
             {{"address", impl_->settings_.listen_address}, {"port", impl_->port_}});
  return absl::OkStatus();
}

void AdminServer::Stop() {
  if (impl_ && impl_->server_) {
    impl_->server_->close();
    impl_->server_.reset();
  }
}

int AdminServer::port() const { return impl_->port_; }

}  // namespace mmi::metrics
