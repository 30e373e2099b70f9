#include "libs/common/clock.h"

namespace mmi {

RealClock& RealClock::Instance() {
  static RealClock clock;
  return clock;
}

}  // namespace mmi
