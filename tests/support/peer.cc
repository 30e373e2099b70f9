#include "tests/support/peer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mmi::testing {
namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string CurrentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) {
    return "no-test";
  }
  std::string name = absl::StrCat(info->test_suite_name(), ".", info->name());
  for (char& c : name) {
    if (c == '/') {
      c = '_';
    }
  }
  return name;
}

// True when the running test failed or, outside a test (a peer shared by a suite and stopped at
// exit, or a bench), when any test of the run failed.
bool CurrentTestFailed() {
  const auto* unit = ::testing::UnitTest::GetInstance();
  const auto* info = unit->current_test_info();
  return (info != nullptr && info->result()->Failed()) || unit->Failed();
}

std::string Tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() > max_bytes) {
    all = all.substr(all.size() - max_bytes);
  }
  return all;
}

}  // namespace

std::string PeersBinDir() { return std::string(MMI_SOURCE_DIR) + "/tests/peers/bin"; }
std::string PeerDataRoot() { return std::string(MMI_BINARY_DIR) + "/peer-data"; }

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  const std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    result.output.append(buf.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

absl::StatusOr<std::unique_ptr<PeerProcess>> PeerProcess::Start(
    const std::string& name, const std::vector<std::string>& args) {
  static std::atomic<int> counter{0};
  const std::string dir = absl::StrCat(PeerDataRoot(), "/", CurrentTestName(), "/", name, "-",
                                       getpid(), "-", counter.fetch_add(1));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create peer directory ", dir, ": ", ec.message()));
  }
  std::string command =
      ShellQuote(absl::StrCat(PeersBinDir(), "/start-", name)) + " " + ShellQuote(dir);
  for (const auto& a : args) {
    command += " " + ShellQuote(a);
  }
  const std::string start_log = dir + ".start.log";
  command += " > " + ShellQuote(start_log) + " 2>&1";
  std::cerr << "[peer] starting " << name << " in " << dir << std::endl;
  const CommandResult result = RunCommand(command);
  if (result.exit_code != 0) {
    // The start script stops whatever it started before failing; make sure of it.
    RunCommand(ShellQuote(PeersBinDir() + "/stop") + " " + ShellQuote(dir));
    return absl::UnavailableError(absl::StrCat("peer '", name, "' failed to start (exit ",
                                               result.exit_code, "); log ", start_log, ":\n",
                                               Tail(start_log, 6000)));
  }
  std::map<std::string, std::string> env;
  std::ifstream in(dir + "/env");
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (env.empty()) {
    RunCommand(ShellQuote(PeersBinDir() + "/stop") + " " + ShellQuote(dir));
    return absl::InternalError(
        absl::StrCat("peer '", name, "' wrote no connection facts to ", dir, "/env"));
  }
  return std::unique_ptr<PeerProcess>(new PeerProcess(name, dir, std::move(env)));
}

PeerProcess::PeerProcess(std::string name, std::string data_dir,
                         std::map<std::string, std::string> env)
    : name_(std::move(name)), data_dir_(std::move(data_dir)), env_(std::move(env)) {}

PeerProcess::~PeerProcess() {
  Stop();
  if (CurrentTestFailed()) {
    std::cerr << "[peer] test failed: keeping " << name_ << " logs in " << data_dir_ << "/logs"
              << std::endl;
  } else {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }
}

const std::string& PeerProcess::Get(const std::string& key) const {
  auto it = env_.find(key);
  if (it == env_.end()) {
    std::cerr << "[peer] BUG: start-" << name_ << " did not emit " << key << std::endl;
    std::abort();
  }
  return it->second;
}

void PeerProcess::Stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  RunCommand(ShellQuote(PeersBinDir() + "/stop") + " " + ShellQuote(data_dir_));
}

}  // namespace mmi::testing
