#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {

const log::Logger& SinkLog() {
  static const log::Logger logger("status_sink");
  return logger;
}

}  // namespace mmi::status_sink
