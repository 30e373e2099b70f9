#include "libs/common/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace mmi::config {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read at start-up only
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("file not found: ", path));
    }
    if (err == EACCES) {
      return absl::PermissionDeniedError(absl::StrCat("cannot read ", path, ": permission denied"));
    }
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    return absl::InternalError(absl::StrCat("error reading ", path));
  }
  return buf.str();
}

absl::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration '", std::string(text),
                                                   "': ", std::string(why),
                                                   " (examples: 500ms, 10s, 5m, 1h30m)"));
  };
  if (text.empty()) {
    return invalid("empty");
  }
  if (text == "0") {
    return std::chrono::milliseconds(0);
  }
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (start == i) {
      return invalid("expected a number");
    }
    const std::string number(text.substr(start, i - start));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) {
      return invalid("bad number");
    }
    start = i;
    while (i < text.size() && absl::ascii_isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    const std::string_view unit = text.substr(start, i - start);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else {
      return invalid(unit.empty() ? "missing unit" : "unknown unit");
    }
    total_ms += value * scale;
  }
  if (total_ms > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
    return invalid("too large");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total_ms));
}

absl::StatusOr<bool> ParseBool(std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(std::string(text));
  if (lower == "true" || lower == "1" || lower == "yes") {
    return true;
  }
  if (lower == "false" || lower == "0" || lower == "no") {
    return false;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid boolean '", std::string(text), "': use true or false"));
}

}  // namespace mmi::config
