// Wiring for the fleet-sim binary: flags (fleet_sim_flags.h) -> settings -> transport, simulator
// and admin server; runs until SIGINT/SIGTERM or --duration. The only place that names the concrete
// transports.
#pragma once

#include "tools/fleet-sim/fleet_sim_flags.h"

namespace mmi::fleet_sim {

// The process entry point: returns the exit code.
int FleetSimMain(int argc, char** argv);

}  // namespace mmi::fleet_sim
