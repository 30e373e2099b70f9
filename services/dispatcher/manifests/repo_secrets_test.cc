#include "services/dispatcher/manifests/repo_secrets.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;

kube::ObjectPtr Secret(const std::string& name, std::string_view type,
                       const std::map<std::string, std::string>& data) {
  json encoded = json::object();
  for (const auto& [key, value] : data) {
    encoded[key] = absl::Base64Escape(value);
  }
  return std::make_shared<const json>(
      json{{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"metadata",
            {{"name", name},
             {"namespace", "argocd"},
             {"labels", {{std::string(argocd_repo::kSecretTypeLabel), type}}}}},
           {"data", encoded}});
}

TEST(RepoSecretsTest, WatchesOnlyTheTwoSecretTypesOfTheArgoCdNamespace) {
  const kube::InformerSettings s = RepoSecretsInformerSettings("gitops");
  EXPECT_EQ(s.resource.resource, "secrets");
  EXPECT_EQ(s.resource.group, "");
  EXPECT_EQ(s.resource.namespace_name, "gitops");
  EXPECT_EQ(s.label_selector, "argocd.argoproj.io/secret-type in (repository,repo-creds)");
  ASSERT_TRUE(s.transform);
  json secret = *Secret("a", "repository", {{"url", "https://git.example/a.git"}});
  secret["metadata"]["managedFields"] = json::array({json::object()});
  s.transform(secret);
  EXPECT_FALSE(secret["metadata"].contains("managedFields"));
}

TEST(RepoSecretsTest, AnswersTheCredentialsOfTheCachedSecretsRebuiltAfterAChange) {
  std::vector<kube::ObjectPtr> cache;
  int lists = 0;
  int changes = 0;
  RepoSecrets secrets(
      [&] {
        ++lists;
        return cache;
      },
      [&] { ++changes; });
  // Before the first list: every repository looks public.
  EXPECT_EQ(secrets.Current()->Lookup("https://git.example/private.git", "default").repository,
            (json{{"repo", "https://git.example/private.git"}}));
  EXPECT_FALSE(secrets.synced());

  // The first list: its adds are one change, told once it is in.
  cache = {
      Secret("private", "repository",
             {{"url", "https://git.example/private.git"}, {"username", "u"}, {"password", "p"}}),
      Secret("org", "repo-creds", {{"url", "https://git.example/org"}, {"password", "t"}})};
  for (const auto& secret : cache) {
    secrets.OnAdd(secret, /*in_initial_list=*/true);
  }
  EXPECT_EQ(changes, 0);
  secrets.OnSynced();
  EXPECT_EQ(changes, 1);
  EXPECT_TRUE(secrets.synced());
  const int lists_before = lists;
  auto current = secrets.Current();
  EXPECT_EQ(lists, lists_before + 1);
  const argocd_repo::RepositoryMatch match =
      current->Lookup("https://git.example/private.git", "default");
  EXPECT_EQ(match.repository_secret, "private");
  EXPECT_EQ(match.repository.value("username", ""), "u");
  EXPECT_EQ(current->Lookup("https://git.example/org/app.git", "default").creds_secret, "org");
  // Unchanged: the same object, no new list.
  EXPECT_EQ(secrets.Current(), current);
  EXPECT_EQ(lists, lists_before + 1);

  // A Secret deleted: told, and the next Current() no longer lends its credentials. The old
  // object stays valid for whoever holds it.
  const kube::ObjectPtr gone = cache[1];
  cache.pop_back();
  secrets.OnDelete(gone);
  EXPECT_EQ(changes, 2);
  auto after = secrets.Current();
  EXPECT_NE(after, current);
  EXPECT_EQ(after->Lookup("https://git.example/org/app.git", "default").creds_secret, "");
  EXPECT_EQ(current->Lookup("https://git.example/org/app.git", "default").creds_secret, "org");

  // An update and a bad Secret: skipped with its reason, the others still answer.
  cache.push_back(Secret("broken", "repository", {{"username", "no-url"}}));
  secrets.OnUpdate(cache[0], cache[0]);
  EXPECT_EQ(changes, 3);
  after = secrets.Current();
  ASSERT_EQ(after->skipped().size(), 1U);
  EXPECT_EQ(after->skipped()[0].name, "broken");
  EXPECT_EQ(after->Lookup("https://git.example/private.git", "default").repository_secret,
            "private");
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
