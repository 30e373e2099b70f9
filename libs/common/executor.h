// Executor: something that runs posted tasks. What a collaborator takes when all it needs is "run
// this elsewhere": mmi::Loop and mmi::WorkerPool (libs/common/loop.h) implement it, tests pass
// testing::InlineExecutor (libs/common/testing/inline_executor.h).
#pragma once

#include "absl/functional/any_invocable.h"

namespace mmi {

using Task = absl::AnyInvocable<void() &&>;

// Thread-safe.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` once, eventually (or, by the implementation's documented choice, drops it once
  // stopped).
  virtual void Post(Task task) = 0;
};

}  // namespace mmi
