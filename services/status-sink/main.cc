// The status-sink binary: everything lives in mmi::status_sink_lib (status_sink_app.cc).
#include "services/status-sink/status_sink_app.h"

int main(int argc, char** argv) { return mmi::status_sink::StatusSinkMain(argc, argv); }
