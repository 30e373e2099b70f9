#include "tools/fleet-sim/status_feedback.h"

#include <cctype>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::FeedbackValue;
using cloudevents::FieldValue;
using cloudevents::FieldValueType;
using cloudevents::JsonPath;
using nlohmann::json;

// This Abseil's string_view is not std::string_view: convert at the calls.
absl::string_view Absl(std::string_view text) { return {text.data(), text.size()}; }

std::string_view Strip(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

bool ConsumePrefix(std::string_view* text, std::string_view prefix) {
  if (!text->starts_with(prefix)) {
    return false;
  }
  text->remove_prefix(prefix.size());
  return true;
}

bool ConsumeSuffix(std::string_view* text, std::string_view suffix) {
  if (!text->ends_with(suffix)) {
    return false;
  }
  text->remove_suffix(suffix.size());
  return true;
}

absl::Status BadPath(std::string_view path, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("JSONPath \"", Absl(path), "\": ", Absl(why)));
}

// Kubernetes JSONPath ends a member name at one of these; a backslash takes the next character
// as it is (`.metadata.annotations.a\.b/c` names the annotation "a.b/c").
bool IsTerminator(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '.' || c == ',' || c == '[' ||
         c == ']' || c == '@' || c == '{' || c == '}';
}

// The member name at the start of `rest`, its escapes resolved; consumes it.
std::string TakeMemberName(std::string_view& rest) {
  std::string name;
  std::size_t i = 0;
  for (; i < rest.size() && !IsTerminator(rest[i]); ++i) {
    if (rest[i] == '\\' && i + 1 < rest.size()) {
      ++i;
    }
    name.push_back(rest[i]);
  }
  rest.remove_prefix(i);
  return name;
}

// `.a.b` relative to `node`; nullptr when some member is missing.
const json* Member(const json& node, std::string_view dotted) {
  const json* current = &node;
  while (!dotted.empty()) {
    if (dotted.front() != '.') {
      return nullptr;
    }
    dotted.remove_prefix(1);
    const auto end = dotted.find('.');
    const std::string key(dotted.substr(0, end));
    dotted = end == std::string_view::npos ? std::string_view() : dotted.substr(end);
    if (!current->is_object()) {
      return nullptr;
    }
    auto it = current->find(key);
    if (it == current->end()) {
      return nullptr;
    }
    current = &*it;
  }
  return current;
}

// A filter literal: "x", 'x', a number, true, false.
absl::StatusOr<json> Literal(std::string_view text, std::string_view path) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    return json(std::string(text.substr(1, text.size() - 2)));
  }
  if (text == "true" || text == "false") {
    return json(text == "true");
  }
  if (std::int64_t integer = 0; absl::SimpleAtoi(Absl(text), &integer)) {
    return json(integer);
  }
  if (double number = 0; absl::SimpleAtod(Absl(text), &number)) {
    return json(number);
  }
  return BadPath(path, absl::StrCat("unsupported filter value ", Absl(text)));
}

// `[?(@.a.b==lit)]`, `[?(@.a!=lit)]` or `[?(@.a)]` applied to the elements of `node`.
absl::Status Filter(std::string_view expr, std::string_view path, const json& node,
                    std::vector<const json*>& out) {
  if (!node.is_array()) {
    return absl::OkStatus();
  }
  std::string_view member = expr;
  std::optional<json> want;
  bool negate = false;
  if (const auto op = expr.find("=="); op != std::string_view::npos) {
    member = expr.substr(0, op);
    auto literal = Literal(Strip(expr.substr(op + 2)), path);
    if (!literal.ok()) {
      return literal.status();
    }
    want = *std::move(literal);
  } else if (const auto ne = expr.find("!="); ne != std::string_view::npos) {
    member = expr.substr(0, ne);
    auto literal = Literal(Strip(expr.substr(ne + 2)), path);
    if (!literal.ok()) {
      return literal.status();
    }
    want = *std::move(literal);
    negate = true;
  }
  member = Strip(member);
  if (!ConsumePrefix(&member, "@")) {
    return BadPath(path, "a filter must start with @");
  }
  for (const json& element : node) {
    const json* value = Member(element, member);
    if (value == nullptr) {
      continue;
    }
    if (!want.has_value() || ((*value == *want) != negate)) {
      out.push_back(&element);
    }
  }
  return absl::OkStatus();
}

FieldValue ToFieldValue(const json& value) {
  FieldValue field;
  if (value.is_string()) {
    field.type = FieldValueType::kString;
    field.string = value.get<std::string>();
  } else if (value.is_number_integer()) {
    field.type = FieldValueType::kInteger;
    field.integer = value.get<std::int64_t>();
  } else if (value.is_boolean()) {
    field.type = FieldValueType::kBoolean;
    field.boolean = value.get<bool>();
  } else {
    field.type = FieldValueType::kJsonRaw;
    field.json_raw = value.dump();
    field.json_raw_value = value;
  }
  return field;
}

}  // namespace

