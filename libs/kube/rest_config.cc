#include "libs/kube/rest_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/config.h"
#include "libs/common/status_macros.h"

namespace mmi::kube {
namespace {

// One named entry (cluster, user or context) and the directory its relative paths resolve to.
struct NamedEntry {
  YAML::Node body;
  std::string base_dir;
};

// The merged view of one or more kubeconfig files.
struct MergedKubeconfig {
  std::map<std::string, NamedEntry> clusters;
  std::map<std::string, NamedEntry> users;
  std::map<std::string, NamedEntry> contexts;
  std::string current_context;
};

absl::Status InvalidField(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("kubeconfig: ", std::string(field), ": ", std::string(problem)));
}

// Reads string field `key` of map `node`; "" when absent or null.
absl::StatusOr<std::string> StringField(const YAML::Node& node, const char* key,
                                        const std::string& where) {
  const YAML::Node value = node[key];
  if (!value.IsDefined() || value.IsNull()) {
    return std::string();
  }
  if (!value.IsScalar()) {
    return InvalidField(absl::StrCat(where, ".", key), "expected a string");
  }
  return value.as<std::string>();
}

absl::StatusOr<bool> BoolField(const YAML::Node& node, const char* key, const std::string& where) {
  const YAML::Node value = node[key];
  if (!value.IsDefined() || value.IsNull()) {
    return false;
  }
  bool result = false;
  if (!value.IsScalar() || !YAML::convert<bool>::decode(value, result)) {
    return InvalidField(absl::StrCat(where, ".", key), "expected true or false");
  }
  return result;
}

absl::StatusOr<std::string> Base64Field(const YAML::Node& node, const char* key,
                                        const std::string& where) {
  ASSIGN_OR_RETURN(std::string encoded, StringField(node, key, where));
  if (encoded.empty()) {
    return std::string();
  }
  std::string decoded;
  if (!absl::Base64Unescape(encoded, &decoded)) {
    return InvalidField(absl::StrCat(where, ".", key), "not valid base64");
  }
  return decoded;
}

std::string ResolvePath(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) {
    return path;
  }
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// Adds the named entries of `list_key` ("clusters") to `out`; `body_key` ("cluster") holds the
// fields. Earlier definitions win.
absl::Status AddEntries(const YAML::Node& root, const char* list_key, const char* body_key,
                        const std::string& base_dir, std::map<std::string, NamedEntry>& out) {
  const YAML::Node list = root[list_key];
  if (!list.IsDefined() || list.IsNull()) {
    return absl::OkStatus();
  }
  if (!list.IsSequence()) {
    return InvalidField(list_key, "expected a list");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string where = absl::StrCat(list_key, "[", i, "]");
    if (!item.IsMap()) {
      return InvalidField(where, "expected a map with name and " + std::string(body_key));
    }
    ASSIGN_OR_RETURN(std::string name, StringField(item, "name", where));
    if (name.empty()) {
      return InvalidField(where + ".name", "missing");
    }
    const YAML::Node body = item[body_key];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      return InvalidField(absl::StrCat(list_key, "[name=", name, "].", body_key), "expected a map");
    }
    out.try_emplace(
        name,
        NamedEntry{body.IsDefined() && !body.IsNull() ? body : YAML::Node(YAML::NodeType::Map),
                   base_dir});
  }
  return absl::OkStatus();
}

absl::Status MergeDocument(std::string_view yaml, const std::string& base_dir,
                           MergedKubeconfig& merged) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: not valid YAML: ", std::string(e.what())));
  }
  if (root.IsNull() || !root.IsDefined()) {
    return absl::OkStatus();  // an empty file contributes nothing
  }
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("kubeconfig: the top level must be a map");
  }
  try {
    RETURN_IF_ERROR(AddEntries(root, "clusters", "cluster", base_dir, merged.clusters));
    RETURN_IF_ERROR(AddEntries(root, "users", "user", base_dir, merged.users));
    RETURN_IF_ERROR(AddEntries(root, "contexts", "context", base_dir, merged.contexts));
    if (merged.current_context.empty()) {
      ASSIGN_OR_RETURN(merged.current_context, StringField(root, "current-context", "(top level)"));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: unexpected structure: ", std::string(e.what())));
  }
  return absl::OkStatus();
}

