#include "libs/transport/client_id.h"

#include <random>

namespace mmi::transport {

std::string RandomHex(int digits) {
  std::random_device device;
  std::uniform_int_distribution<int> nibble(0, 15);
  std::string out;
  for (int i = 0; i < digits; ++i) {
    out.push_back("0123456789abcdef"[nibble(device)]);
  }
  return out;
}

}  // namespace mmi::transport
