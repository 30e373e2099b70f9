#include "libs/argocd_repo/repo_credentials.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "libs/kube_object/object.h"

namespace mmi::argocd_repo {
namespace {

using nlohmann::json;

enum class Kind { kString, kBool, kInt };

// A data field Argo CD reads from a repository or repo-creds Secret. The Secret's key is also
// the Repository message's JSON name, except `url`, which becomes `repo`.
struct Field {
  std::string_view key;
  Kind kind;
  bool in_template;  // secretToRepoCred reads it too (else only secretToRepository does)
};

constexpr std::array<Field, 23> kFields = {{
    {"name", Kind::kString, false},
    {"username", Kind::kString, true},
    {"password", Kind::kString, true},
    {"bearerToken", Kind::kString, true},
    {"sshPrivateKey", Kind::kString, true},
    {"tlsClientCertData", Kind::kString, true},
    {"tlsClientCertKey", Kind::kString, true},
    {"type", Kind::kString, true},
    {"githubAppPrivateKey", Kind::kString, true},
    {"githubAppEnterpriseBaseUrl", Kind::kString, true},
    {"proxy", Kind::kString, true},
    {"noProxy", Kind::kString, true},
    {"project", Kind::kString, false},
    {"gcpServiceAccountKey", Kind::kString, true},
    {"insecureIgnoreHostKey", Kind::kBool, false},
    {"insecure", Kind::kBool, false},
    {"enableLfs", Kind::kBool, false},
    {"enableOCI", Kind::kBool, true},
    {"insecureOCIForceHttp", Kind::kBool, true},
    {"forceHttpBasicAuth", Kind::kBool, true},
    {"useAzureWorkloadIdentity", Kind::kBool, true},
    {"githubAppID", Kind::kInt, true},
    {"githubAppInstallationID", Kind::kInt, true},
}};

// What CopyCredentialsFrom fills only when the Repository has it empty (or 0) ...
constexpr std::array<std::string_view, 14> kFilledWhenEmpty = {"username",
                                                               "password",
                                                               "bearerToken",
                                                               "sshPrivateKey",
                                                               "tlsClientCertData",
                                                               "tlsClientCertKey",
                                                               "githubAppPrivateKey",
                                                               "githubAppID",
                                                               "githubAppInstallationID",
                                                               "githubAppEnterpriseBaseUrl",
                                                               "gcpServiceAccountKey",
                                                               "proxy",
                                                               "noProxy",
                                                               "type"};
// ... and what it takes from the template whatever the Repository had.
constexpr std::array<std::string_view, 4> kOverwritten = {
    "enableOCI", "insecureOCIForceHttp", "forceHttpBasicAuth", "useAzureWorkloadIdentity"};
// Repository.HasCredentials: any of these set means no template is consulted.
constexpr std::array<std::string_view, 7> kCredentialFields = {"username",
                                                               "password",
                                                               "bearerToken",
                                                               "sshPrivateKey",
                                                               "tlsClientCertData",
                                                               "githubAppPrivateKey",
                                                               "useAzureWorkloadIdentity"};

// Go's strconv.ParseBool.
std::optional<bool> GoParseBool(std::string_view text) {
  for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) {
      return true;
    }
  }
  for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) {
      return false;
    }
  }
  return std::nullopt;
}

