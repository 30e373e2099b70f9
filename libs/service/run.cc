#include "libs/service/run.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace mmi::service {
namespace {

sigset_t ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

void BlockShutdownSignals() {
  const sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

std::optional<int> ExitCodeForSettings(const absl::Status& status, const log::Logger& log) {
  if (status.ok()) {
    return std::nullopt;
  }
  if (absl::IsCancelled(status)) {
    std::fputs(std::string(status.message()).c_str(), stdout);
    std::fputs("\n", stdout);
    return 0;
  }
  log.Error("invalid configuration", {{"error", std::string(status.message())}});
  return 2;
}

void ApplyLogLevel(const std::string& log_level) {
  if (auto level = log::ParseLevel(log_level); level.ok()) {
    log::SetMinLevel(*level);
  }
}

int RunUntilStopped(const log::Logger& log, const Lifecycle& app) {
  if (absl::Status s = app.start(); !s.ok()) {
    log.Error("start-up failed", {{"error", std::string(s.message())}});
    app.stop();
    return 1;
  }
  const sigset_t signals = ShutdownSignals();
  std::atomic<bool> done{false};
  std::atomic<bool> signalled{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    signalled.store(true);
    if (!done.load()) {
      log.Info("signal received; shutting down", {{"signal", sig}});
    }
    app.request_stop();
  });
  const int code = app.wait();
  done.store(true);
  app.stop();
  if (!signalled.load()) {
    kill(getpid(), SIGTERM);  // wakes the signal thread (the signal is blocked everywhere)
  }
  signal_thread.join();
  return code;
}

}  // namespace mmi::service
