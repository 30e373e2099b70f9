// The dispatcher binary: everything lives in mmi::dispatcher_lib (dispatcher_app.cc).
#include "services/dispatcher/dispatcher_app.h"

int main(int argc, char** argv) { return mmi::dispatcher::DispatcherMain(argc, argv); }
