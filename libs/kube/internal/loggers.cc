#include "libs/kube/internal/loggers.h"

namespace mmi::kube::internal {

const log::Logger& ClientLog() {
  static const log::Logger logger("kube.client");
  return logger;
}

const log::Logger& InformerLog() {
  static const log::Logger logger("kube.informer");
  return logger;
}

}  // namespace mmi::kube::internal
