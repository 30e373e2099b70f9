// The command line both services share: flags override the config file and the environment.
// Each service adds its own flags to the same CLI::App.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/common/config.h"
#include "libs/service/cli_parse.h"  // ParseFlags
#include "libs/service/settings.h"

namespace mmi::service {

// --config, --kubeconfig, --context, --store-dsn, --admin-listen, --log-level, --leader-elect,
// --lease-namespace, --identity. Unset = keep what the file and the environment say.
struct CommonFlags {
  std::string config_path;
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  std::optional<std::string> store_dsn;
  std::optional<std::string> admin_listen;
  std::optional<std::string> log_level;
  std::optional<bool> leader_elect;
  std::optional<std::string> lease_namespace;
  std::optional<std::string> identity;
};

// Adds the flags above to `cli`; `flags` must outlive the parse.
void AddCommonFlags(CLI::App& cli, CommonFlags& flags);

// Applies the flags that were given.
void ApplyCommonFlags(const CommonFlags& flags, HubSettings& hub, StoreSettings& store,
                      LeaderSettings& leader, std::string& admin_listen, std::string& log_level);

// The settings of the --config file at `path` parsed with `parse` (the defaults when `path` is
// empty). kInvalidArgument naming the file.
template <typename Settings>
absl::StatusOr<Settings> LoadConfigFile(const std::string& path,
                                        absl::StatusOr<Settings> (*parse)(std::string_view)) {
  if (path.empty()) {
    return Settings{};
  }
  auto text = config::ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError("--config " + path + ": " +
                                      std::string(text.status().message()));
  }
  auto parsed = parse(*text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(path + ": " + std::string(parsed.status().message()));
  }
  return parsed;
}

}  // namespace mmi::service
