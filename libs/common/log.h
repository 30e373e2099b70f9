// The logging facade: one JSON object per line on stdout, with `ts`, `level`, `service`,
// `component`, `msg` and context keys (`cluster`, `resource`, `event_id`, `transport`, ...).
//
// One idiom everywhere: each .cc that logs has one accessor, Log(), in its anonymous namespace
// and logs through it (classes too: no Logger members).
//
//   const log::Logger& Log() {
//     static const log::Logger logger("transport.mqtt");
//     return logger;
//   }
//   ...
//   Log().Info("connected", {{"broker", host}, {"attempt", 3}});
//
// Never log secrets or event payloads. Levels: error = a human must act; warn = handled but
// degraded (pair it with a metric); info = lifecycle and state changes; debug = per event.
// Thread-safe: lines from concurrent threads never interleave.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mmi::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

absl::StatusOr<Level> ParseLevel(std::string_view text);
std::string_view LevelName(Level level);

// One context key. Values keep their JSON type (string, integer, floating point, boolean).
class Field {
 public:
  Field(std::string_view key, std::string_view value);
  Field(std::string_view key, const char* value) : Field(key, std::string_view(value)) {}
  Field(std::string_view key, const std::string& value) : Field(key, std::string_view(value)) {}
  Field(std::string_view key, int64_t value);
  Field(std::string_view key, int value) : Field(key, static_cast<int64_t>(value)) {}
  Field(std::string_view key, uint64_t value);
  Field(std::string_view key, double value);
  Field(std::string_view key, bool value);

  std::string_view key() const { return key_; }
  // The value already encoded as JSON.
  const std::string& json_value() const { return json_value_; }

 private:
  std::string_view key_;
  std::string json_value_;
};

using Fields = std::initializer_list<Field>;

// Process-wide settings, set once by *_app.cc at start-up.
void SetServiceName(std::string_view service);
void SetMinLevel(Level level);
Level MinLevel();
// Redirects output (tests); nullptr restores stdout. The stream must outlive its use.
void SetOutputForTest(std::ostream* out);

class Logger {
 public:
  explicit Logger(std::string component) : component_(std::move(component)) {}

  bool Enabled(Level level) const { return level >= MinLevel(); }
  void Log(Level level, std::string_view msg, Fields fields = {}) const;
  void Debug(std::string_view msg, Fields fields = {}) const { Log(Level::kDebug, msg, fields); }
  void Info(std::string_view msg, Fields fields = {}) const { Log(Level::kInfo, msg, fields); }
  void Warn(std::string_view msg, Fields fields = {}) const { Log(Level::kWarn, msg, fields); }
  void Error(std::string_view msg, Fields fields = {}) const { Log(Level::kError, msg, fields); }

  const std::string& component() const { return component_; }

 private:
  std::string component_;
};

// Appends `text` to `out` as a JSON string literal (with quotes). Invalid UTF-8 bytes are
// replaced by U+FFFD so a hostile name can never break a log line.
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace mmi::log
