#include "libs/common/log.h"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace mmi::log {
namespace {

struct GlobalState {
  absl::Mutex mu;
  std::string service ABSL_GUARDED_BY(mu) = "mmi";
  std::ostream* out ABSL_GUARDED_BY(mu) = nullptr;  // nullptr: stdout via stdio
};

GlobalState& State() {
  static GlobalState* state = new GlobalState();  // never destroyed: logging works during exit
  return *state;
}

std::atomic<int> g_min_level{static_cast<int>(Level::kInfo)};

void AppendTimestamp(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::time_point_cast<std::chrono::seconds>(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now - secs).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06" PRId64 "Z",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, static_cast<int64_t>(micros));
  out.push_back('"');
  out.append(buf, static_cast<size_t>(n));
  out.push_back('"');
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    return 1;
  }
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) {
    return 0;
  }
  uint32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t len = Utf8SequenceLength(text, i);
      if (len == 0) {
        out.append("\\ufffd");
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out.append(buf);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

absl::StatusOr<Level> ParseLevel(std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(std::string(text));
  if (lower == "debug") {
    return Level::kDebug;
  }
  if (lower == "info") {
    return Level::kInfo;
  }
  if (lower == "warn" || lower == "warning") {
    return Level::kWarn;
  }
  if (lower == "error") {
    return Level::kError;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level '", std::string(text), "': use debug, info, warn or error"));
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

Field::Field(std::string_view key, std::string_view value) : key_(key) {
  AppendJsonString(json_value_, value);
}
Field::Field(std::string_view key, int64_t value) : key_(key), json_value_(absl::StrCat(value)) {}
Field::Field(std::string_view key, uint64_t value) : key_(key), json_value_(absl::StrCat(value)) {}
Field::Field(std::string_view key, double value) : key_(key) {
  json_value_ = std::isfinite(value) ? absl::StrCat(value) : "null";
}
Field::Field(std::string_view key, bool value) : key_(key), json_value_(value ? "true" : "false") {}

void SetServiceName(std::string_view service) {
  GlobalState& state = State();
  absl::MutexLock lock(&state.mu);
  state.service = std::string(service);
}

void SetMinLevel(Level level) { g_min_level.store(static_cast<int>(level)); }
Level MinLevel() { return static_cast<Level>(g_min_level.load()); }

void SetOutputForTest(std::ostream* out) {
  GlobalState& state = State();
  absl::MutexLock lock(&state.mu);
  state.out = out;
}

void Logger::Log(Level level, std::string_view msg, Fields fields) const {
  if (!Enabled(level)) {
    return;
  }
  std::string line;
  line.reserve(160 + msg.size());
  line.append("{\"ts\":");
  AppendTimestamp(line);
  line.append(",\"level\":\"");
  line.append(LevelName(level));
  line.append("\",\"service\":");
  GlobalState& state = State();
  absl::MutexLock lock(&state.mu);
  AppendJsonString(line, state.service);
  line.append(",\"component\":");
  AppendJsonString(line, component_);
  line.append(",\"msg\":");
  AppendJsonString(line, msg);
  for (const Field& f : fields) {
    line.push_back(',');
    AppendJsonString(line, f.key());
    line.push_back(':');
    line.append(f.json_value());
  }
  line.append("}\n");
  if (state.out != nullptr) {
    *state.out << line;
    state.out->flush();
  } else {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace mmi::log
