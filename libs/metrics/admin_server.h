// The admin HTTP endpoint each service exposes: `/metrics` (Prometheus text format from an
// injected registry), `/healthz` (liveness) and `/readyz` (readiness), backed by named checks.
//
// Lifecycle: construct, register checks, Start(), ..., Stop() (idempotent; also on destruction).
// Thread safety: checks may be added before Start() only; Start()/Stop() from one thread.
// Checks run on civetweb's worker threads, so they must be cheap and thread-safe (read an atomic
// or a guarded snapshot; never do I/O in a check).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::metrics {

struct AdminServerSettings {
  // host:port to listen on; port 0 picks a free port (see port()). Default: all interfaces, 8080.
  std::string listen_address = "0.0.0.0:8080";
  // Worker threads serving requests.
  int threads = 2;
};

// A check returns OK when healthy, otherwise a Status whose message is shown in the response.
using HealthCheck = std::function<absl::Status()>;

class AdminServer {
 public:
  AdminServer(AdminServerSettings settings, std::shared_ptr<prometheus::Registry> registry);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Liveness: the process is not wedged (a failing check makes Kubernetes restart the pod).
  void AddLivenessCheck(std::string name, HealthCheck check);
  // Readiness: the real dependencies (hub API, broker, database, leadership state) are usable.
  void AddReadinessCheck(std::string name, HealthCheck check);

  // Binds and serves. kUnavailable when the address cannot be bound.
  absl::Status Start();
  void Stop();
  // The bound port after Start() (useful with port 0).
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Renders the outcome of `checks` the way /healthz and /readyz answer: first element true when
// all pass; second the plain-text body (`ok` or one `[-]name failed: reason` line per failure,
// `[+]name ok` for the rest). Exposed for tests.
std::pair<bool, std::string> RunChecks(
    const std::vector<std::pair<std::string, HealthCheck>>& checks);

}  // namespace mmi::metrics