absl::Status FillCluster(const NamedEntry& entry, const std::string& where, RestConfig& config) {
  const YAML::Node& c = entry.body;
  ASSIGN_OR_RETURN(config.server, StringField(c, "server", where));
  if (config.server.empty()) {
    return InvalidField(where + ".server", "missing (expected https://host:port)");
  }
  while (!config.server.empty() && config.server.back() == '/') {
    config.server.pop_back();
  }
  ASSIGN_OR_RETURN(std::string ca_file, StringField(c, "certificate-authority", where));
  config.tls.ca_file = ResolvePath(ca_file, entry.base_dir);
  ASSIGN_OR_RETURN(config.tls.ca_data, Base64Field(c, "certificate-authority-data", where));
  ASSIGN_OR_RETURN(config.tls.insecure_skip_verify,
                   BoolField(c, "insecure-skip-tls-verify", where));
  if (config.tls.insecure_skip_verify &&
      (!config.tls.ca_file.empty() || !config.tls.ca_data.empty())) {
    return InvalidField(where + ".insecure-skip-tls-verify",
                        "cannot be combined with certificate-authority(-data); remove one");
  }
  ASSIGN_OR_RETURN(config.tls.server_name, StringField(c, "tls-server-name", where));
  ASSIGN_OR_RETURN(config.proxy_url, StringField(c, "proxy-url", where));
  ASSIGN_OR_RETURN(config.disable_compression, BoolField(c, "disable-compression", where));
  return absl::OkStatus();
}

