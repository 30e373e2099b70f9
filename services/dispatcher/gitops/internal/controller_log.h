// The logger the GitOpsCluster controller and its collaborators share (component
// "dispatcher.gitopscluster"). Internal to services/dispatcher/gitops.
#pragma once

#include "libs/common/log.h"

namespace mmi::dispatcher::internal {

inline const log::Logger& GitOpsClusterLog() {
  static const log::Logger logger("dispatcher.gitopscluster");
  return logger;
}

}  // namespace mmi::dispatcher::internal
