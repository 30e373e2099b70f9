// The repository credentials the application-controller sends the repo-server, read from the
// Secrets Argo CD keeps them in (the pinned Argo CD v3.2.11: util/db/repository.go GetRepository,
// util/db/repository_secrets.go, util/git/git.go NormalizeGitURL), so a private repository
// renders here as it renders in Argo CD.
//
// Argo CD's rule, which Lookup follows:
//   1. Secrets labelled argocd.argoproj.io/secret-type=repository describe one repository each
//      (data.url). The one whose URL is the same as the Application's (SameGitUrl) and whose
//      data.project is the Application's project is used; failing that, one of the same URL with
//      no project. Its data fields become the v1alpha1.Repository, and `repo` is its own url.
//   2. When that Repository has no credentials (no username, password, bearerToken,
//      sshPrivateKey, tlsClientCertData or githubAppPrivateKey, and not
//      useAzureWorkloadIdentity), including when no repository Secret matched, the Secret
//      labelled secret-type=repo-creds (a credential template) whose normalised url is the longest
//      prefix of the normalised repo URL lends its credentials (Repository.CopyCredentialsFrom):
//      username, password, bearerToken, sshPrivateKey, tlsClientCertData, tlsClientCertKey,
//      githubAppPrivateKey, githubAppID, githubAppInstallationID, githubAppEnterpriseBaseUrl,
//      gcpServiceAccountKey, proxy, noProxy and type fill only what is empty; enableOCI,
//      insecureOCIForceHttp, forceHttpBasicAuth and useAzureWorkloadIdentity are taken as the
//      template has them; `inheritedCreds` is set. Prefixes are plain string prefixes, as in
//      Argo CD ("https://github.com/org" also lends to "https://github.com/organisation/x").
//   3. Nothing matched: {"repo": repo_url}, PublicRepository's answer.
// Where Argo CD picks among equals in its informer's (unspecified) order, Lookup takes the first
// in the order given (ties of two project-less repository Secrets, or of two templates of the
// same prefix length); Argo CD logs a warning for those.
//
// Bad Secrets are skipped with their reason, not fatal: one operator's typo in one Secret must not
// stop the other repositories from rendering. Argo CD itself fails only the Applications whose
// lookup meets the bad Secret; to let the caller do the same, Lookup also returns the skipped
// Secrets whose url would have matched (RepositoryMatch::skipped), so the dispatcher can show a
// ComparisonError instead of rendering without the credentials the operator meant.
//
// Secret values never appear in an error message or in the skipped list (only names, fields and
// URLs), so both may be logged. The Repository JSON carries them: never log it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace mmi::argocd_repo {

// The label Argo CD sorts its Secrets by, and the two values read here.
inline constexpr std::string_view kSecretTypeLabel = "argocd.argoproj.io/secret-type";
inline constexpr std::string_view kSecretTypeRepository = "repository";
inline constexpr std::string_view kSecretTypeRepoCreds = "repo-creds";

// A Secret left out, and why.
struct SkippedSecret {
  std::string name;  // metadata.name
  std::string type;  // kSecretTypeRepository or kSecretTypeRepoCreds
  std::string url;   // data.url decoded; "" when it is missing or could not be read
  // kInvalidArgument naming the Secret and the field: `Secret "repo-x": data.githubAppID: not
  // an integer`.
  absl::Status error;

  bool operator==(const SkippedSecret&) const = default;
};

// What Lookup answers for one repo URL.
struct RepositoryMatch {
  // v1alpha1.Repository in protobuf JSON form (generated.proto's field names: repo, username,
  // password, sshPrivateKey, insecureIgnoreHostKey, insecure, enableLfs, tlsClientCertData,
  // tlsClientCertKey, type, name, inheritedCreds, enableOCI, githubAppPrivateKey, githubAppID,
  // githubAppInstallationID, githubAppEnterpriseBaseUrl, proxy, project, gcpServiceAccountKey,
  // forceHttpBasicAuth, noProxy, useAzureWorkloadIdentity, bearerToken, insecureOCIForceHttp).
  // Only fields that are set appear (empty strings, false and 0 are left out, which the
  // repo-server reads the same), so equal credentials give equal JSON and equal render keys.
  // githubAppID and githubAppInstallationID are JSON numbers, which protobuf's JSON parser takes
  // for int64.
  nlohmann::json repository;
  std::string repository_secret;  // the `repository` Secret used; "" when none
  std::string creds_secret;       // the `repo-creds` template inherited from; "" when none
  // Skipped Secrets that would have been candidates: a repository Secret of the same URL, a
  // template whose url is a prefix of it. Empty in the common case.
  std::vector<SkippedSecret> skipped;
};

// Argo CD's repository Secrets, read once, looked up per Application.
// Immutable after construction, so thread-safe. The caller lists or watches the Secrets of Argo
// CD's namespace and builds a new RepositoryCredentials when they change.
class RepositoryCredentials {
 public:
  // `secrets`: Kubernetes Secret objects as the API returns them (`data` base64; `stringData`,
  // which the API never returns, is ignored). Secrets without one of the two secret-type labels
  // (clusters, repo-write credentials, anything else) are ignored without a word. A repository or
  // repo-creds Secret is skipped, with its reason in skipped(), when `data` is not an object of
  // strings, a field Argo CD reads is not base64 or not UTF-8 text, data.url is missing or empty,
  // a boolean field is not one of Go's ParseBool spellings (1 t T TRUE true True 0 f F FALSE false
  // False), or githubAppID / githubAppInstallationID is not a base-10 int64.
  explicit RepositoryCredentials(const std::vector<nlohmann::json>& secrets);

  // The Repository for `repo_url` (an Application source's repoURL) in `project` (its
  // spec.project; "default" when that is empty, as Argo CD's GetProject answers).
  RepositoryMatch Lookup(std::string_view repo_url, std::string_view project) const;

  // Every Secret skipped, in input order.
  const std::vector<SkippedSecret>& skipped() const { return skipped_; }

 private:
  struct Entry {
    std::string name;
    // Normalised once here rather than per lookup: repository Secrets as SameGitUrl compares
    // them (the URL as written when it does not normalise), templates by NormalizeGitUrl ("" when
    // it does not normalise, which lends to nothing).
    std::string match_url;
    std::string project;    // repository Secrets only
    nlohmann::json fields;  // repository: the Repository JSON; template: what it lends
  };

  std::vector<Entry> repositories_;
  std::vector<Entry> templates_;
  std::vector<SkippedSecret> skipped_;
};

// Argo CD's git.NormalizeGitURL: trimmed, lower-cased (ASCII), an scp-style SSH URL
// ("git@host:org/repo") rewritten as "git@host/org/repo" (also the form of "ssh://git@host/org/
// repo"), one trailing ".git" removed (before any other step, so "x.git/" keeps it; a trailing "/"
// is kept too). Argo CD then round-trips the URL through Go's net/url; here that is the identity,
// except that a URL Go refuses (a control character, a malformed %-escape, a non-numeric port, a
// leading ":") normalises to "". Not mirrored: Go's escaping of non-ASCII or spaces in the path.
std::string NormalizeGitUrl(std::string_view repo_url);

// Argo CD's git.SameURL: both normalise to the same non-empty string (a URL that does not
// normalise compares as it is written).
bool SameGitUrl(std::string_view left, std::string_view right);

}  // namespace mmi::argocd_repo