absl::Status FillUser(const NamedEntry& entry, const std::string& where, RestConfig& config) {
  const YAML::Node& u = entry.body;
  for (const char* unsupported : {"exec", "auth-provider"}) {
    const YAML::Node node = u[unsupported];
    if (node.IsDefined() && !node.IsNull()) {
      return absl::UnimplementedError(absl::StrCat(
          "kubeconfig: ", where, ".", unsupported,
          ": credential plugins are not supported; use a client certificate, token or tokenFile"));
    }
  }
  ASSIGN_OR_RETURN(std::string cert_file, StringField(u, "client-certificate", where));
  ASSIGN_OR_RETURN(std::string key_file, StringField(u, "client-key", where));
  config.tls.cert_file = ResolvePath(cert_file, entry.base_dir);
  config.tls.key_file = ResolvePath(key_file, entry.base_dir);
  ASSIGN_OR_RETURN(config.tls.cert_data, Base64Field(u, "client-certificate-data", where));
  ASSIGN_OR_RETURN(config.tls.key_data, Base64Field(u, "client-key-data", where));
  const bool has_cert = !config.tls.cert_file.empty() || !config.tls.cert_data.empty();
  const bool has_key = !config.tls.key_file.empty() || !config.tls.key_data.empty();
  if (has_cert != has_key) {
    return InvalidField(where, has_cert ? "client-certificate without client-key"
                                        : "client-key without client-certificate");
  }
  ASSIGN_OR_RETURN(config.bearer_token, StringField(u, "token", where));
  ASSIGN_OR_RETURN(std::string token_file, StringField(u, "tokenFile", where));
  config.bearer_token_file = ResolvePath(token_file, entry.base_dir);
  ASSIGN_OR_RETURN(config.username, StringField(u, "username", where));
  ASSIGN_OR_RETURN(config.password, StringField(u, "password", where));
  ASSIGN_OR_RETURN(config.impersonate_user, StringField(u, "as", where));
  const YAML::Node groups = u["as-groups"];
  if (groups.IsDefined() && !groups.IsNull()) {
    if (!groups.IsSequence()) {
      return InvalidField(where + ".as-groups", "expected a list of strings");
    }
    for (const auto& g : groups) {
      config.impersonate_groups.push_back(g.as<std::string>());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RestConfig> Resolve(const MergedKubeconfig& merged, std::string_view context) {
  std::string context_name(context);
  if (context_name.empty()) {
    context_name = merged.current_context;
  }
  if (context_name.empty()) {
    return absl::InvalidArgumentError(
        "kubeconfig: no context chosen: current-context is empty and no context was given");
  }
  const auto ctx = merged.contexts.find(context_name);
  if (ctx == merged.contexts.end()) {
    std::vector<std::string> names;
    for (const auto& [name, unused] : merged.contexts) {
      names.push_back(name);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: context '", context_name,
                     "' not found (contexts: ", absl::StrJoin(names, ", "), ")"));
  }
  RestConfig config;
  const std::string ctx_where = absl::StrCat("contexts[name=", context_name, "].context");
  try {
    ASSIGN_OR_RETURN(std::string cluster_name, StringField(ctx->second.body, "cluster", ctx_where));
    ASSIGN_OR_RETURN(std::string user_name, StringField(ctx->second.body, "user", ctx_where));
    ASSIGN_OR_RETURN(std::string ns, StringField(ctx->second.body, "namespace", ctx_where));
    if (!ns.empty()) {
      config.namespace_name = ns;
    }
    const auto cluster = merged.clusters.find(cluster_name);
    if (cluster == merged.clusters.end()) {
      return InvalidField(ctx_where + ".cluster",
                          absl::StrCat("cluster '", cluster_name, "' not found"));
    }
    RETURN_IF_ERROR(FillCluster(cluster->second,
                                absl::StrCat("clusters[name=", cluster_name, "].cluster"), config));
    if (!user_name.empty()) {
      const auto user = merged.users.find(user_name);
      if (user == merged.users.end()) {
        return InvalidField(ctx_where + ".user", absl::StrCat("user '", user_name, "' not found"));
      }
      RETURN_IF_ERROR(
          FillUser(user->second, absl::StrCat("users[name=", user_name, "].user"), config));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: unexpected structure: ", std::string(e.what())));
  }
  return config;
}

}  // namespace

std::string DescribeForLog(const RestConfig& config) {
  std::vector<std::string> auth;
  if (!config.tls.cert_file.empty()) {
    auth.emplace_back(absl::StrCat("client-cert file ", config.tls.cert_file));
  } else if (!config.tls.cert_data.empty()) {
    auth.emplace_back("client-cert data");
  }
  if (!config.bearer_token_file.empty()) {
    auth.emplace_back(absl::StrCat("token file ", config.bearer_token_file));
  } else if (!config.bearer_token.empty()) {
    auth.emplace_back("token");
  }
  if (!config.username.empty()) {
    auth.emplace_back("basic");
  }
  std::string ca = config.tls.insecure_skip_verify ? "INSECURE (no verification)"
                   : !config.tls.ca_data.empty()   ? "ca data"
                   : !config.tls.ca_file.empty()   ? absl::StrCat("ca file ", config.tls.ca_file)
                                                   : "system CAs";
  return absl::StrCat("server=", config.server, " tls=", ca,
                      " auth=", auth.empty() ? "none" : absl::StrJoin(auth, "+"),
                      " namespace=", config.namespace_name);
}

absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml,
                                           const KubeconfigOptions& options) {
  MergedKubeconfig merged;
  RETURN_IF_ERROR(MergeDocument(yaml, options.base_dir, merged));
  return Resolve(merged, options.context);
}

absl::StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                               std::string_view context) {
  if (paths.empty()) {
    return absl::InvalidArgumentError("kubeconfig: no file given");
  }
  MergedKubeconfig merged;
  for (const auto& path : paths) {
    auto content = config::ReadFile(path);
    if (!content.ok()) {
      return absl::Status(
          content.status().code(),
          absl::StrCat("kubeconfig ", path, ": ", std::string(content.status().message())));
    }
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const absl::Status status = MergeDocument(*content, dir, merged);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat(path, ": ", std::string(status.message())));
    }
  }
  return Resolve(merged, context);
}

absl::StatusOr<RestConfig> LoadInClusterConfig(const InClusterPaths& paths, std::string_view host,
                                               std::string_view port) {
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is empty; the "
        "process does not run in a pod (use a kubeconfig instead)");
  }
  RestConfig config;
  const std::string host_part = host.find(':') != std::string_view::npos && host.front() != '['
                                    ? absl::StrCat("[", std::string(host), "]")
                                    : std::string(host);
  config.server = absl::StrCat("https://", host_part, ":", std::string(port));
  const auto token = config::ReadFile(paths.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster config: cannot read the service-account token ", paths.token_file, ": ",
        std::string(token.status().message()), " (is automountServiceAccountToken disabled?)"));
  }
  config.bearer_token_file = paths.token_file;
  if (!std::filesystem::exists(paths.ca_file)) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: CA bundle ", paths.ca_file, " does not exist"));
  }
  config.tls.ca_file = paths.ca_file;
  if (const auto ns = config::ReadFile(paths.namespace_file); ns.ok()) {
    const std::string trimmed(absl::StripAsciiWhitespace(*ns));
    if (!trimmed.empty()) {
      config.namespace_name = trimmed;
    }
  }
  return config;
}

}  // namespace mmi::kube