// Go's strconv.ParseInt(text, 10, 64): an optional sign, then digits only.
std::optional<int64_t> GoParseInt(std::string_view text) {
  if (text.starts_with("+")) {
    text.remove_prefix(1);
    if (text.starts_with("-")) {
      return std::nullopt;
    }
  }
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

// Protobuf strings (and nlohmann::json's dump) need UTF-8; a key or token is text anyway.
bool IsUtf8(const std::string& text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

bool IsSet(const json& fields, std::string_view key) {
  auto it = fields.find(key);
  if (it == fields.end()) {
    return false;
  }
  return !(it->is_string() && it->get_ref<const std::string&>().empty()) &&
         !(it->is_boolean() && !it->get<bool>()) &&
         !(it->is_number_integer() && it->get<int64_t>() == 0);
}

struct Parsed {
  std::string url;
  std::string project;
  json fields = json::object();
};

// secretToRepository / secretToRepoCred: the fields of `data` that a Secret of this type carries.
// `url` is read first and kept even when another field fails, so the skipped Secret still names
// the repository it concerns.
absl::Status ParseData(const json& data, bool is_template, std::string_view secret_name,
                       Parsed& out) {
  auto error = [&](std::string_view field, std::string_view what) {
    std::string message = "Secret \"" + std::string(secret_name) + "\": data";
    if (!field.empty()) {
      message += "." + std::string(field);
    }
    return absl::InvalidArgumentError(message + ": " + std::string(what));
  };
  if (!data.is_object()) {
    return error("", absl::StrCat("want an object, got ", data.type_name()));
  }
  // The decoded value of data[key]; nullopt when absent.
  auto decode = [&](std::string_view key) -> absl::StatusOr<std::optional<std::string>> {
    auto it = data.find(key);
    if (it == data.end()) {
      return std::nullopt;
    }
    if (!it->is_string()) {
      return error(key, absl::StrCat("want a base64 string, got ", it->type_name()));
    }
    std::string value;
    if (!absl::Base64Unescape(it->get_ref<const std::string&>(), &value)) {
      return error(key, "not valid base64");
    }
    if (!IsUtf8(value)) {
      return error(key, "not UTF-8 text");
    }
    return value;
  };

  absl::StatusOr<std::optional<std::string>> url = decode("url");
  if (!url.ok()) {
    return url.status();
  }
  out.url = url->value_or("");
  for (const Field& field : kFields) {
    if (is_template && !field.in_template) {
      continue;
    }
    absl::StatusOr<std::optional<std::string>> value = decode(field.key);
    if (!value.ok()) {
      return value.status();
    }
    if (!value->has_value()) {
      continue;  // Go reads an absent field as "", false or 0
    }
    const std::string key(field.key);
    std::string& text = **value;
    switch (field.kind) {
      case Kind::kString:
        if (key == "project") {
          out.project = text;
        }
        if (!text.empty()) {
          out.fields[key] = std::move(text);
        }
        break;
      case Kind::kBool: {
        std::optional<bool> parsed = GoParseBool(text);
        if (!parsed) {
          return error(key, "not a boolean (true, false, 1, 0, t, f)");
        }
        if (*parsed) {
          out.fields[key] = true;
        }
        break;
      }
      case Kind::kInt: {
        std::optional<int64_t> parsed = GoParseInt(text);
        if (!parsed) {
          return error(key, "not a base-10 64-bit integer");
        }
        if (*parsed != 0) {
          out.fields[key] = *parsed;
        }
        break;
      }
    }
  }
  if (out.url.empty()) {
    return error("url", "missing or empty");
  }
  return absl::OkStatus();
}

// Repository.CopyCredentialsFrom(template).
void InheritFrom(const json& creds, json& repository) {
  for (std::string_view key : kFilledWhenEmpty) {
    if (!IsSet(repository, key) && IsSet(creds, key)) {
      repository[std::string(key)] = creds[std::string(key)];
    }
  }
  for (std::string_view key : kOverwritten) {
    if (IsSet(creds, key)) {
      repository[std::string(key)] = true;
    } else {
      repository.erase(std::string(key));
    }
  }
  repository["inheritedCreds"] = true;
}

bool HasCredentials(const json& repository) {
  for (std::string_view key : kCredentialFields) {
    if (IsSet(repository, key)) {
      return true;
    }
  }
  return false;
}

// The length of template prefix `prefix` (normalised) when it lends to `normalized_repo`, as
// getRepositoryCredentialIndex decides; 0 for none.
size_t PrefixMatch(std::string_view normalized_repo, std::string_view prefix) {
  if (prefix.empty() || !normalized_repo.starts_with(prefix)) {
    return 0;
  }
  return prefix.size();
}

// Go's regexp ^(ssh://)?([^/:]*?)@[^@]+$ (git.IsSSHURL): a user part without '/' or ':', then
// '@', then a non-empty rest without '@'.
bool IsSshUrl(std::string_view url) {
  if (url.starts_with("ssh://")) {
    url.remove_prefix(6);
  }
  const size_t at = url.rfind('@');
  if (at == std::string_view::npos || at + 1 == url.size()) {
    return false;
  }
  return url.substr(0, at).find_first_of("/:") == std::string_view::npos;
}

bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

// The inputs Go's url.Parse refuses that a repository URL can plausibly contain.
bool GoUrlParses(std::string_view url) {
  if (url.starts_with(":")) {
    return false;  // "missing protocol scheme"
  }
  for (size_t i = 0; i < url.size(); ++i) {
    const auto c = static_cast<unsigned char>(url[i]);
    if (c < 0x20 || c == 0x7f) {
      return false;  // "invalid control character in URL"
    }
    if (c == '%' && (i + 2 >= url.size() || !IsHex(url[i + 1]) || !IsHex(url[i + 2]))) {
      return false;  // "invalid URL escape"
    }
  }
  // With an authority ("scheme://authority/..."), a port must be digits ("invalid port").
  const size_t slashes = url.find("://");
  if (slashes == std::string_view::npos) {
    return true;
  }
  std::string_view authority = url.substr(slashes + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return false;  // "missing ']' in host"
    }
    authority.remove_prefix(close + 1);
  }
  const size_t colon = authority.find(':');
  if (colon == std::string_view::npos) {
    return true;
  }
  for (char c : authority.substr(colon + 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string NormalizeGitUrl(std::string_view repo_url) {
  // strings.ToLower(strings.TrimSpace(repo)), for the ASCII a URL is made of.
  std::string repo(repo_url);
  absl::StripAsciiWhitespace(&repo);
  absl::AsciiStrToLower(&repo);
  if (IsSshUrl(repo) && !repo.starts_with("ssh://")) {
    // scp style: the first ':' separates host and path, which url.Parse would take for a port.
    if (const size_t colon = repo.find(':'); colon != std::string::npos) {
      repo[colon] = '/';
    }
    repo.insert(0, "ssh://");
  }
  if (repo.ends_with(".git")) {
    repo.resize(repo.size() - 4);
  }
  if (!GoUrlParses(repo)) {
    return "";
  }
  if (repo.starts_with("ssh://")) {
    repo.erase(0, 6);
  }
  return repo;
}

namespace {

// git.NormalizeGitURLAllowInvalid: a URL that does not normalise stands for itself.
std::string ComparableUrl(std::string_view url) {
  std::string normal = NormalizeGitUrl(url);
  return normal.empty() ? std::string(url) : normal;
}

}  // namespace

bool SameGitUrl(std::string_view left, std::string_view right) {
  const std::string normal_left = ComparableUrl(left);
  return !normal_left.empty() && normal_left == ComparableUrl(right);
}

RepositoryCredentials::RepositoryCredentials(const std::vector<json>& secrets) {
  for (const json& secret : secrets) {
    const std::string type = kube::Label(secret, kSecretTypeLabel);
    const bool is_template = type == kSecretTypeRepoCreds;
    if (type != kSecretTypeRepository && !is_template) {
      continue;
    }
    const std::string name = kube::StringAt(kube::Metadata(secret), "name");
    Parsed parsed;
    if (absl::Status status = ParseData(kube::FieldAt(secret, "data"), is_template, name, parsed);
        !status.ok()) {
      skipped_.push_back(SkippedSecret{name, type, parsed.url, std::move(status)});
      continue;
    }
    if (is_template) {
      templates_.push_back(Entry{name, NormalizeGitUrl(parsed.url), "", std::move(parsed.fields)});
    } else {
      parsed.fields["repo"] = parsed.url;
      repositories_.push_back(Entry{name, ComparableUrl(parsed.url), std::move(parsed.project),
                                    std::move(parsed.fields)});
    }
  }
}

RepositoryMatch RepositoryCredentials::Lookup(std::string_view repo_url,
                                              std::string_view project) const {
  RepositoryMatch match;
  // getRepositorySecret: the first Secret of the same URL and project wins; else a project-less
  // one of the same URL.
  const std::string comparable = ComparableUrl(repo_url);
  const Entry* found = nullptr;
  for (const Entry& entry : repositories_) {
    if (comparable.empty() || entry.match_url != comparable) {
      continue;
    }
    if (entry.project == project) {
      found = &entry;
      break;
    }
    if (entry.project.empty() && found == nullptr) {
      found = &entry;
    }
  }
  if (found != nullptr) {
    match.repository = found->fields;
    match.repository_secret = found->name;
  } else {
    match.repository = json{{"repo", std::string(repo_url)}};
  }

  // enrichCredsToRepo: the template is looked up by the Repository's own URL (the Secret's url
  // when one matched), and only when it has no credentials of its own.
  const std::string repository_url = match.repository["repo"].get<std::string>();
  const std::string normalized = NormalizeGitUrl(repository_url);
  const bool consult_templates = !HasCredentials(match.repository);
  if (consult_templates) {
    const Entry* best = nullptr;
    size_t best_length = 0;
    for (const Entry& entry : templates_) {
      if (const size_t length = PrefixMatch(normalized, entry.match_url); length > best_length) {
        best = &entry;
        best_length = length;
      }
    }
    if (best != nullptr) {
      InheritFrom(best->fields, match.repository);
      match.creds_secret = best->name;
    }
  }

  for (const SkippedSecret& skipped : skipped_) {
    const bool candidate =
        skipped.type == kSecretTypeRepository
            ? SameGitUrl(skipped.url, repo_url)
            : consult_templates && PrefixMatch(normalized, NormalizeGitUrl(skipped.url)) > 0;
    if (!skipped.url.empty() && candidate) {
      match.skipped.push_back(skipped);
    }
  }
  return match;
}

}  // namespace mmi::argocd_repo
