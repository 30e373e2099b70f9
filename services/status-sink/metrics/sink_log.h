// The status sink's logger (component "status_sink"), shared by the Sink and its collaborators so
// that their lines read as one component's. Thread-safe.
#pragma once

#include "libs/common/log.h"

namespace mmi::status_sink {

const log::Logger& SinkLog();

}  // namespace mmi::status_sink
