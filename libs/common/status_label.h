#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace mmi {

// A metric label for the status codes our peers answer with: the code's name in snake case
// ("ok", "unavailable", "deadline_exceeded", ...), "other" for the codes no caller tells apart.
// Callers that give a code a meaning of their own (a render error, an unknown consumer) check it
// first and fall back to this.
std::string_view StatusCodeLabel(absl::StatusCode code);

}  // namespace mmi
