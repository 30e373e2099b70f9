#include "libs/cloudevents/resource_id.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"

namespace mmi::cloudevents {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

bool IsDashPosition(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

}  // namespace

std::string FormatUuid(const Uuid& uuid) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    out.push_back(kHex[uuid[i] >> 4]);
    out.push_back(kHex[uuid[i] & 0xF]);
  }
  return out;
}

absl::StatusOr<Uuid> ParseUuid(std::string_view text) {
  Uuid uuid{};
  bool ok = text.size() == 36;
  std::size_t byte = 0;
  for (std::size_t i = 0; ok && i < text.size();) {
    if (IsDashPosition(i)) {
      ok = text[i] == '-';
      ++i;
      continue;
    }
    const int high = HexValue(text[i]);
    const int low = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
    ok = high >= 0 && low >= 0 && !IsDashPosition(i + 1);
    if (ok) {
      uuid[byte++] = static_cast<std::uint8_t>(high << 4 | low);
    }
    i += 2;
  }
  if (!ok || byte != uuid.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a UUID (want 8-4-4-4-12 hex digits): ", internal::Quote(text)));
  }
  return uuid;
}

Uuid UuidV5(const Uuid& name_space, std::string_view name) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, name_space.data(), name_space.size()) == 1 &&
                  EVP_DigestUpdate(ctx, name.data(), name.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest.data(), &length) == 1 && length >= 16;
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    std::abort();  // SHA-1 over memory cannot fail unless OpenSSL is broken.
  }
  Uuid uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    uuid[i] = digest[i];
  }
  uuid[6] = static_cast<std::uint8_t>((uuid[6] & 0x0F) | 0x50);  // version 5
  uuid[8] = static_cast<std::uint8_t>((uuid[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return uuid;
}

std::string WorkResourceId(std::string_view source_id, std::string_view consumer_name,
                           std::string_view work_name) {
  const std::string name =
      absl::StrCat(std::string(source_id), "-", std::string(kManifestWorksResource), "-",
                   std::string(consumer_name), "-", std::string(work_name));
  return FormatUuid(UuidV5(kOidNamespace, name));
}

std::string NewUuidV4() {
  Uuid uuid{};
  if (RAND_bytes(uuid.data(), static_cast<int>(uuid.size())) != 1) {
    std::abort();  // No entropy: nothing sensible can continue.
  }
  uuid[6] = static_cast<std::uint8_t>((uuid[6] & 0x0F) | 0x40);
  uuid[8] = static_cast<std::uint8_t>((uuid[8] & 0x3F) | 0x80);
  return FormatUuid(uuid);
}

}  // namespace mmi::cloudevents
