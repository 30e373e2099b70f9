// The fleet-sim binary: everything lives in mmi::fleet_sim_lib (fleet_sim_app.cc).
#include "tools/fleet-sim/fleet_sim_app.h"

int main(int argc, char** argv) { return mmi::fleet_sim::FleetSimMain(argc, argv); }
