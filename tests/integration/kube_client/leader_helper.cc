// A leader-election candidate in its own process, for kube_client_test: campaigns on a Lease with
// HttpKubeClient + LeaderElector and prints one line per transition to stdout:
//   started-leading <identity>
//   stopped-leading <identity>
// SIGTERM stops it gracefully (the lease is released); SIGKILL simulates a crash.
//
//   kube_leader_helper <kubeconfig> <namespace> <lease-name> <identity> <lease-ms> <renew-ms>
//                      <retry-ms>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/leader_elector.h"
#include "libs/kube/rest_config.h"

namespace {

std::atomic<bool> g_terminate{false};

void OnSignal(int) { g_terminate.store(true); }

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: %s <kubeconfig> <namespace> <lease> <identity> <lease-ms> <renew-ms> "
                 "<retry-ms>\n",
                 argv[0]);
    return 2;
  }
  mmi::log::SetMinLevel(mmi::log::Level::kWarn);
  auto rest = mmi::kube::LoadKubeconfigFiles({argv[1]});
  if (!rest.ok()) {
    std::fprintf(stderr, "%s\n", std::string(rest.status().message()).c_str());
    return 1;
  }
  mmi::kube::HttpKubeClientSettings settings;
  settings.rest = *rest;
  settings.rate_limit.qps = 0;
  settings.retry.max_retries = 1;  // a renew stuck in retries would miss its deadline
  settings.request_timeout = std::chrono::milliseconds(std::atoi(argv[7]));
  auto client = mmi::kube::HttpKubeClient::Create(settings, mmi::RealClock::Instance(),
                                                  mmi::RealSleeper::Instance(), nullptr);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  mmi::kube::LeaderElectionSettings election;
  election.lease_namespace = argv[2];
  election.lease_name = argv[3];
  election.identity = argv[4];
  election.lease_duration = std::chrono::milliseconds(std::atoi(argv[5]));
  election.renew_deadline = std::chrono::milliseconds(std::atoi(argv[6]));
  election.retry_period = std::chrono::milliseconds(std::atoi(argv[7]));
  const std::string identity = election.identity;
  mmi::kube::LeaderElector elector(**client, mmi::RealClock::Instance(), election,
                                   {[&] { Say("started-leading " + identity); },
                                    [&] { Say("stopped-leading " + identity); }, nullptr});
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  if (auto s = elector.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  Say("candidate " + identity);
  while (!g_terminate.load()) {
    usleep(20'000);
  }
  elector.Stop();
  Say("exited " + identity);
  return 0;
}
