// main() of a service, the same for both: signals, settings outcome, start, wait, graceful stop.
//
//   int DispatcherMain(int argc, char** argv) {
//     return service::ServiceMain<DispatcherApp>("dispatcher", Log(), argc, argv, LoadSettings);
//   }
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/common/log.h"
#include "libs/service/settings.h"

namespace mmi::service {

// Blocks SIGTERM and SIGINT in the calling thread and so in every thread it starts later (one
// thread takes them with sigwait(), see RunUntilStopped), and ignores SIGPIPE. Call first in
// main(), before any thread starts.
void BlockShutdownSignals();

// What main() returns for the outcome of loading the settings: nullopt when they are usable;
// 0 after printing the `--help` text (kCancelled); 2 after logging an invalid configuration.
std::optional<int> ExitCodeForSettings(const absl::Status& status, const log::Logger& log);

// Applies `log_level` (already validated with the settings) to the logging facade.
void ApplyLogLevel(const std::string& log_level);

// The app's lifecycle, as RunUntilStopped drives it.
struct Lifecycle {
  std::function<absl::Status()> start;
  std::function<void()> request_stop;  // any thread; wakes `wait`
  std::function<int()> wait;           // blocks; returns the exit code
  std::function<void()> stop;          // graceful, idempotent
};

// Starts the app (on failure: logs, stops it, returns 1), then a signal thread that turns the
// first SIGTERM/SIGINT into request_stop(), waits, stops the app gracefully and returns wait()'s
// exit code. Needs BlockShutdownSignals() first.
int RunUntilStopped(const log::Logger& log, const Lifecycle& app);

// The whole of a service's main() after BlockShutdownSignals(): `App` is constructed from the
// settings and has Start(), RequestStop(), Wait() and Stop().
template <typename App, typename Settings>
int RunService(const log::Logger& log, absl::StatusOr<Settings> settings) {
  if (std::optional<int> code = ExitCodeForSettings(settings.status(), log)) {
    return *code;
  }
  ApplyLogLevel(settings->log_level);
  App app(*std::move(settings));
  return RunUntilStopped(log, {.start = [&app] { return app.Start(); },
                               .request_stop = [&app] { app.RequestStop(); },
                               .wait = [&app] { return app.Wait(); },
                               .stop = [&app] { app.Stop(); }});
}

// The whole of a service's main(): shutdown signals blocked before any thread starts, `service`
// on every log line, then RunService() with what `load(argc, argv, environment)` read.
template <typename App, typename Load>
int ServiceMain(std::string_view service, const log::Logger& log, int argc, char** argv,
                Load load) {
  BlockShutdownSignals();
  log::SetServiceName(service);
  return RunService<App>(log, load(argc, argv, ProcessEnvironment()));
}

}  // namespace mmi::service
