// The logger the reconciler and its collaborators share (component "dispatcher.reconciler"), so
// one log stream tells the reconcile loop's story whichever class writes it. Internal to
// services/dispatcher/apps.
#pragma once

#include "libs/common/log.h"

namespace mmi::dispatcher::internal {

inline const log::Logger& ReconcilerLog() {
  static const log::Logger logger("dispatcher.reconciler");
  return logger;
}

}  // namespace mmi::dispatcher::internal
