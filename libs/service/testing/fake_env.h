// A fixed environment for settings tests (target mmi::service_testing, test-only).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "libs/service/settings.h"

namespace mmi::service::testing {

// An EnvLookup that answers from `values` (unset for every other name).
inline EnvLookup FakeEnv(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

}  // namespace mmi::service::testing
