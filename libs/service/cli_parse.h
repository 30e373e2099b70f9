// Parsing a CLI11 command line into a Status, for every binary of the repository (both services
// and tools/fleet-sim). Its own small target, mmi::service_cli, so that a tool need not link the
// services' wiring.
#pragma once

#include <CLI/CLI.hpp>

#include "absl/status/status.h"

namespace mmi::service {

// Parses the command line: kCancelled with the help text for --help, kInvalidArgument
// ("flags: ...") for a bad command line.
absl::Status ParseFlags(CLI::App& cli, int argc, const char* const* argv);

}  // namespace mmi::service
