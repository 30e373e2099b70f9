// The loggers of libs/kube, one per component name, each shared by the files of its component
// so that its log lines carry one `component` whatever file wrote them.
#pragma once

#include "libs/common/log.h"

namespace mmi::kube::internal {

// "kube.client": HttpKubeClient, its transport, token source and request metrics.
const log::Logger& ClientLog();
// "kube.informer": Informer and its cache.
const log::Logger& InformerLog();

}  // namespace mmi::kube::internal
