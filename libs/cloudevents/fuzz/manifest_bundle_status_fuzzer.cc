// libFuzzer target: DecodeManifestBundleStatus (and the status hash) on arbitrary bytes.
// Accepted payloads must re-encode, and encoding must be idempotent after one decode (the first
// encode normalises condition times to whole seconds).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/status_hash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::cloudevents;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto status =
      DecodeManifestBundleStatus(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!status.ok()) {
    fuzz::CheckDecodeError(status.status());
    return 0;
  }
  fuzz::Check(StatusHash(*status).ok(), "status hash of a decoded status failed");
  auto first = EncodeManifestBundleStatus(*status);
  fuzz::Check(first.ok(), "a decoded status does not re-encode");
  auto decoded = DecodeManifestBundleStatus(*first);
  fuzz::Check(decoded.ok(), "re-encoded status does not decode");
  auto second = EncodeManifestBundleStatus(*decoded);
  fuzz::Check(second.ok() && *second == *first, "status encoding is not idempotent");
  fuzz::Check(StatusHash(*decoded).ok() && *StatusHash(*decoded) == *StatusHash(*status),
              "status hash changed across a round trip");
  return 0;
}