absl::StatusOr<std::vector<json>> EvaluateJsonPath(const json& object, std::string_view path) {
  std::string_view rest = Strip(path);
  if (ConsumePrefix(&rest, "{") && !ConsumeSuffix(&rest, "}")) {
    return BadPath(path, "unbalanced braces");
  }
  ConsumePrefix(&rest, "$");
  std::vector<const json*> current = {&object};
  while (!rest.empty()) {
    std::vector<const json*> next;
    if (rest.front() == '.') {
      rest.remove_prefix(1);
      const std::string key = TakeMemberName(rest);
      if (key.empty()) {
        return BadPath(path, "empty member name");
      }
      for (const json* node : current) {
        if (node->is_object()) {
          if (auto it = node->find(key); it != node->end()) {
            next.push_back(&*it);
          }
        }
      }
    } else if (rest.front() == '[') {
      const bool filter = rest.starts_with("[?(");
      const auto close = filter ? rest.find(")]") : rest.find(']');
      if (close == std::string_view::npos) {
        return BadPath(path, "unclosed [");
      }
      const std::string_view inner = filter ? rest.substr(3, close - 3) : rest.substr(1, close - 1);
      rest.remove_prefix(close + (filter ? 2 : 1));
      std::int64_t index = 0;
      const bool star = !filter && inner == "*";
      const bool is_index = !filter && !star && absl::SimpleAtoi(Absl(inner), &index);
      if (!filter && !star && !is_index) {
        return BadPath(path, absl::StrCat("unsupported subscript [", Absl(inner), "]"));
      }
      for (const json* node : current) {
        if (filter) {
          if (absl::Status status = Filter(inner, path, *node, next); !status.ok()) {
            return status;
          }
        } else if (star) {
          if (node->is_array() || node->is_object()) {
            for (const json& element : *node) {
              next.push_back(&element);
            }
          }
        } else if (node->is_array()) {
          const auto size = static_cast<std::int64_t>(node->size());
          const std::int64_t at = index < 0 ? index + size : index;
          if (at >= 0 && at < size) {
            next.push_back(&(*node)[static_cast<std::size_t>(at)]);
          }
        }
      }
    } else {
      return BadPath(path, "expected . or [");
    }
    current = std::move(next);
  }
  std::vector<json> values;
  values.reserve(current.size());
  for (const json* node : current) {
    values.push_back(*node);
  }
  return values;
}

std::vector<JsonPath> WellKnownStatusPaths(std::string_view group, std::string_view version,
                                           std::string_view kind) {
  auto path = [](std::string name, std::string p) {
    return JsonPath{std::move(name), std::nullopt, std::move(p)};
  };
  if (group == "apps" && version == "v1" && kind == "Deployment") {
    return {path("ReadyReplicas", ".status.readyReplicas"), path("Replicas", ".status.replicas"),
            path("AvailableReplicas", ".status.availableReplicas")};
  }
  if (group == "batch" && version == "v1" && kind == "Job") {
    return {path("JobComplete", R"(.status.conditions[?(@.type=="Complete")].status)"),
            path("JobSucceeded", ".status.succeeded")};
  }
  if (group.empty() && version == "v1" && kind == "Pod") {
    return {path("PodReady", R"(.status.conditions[?(@.type=="Ready")].status)"),
            path("PodPhase", ".status.phase")};
  }
  return {};
}

FeedbackResult ReadFeedback(const std::vector<cloudevents::FeedbackRule>& rules, const json& live,
                            std::string_view group, std::string_view version, std::string_view kind,
                            std::size_t max_json_raw) {
  FeedbackResult result;
  std::vector<std::string> errors;
  for (const cloudevents::FeedbackRule& rule : rules) {
    std::vector<JsonPath> paths;
    if (rule.type == cloudevents::kFeedbackWellKnownStatus) {
      paths = WellKnownStatusPaths(group, version, kind);
      if (paths.empty()) {
        errors.push_back(absl::StrCat("cannot find the wellknown statuses for resource with gvk ",
                                      group.empty() ? "" : absl::StrCat(Absl(group), "/"),
                                      Absl(version), ", Kind=", Absl(kind)));
        continue;
      }
    } else if (rule.type == cloudevents::kFeedbackJsonPaths) {
      paths = rule.json_paths;
    } else {
      errors.push_back(absl::StrCat("unknown feedback rule type ", rule.type));
      continue;
    }
    for (const JsonPath& p : paths) {
      auto matches = EvaluateJsonPath(live, p.path);
      if (!matches.ok()) {
        errors.push_back(std::string(matches.status().message()));
        continue;
      }
      if (matches->empty()) {
        continue;
      }
      FieldValue value =
          matches->size() == 1 ? ToFieldValue(matches->front()) : ToFieldValue(json(*matches));
      if (value.type == FieldValueType::kJsonRaw && value.json_raw.size() > max_json_raw) {
        errors.push_back(absl::StrCat("the length of the value of ", p.name, " is ",
                                      value.json_raw.size(), ", exceeding the limit ",
                                      max_json_raw));
        continue;
      }
      result.values.push_back(FeedbackValue{p.name, std::move(value)});
    }
  }
  result.error = absl::StrJoin(errors, "; ");
  return result;
}

}  // namespace mmi::fleet_sim
