// Where the API server is and how to authenticate to it: the plain RestConfig struct, filled from
// a kubeconfig or from the in-cluster service-account files. Parsing never reads environment
// variables: the app passes paths, host and port (main.cc reads KUBECONFIG or
// KUBERNETES_SERVICE_HOST/PORT).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mmi::kube {

// TLS material. `*_data` holds PEM bytes (already base64-decoded) and wins over `*_file`.
struct TlsConfig {
  std::string ca_file;  // CA bundle that signs the server certificate; "" = system store
  std::string ca_data;
  std::string cert_file;  // client certificate (mTLS); needs the matching key
  std::string cert_data;
  std::string key_file;
  std::string key_data;
  // Skips server certificate verification. Only ever true when a kubeconfig says so
  // explicitly; never combined with a CA.
  bool insecure_skip_verify = false;
  // Name used for SNI and certificate verification instead of the server URL's host.
  std::string server_name;
};

struct RestConfig {
  std::string server;  // "https://10.0.0.1:443" (no trailing slash); http:// only for tests
  TlsConfig tls;
  // Authentication: a client certificate (tls), a bearer token, or basic auth.
  std::string bearer_token;
  // File holding the bearer token (projected service-account tokens rotate): re-read at most
  // once a minute and after a 401; its content wins over `bearer_token`.
  std::string bearer_token_file;
  std::string username;
  std::string password;
  // Impersonation headers (Impersonate-User / Impersonate-Group).
  std::string impersonate_user;
  std::vector<std::string> impersonate_groups;
  std::string proxy_url;             // "" = no proxy (environment proxies are ignored)
  bool disable_compression = false;  // true: do not ask for gzip responses
  // Default namespace: the context's namespace, the service-account namespace, or "default".
  std::string namespace_name = "default";
  std::string user_agent = "mmi-kube/0.1";
};

// A one-line description for logs: server, auth kinds and file paths, never secrets.
std::string DescribeForLog(const RestConfig& config);

struct KubeconfigOptions {
  std::string context;   // context to use; "" = the file's current-context
  std::string base_dir;  // relative file paths inside the kubeconfig resolve against this
};

// Parses kubeconfig YAML (clusters, users, contexts, current-context). Supports
// certificate-authority(-data), client-certificate(-data), client-key(-data), token, tokenFile,
// username/password, as/as-groups, insecure-skip-tls-verify, tls-server-name, proxy-url,
// disable-compression and the context namespace. kInvalidArgument names the offending field
// ("users[name=admin].user.client-key-data: ..."); kUnimplemented for exec and auth-provider
// credentials.
absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml, const KubeconfigOptions& options);

// Reads and merges kubeconfig files the way KUBECONFIG=a:b does: the first definition of a
// cluster, user or context name wins; the first non-empty current-context wins. Relative paths
// resolve against the directory of the file that holds them. `context` "" = current-context.
absl::StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                               std::string_view context = "");

// The service-account files a pod sees.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// In-cluster config from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT values (passed in)
// and the service-account files. The token is read from `token_file` on use (it rotates).
// kFailedPrecondition when host or port is empty (not in a cluster) or the token file cannot be
// read; a missing namespace file leaves namespace "default".
absl::StatusOr<RestConfig> LoadInClusterConfig(const InClusterPaths& paths, std::string_view host,
                                               std::string_view port);

}  // namespace mmi::kube
