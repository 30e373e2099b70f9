// Test support: real peers (kube-apiserver, PostgreSQL, mosquitto, Maestro, Kafka, Prometheus)
// started through the shell entry points in tests/peers/bin/ and stopped by PID.
//
// A PeerProcess runs `tests/peers/bin/start-<name> <data-dir> [KEY=VALUE...]`, which leaves the
// peer running in the background and writes its connection facts to <data-dir>/env. The data
// directory lives under the build tree (${CMAKE_BINARY_DIR}/peer-data/). Destruction stops every
// recorded PID; the directory and its logs are kept when the current test failed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

// Starts a peer inside a test body or fixture; fails the test loudly (never skips) when it
// cannot start. Usage: MMI_START_PEER(hub, "kube", {"ROLE=hub"});
#define MMI_START_PEER(var, ...)                                   \
  auto var##_or = ::mmi::testing::PeerProcess::Start(__VA_ARGS__); \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status();                 \
  std::unique_ptr<::mmi::testing::PeerProcess> var = std::move(*var##_or)

namespace mmi::testing {

class PeerProcess {
 public:
  // Starts peer `name`. `args` are passed through as KEY=VALUE arguments. Returns kUnavailable
  // with the script's stderr tail when the peer cannot start.
  static absl::StatusOr<std::unique_ptr<PeerProcess>> Start(
      const std::string& name, const std::vector<std::string>& args = {});
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // A connection fact from <data-dir>/env. Aborts the test binary when `key` is missing: a
  // missing key is a bug in the start script.
  const std::string& Get(const std::string& key) const;
  bool Has(const std::string& key) const { return env_.count(key) > 0; }
  const std::map<std::string, std::string>& env() const { return env_; }
  const std::string& data_dir() const { return data_dir_; }

  // Stops the peer's processes now (idempotent).
  void Stop();

 private:
  PeerProcess(std::string name, std::string data_dir, std::map<std::string, std::string> env);

  std::string name_;
  std::string data_dir_;
  std::map<std::string, std::string> env_;
  bool stopped_ = false;
};

// Runs a shell command (through /bin/sh -c), returns its exit status and captures stdout.
struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};
CommandResult RunCommand(const std::string& command);

// The repository's tests/peers/bin directory and the build tree's peer-data root.
std::string PeersBinDir();
std::string PeerDataRoot();

}  // namespace mmi::testing
