#include "libs/kube/http_kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/fake_sleeper.h"
#include "libs/kube/errors.h"
#include "prometheus/registry.h"

namespace mmi::kube {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A transport that answers from a script and records requests.
class ScriptedTransport final : public internal::HttpTransport {
 public:
  struct Reply {
    absl::Status error;
    internal::HttpResponse response;
    std::vector<std::string> chunks;  // streamed body of a 2xx Stream()
  };

  void Push(long status, std::string body = "{}", std::string retry_after = "") {
    Reply r;
    r.response.status = status;
    r.response.body = std::move(body);
    r.response.retry_after = std::move(retry_after);
    Push(std::move(r));
  }
  void Push(Reply reply) {
    absl::MutexLock lock(&mu_);
    replies_.push_back(std::move(reply));
  }
  void PushStream(std::vector<std::string> chunks, absl::Status end = absl::OkStatus()) {
    Reply r;
    r.response.status = 200;
    r.chunks = std::move(chunks);
    r.error = std::move(end);
    Push(std::move(r));
  }
  std::vector<internal::HttpRequest> Requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  absl::StatusOr<internal::HttpResponse> Send(const internal::HttpRequest& request) override {
    Reply reply = Next(request);
    if (!reply.error.ok()) {
      return reply.error;
    }
    return reply.response;
  }
  absl::StatusOr<internal::HttpResponse> Stream(const internal::HttpRequest& request,
                                                const internal::StreamOptions&,
                                                const internal::StreamDataHandler& on_data,
                                                std::stop_token) override {
    Reply reply = Next(request);
    if (reply.response.status >= 200 && reply.response.status < 300) {
      for (const auto& chunk : reply.chunks) {
        if (!on_data(chunk)) {
          return reply.response;
        }
      }
      reply.response.body.clear();
    }
    if (!reply.error.ok()) {
      return reply.error;
    }
    return reply.response;
  }

 private:
  Reply Next(const internal::HttpRequest& request) {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    if (replies_.empty()) {
      Reply r;
      r.error = absl::InternalError("script exhausted");
      return r;
    }
    Reply r = std::move(replies_.front());
    replies_.pop_front();
    return r;
  }

  mutable absl::Mutex mu_;
  std::deque<Reply> replies_ ABSL_GUARDED_BY(mu_);
  std::vector<internal::HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
};

std::string ApiStatus(int code, const std::string& reason, const std::string& message = "x") {
  return json{{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", message}}.dump();
}

std::string HeaderValue(const internal::HttpRequest& request, const std::string& name) {
  for (const auto& [k, v] : request.headers) {
    if (k == name) {
      return v;
    }
  }
  return "";
}

class HttpKubeClientTest : public ::testing::Test {
 protected:
  void MakeClient(HttpKubeClientSettings settings = {}) {
    if (settings.rest.server.empty()) {
      settings.rest.server = "https://kube:6443";
    }
    auto transport = std::make_unique<ScriptedTransport>();
    transport_ = transport.get();
    client_ = std::make_unique<HttpKubeClient>(std::move(transport), std::move(settings), clock_,
                                               sleeper_, &registry_);
  }
  static HttpKubeClientSettings Unlimited() {
    HttpKubeClientSettings s;
    s.rate_limit.qps = 0;
    return s;
  }
  // Watches apps_ and keeps every event.
  absl::Status WatchInto(const WatchOptions& options, std::vector<WatchEvent>& events) {
    return client_->Watch(
        apps_, options,
        [&](WatchEvent&& e) {
          events.push_back(std::move(e));
          return true;
        },
        std::stop_token());
  }
  double CounterValue(const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != name) {
        continue;
      }
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> got;
        for (const auto& l : metric.label) {
          got[l.name] = l.value;
        }
        if (got == labels) {
          return metric.counter.value;
        }
      }
    }
    return -1;
  }

  const ResourceRef apps_{"argoproj.io", "v1alpha1", "applications", "argocd"};
  mmi::testing::FakeClock clock_;
  mmi::testing::FakeSleeper sleeper_{&clock_};
  prometheus::Registry registry_;
  ScriptedTransport* transport_ = nullptr;
  std::unique_ptr<HttpKubeClient> client_;
};

TEST_F(HttpKubeClientTest, GetSendsAcceptJsonAndTheBearerToken) {
  HttpKubeClientSettings settings = Unlimited();
  settings.rest.bearer_token = "tok";
  settings.rest.impersonate_user = "bob";
  MakeClient(settings);
  transport_->Push(200, R"({"kind":"Application","metadata":{"name":"a"}})");
  auto app = client_->Get(apps_, "a");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ((*app)["metadata"]["name"], "a");
  const auto request = transport_->Requests().at(0);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a");
  EXPECT_EQ(HeaderValue(request, "Accept"), "application/json");
  EXPECT_EQ(HeaderValue(request, "Authorization"), "Bearer tok");
  EXPECT_EQ(HeaderValue(request, "Impersonate-User"), "bob");
}

TEST_F(HttpKubeClientTest, MapsErrorsWithVerbPathAndServerMessage) {
  MakeClient(Unlimited());
  transport_->Push(404, ApiStatus(404, "NotFound", "applications.argoproj.io \"a\" not found"));
  auto app = client_->Get(apps_, "a");
  EXPECT_EQ(app.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(app.status().message()),
              HasSubstr("GET /apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a"));
  EXPECT_THAT(std::string(app.status().message()), HasSubstr("not found"));

  transport_->Push(409, ApiStatus(409, "AlreadyExists"));
  EXPECT_EQ(client_->Create(apps_, json{{"metadata", {{"name", "a"}}}}, {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  transport_->Push(409, ApiStatus(409, "Conflict"));
  const auto conflict =
      client_->Update(apps_, json{{"metadata", {{"name", "a"}, {"resourceVersion", "1"}}}}, {});
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(IsConflict(conflict.status()));
  transport_->Push(200, "not json");
  EXPECT_EQ(client_->Get(apps_, "a").status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(HttpKubeClientTest, WritesUseTheRightMethodsPathsAndContentTypes) {
  MakeClient(Unlimited());
  for (int i = 0; i < 6; ++i) {
    transport_->Push(200, "{}");
  }
  const json app = {
      {"metadata", {{"name", "a"}, {"namespace", "argocd"}, {"resourceVersion", "7"}}}};
  const ResourceRef all_ns = apps_.InNamespace("");
  WriteOptions write;
  write.field_manager = "mmi";
  ASSERT_TRUE(client_->Create(all_ns, app, write).ok());
  ASSERT_TRUE(client_->Update(apps_, app, {}).ok());
  ASSERT_TRUE(
      client_->Patch(apps_, "a", PatchType::kMerge, json{{"status", {{"x", 1}}}}, {}, "").ok());
  ASSERT_TRUE(
      client_
          ->Patch(apps_, "a", PatchType::kJson,
                  json::array(
                      {{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "7"}}}),
                  {}, "")
          .ok());
  PatchOptions apply;
  apply.field_manager = "dispatcher";
  apply.force = true;
  ASSERT_TRUE(client_->Patch(apps_, "a", PatchType::kApply, app, apply, "").ok());
  DeleteOptions del;
  del.precondition_uid = "u-1";
  del.precondition_resource_version = "7";
  del.propagation_policy = PropagationPolicy::kForeground;
  ASSERT_TRUE(client_->Delete(apps_, "a", del).ok());

  const auto r = transport_->Requests();
  const std::string base = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications";
  EXPECT_EQ(r[0].method, "POST");
  EXPECT_EQ(r[0].path, base + "?fieldManager=mmi");  // namespace taken from the object
  EXPECT_EQ(HeaderValue(r[0], "Content-Type"), "application/json");
  EXPECT_EQ(json::parse(r[0].body), app);
  EXPECT_EQ(r[1].method, "PUT");
  EXPECT_EQ(r[1].path, base + "/a");
  EXPECT_EQ(r[2].method, "PATCH");
  EXPECT_EQ(HeaderValue(r[2], "Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(HeaderValue(r[3], "Content-Type"), "application/json-patch+json");
  EXPECT_EQ(r[4].path, base + "/a?fieldManager=dispatcher&force=true");
  EXPECT_EQ(HeaderValue(r[4], "Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(r[5].method, "DELETE");
  const json body = json::parse(r[5].body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "7");
}

TEST_F(HttpKubeClientTest, ApplyWithoutAFieldManagerIsRejectedBeforeSending) {
  MakeClient(Unlimited());
  const auto result = client_->Patch(apps_, "a", PatchType::kApply, json::object(), {}, "");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(transport_->Requests().empty());
}

TEST_F(HttpKubeClientTest, StatusPatchesCanTargetASubresource) {
  MakeClient(Unlimited());
  transport_->Push(200, "{}");
  ASSERT_TRUE(
      client_
          ->Patch(ResourceRef{"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", "ns"},
                  "g", PatchType::kMerge, json{{"status", json::object()}}, {}, "status")
          .ok());
  EXPECT_EQ(transport_->Requests()[0].path,
            "/apis/apps.open-cluster-management.io/v1beta1/namespaces/ns/gitopsclusters/g/status");
}

TEST_F(HttpKubeClientTest, RetriesA429AfterTheServersRetryAfter) {
  MakeClient(Unlimited());
  transport_->Push(429, ApiStatus(429, "TooManyRequests"), "3");
  transport_->Push(429, ApiStatus(429, "TooManyRequests"), "1");
  transport_->Push(201, R"({"metadata":{"name":"a"}})");
  auto created = client_->Create(apps_, json{{"metadata", {{"name", "a"}}}}, {});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(transport_->Requests().size(), 3u);
  const auto sleeps = sleeper_.Sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_GE(sleeps[0], std::chrono::seconds(3));
  EXPECT_GE(sleeps[1], std::chrono::seconds(1));
  EXPECT_EQ(CounterValue("rest_client_requests_total", {{"code", "429"}, {"method", "POST"}}), 2);
  EXPECT_EQ(CounterValue("rest_client_requests_total", {{"code", "201"}, {"method", "POST"}}), 1);
}

TEST_F(HttpKubeClientTest, GivesUpAfterMaxRetriesWithResourceExhausted) {
  HttpKubeClientSettings settings = Unlimited();
  settings.retry.max_retries = 2;
  MakeClient(settings);
  for (int i = 0; i < 3; ++i) {
    transport_->Push(429, ApiStatus(429, "TooManyRequests"), "1");
  }
  auto got = client_->Get(apps_, "a");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(transport_->Requests().size(), 3u);
}

TEST_F(HttpKubeClientTest, RetriesA5xxOfAWriteOnlyWhenTheServerSentRetryAfter) {
  MakeClient(Unlimited());
  transport_->Push(500, ApiStatus(500, "InternalError"));
  auto created = client_->Create(apps_, json{{"metadata", {{"name", "a"}}}}, {});
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(transport_->Requests().size(), 1u);

  transport_->Push(503, ApiStatus(503, "ServiceUnavailable"), "2");
  transport_->Push(201, "{}");
  EXPECT_TRUE(client_->Create(apps_, json{{"metadata", {{"name", "a"}}}}, {}).ok());
  EXPECT_EQ(transport_->Requests().size(), 3u);
}

TEST_F(HttpKubeClientTest, RetriesReadsOn5xxAndConnectionFailuresWithBackoff) {
  MakeClient(Unlimited());
  transport_->Push(503, ApiStatus(503, "ServiceUnavailable"));
  ScriptedTransport::Reply refused;
  refused.error = absl::UnavailableError("connection refused");
  transport_->Push(refused);
  transport_->Push(200, R"({"metadata":{"name":"a"}})");
  ASSERT_TRUE(client_->Get(apps_, "a").ok());
  const auto sleeps = sleeper_.Sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_GT(sleeps[1], sleeps[0] / 2);  // backoff, jittered
  EXPECT_EQ(CounterValue("rest_client_requests_total", {{"code", "<error>"}, {"method", "GET"}}),
            1);
}

TEST_F(HttpKubeClientTest, ThrottlesRequestsWithTheTokenBucket) {
  HttpKubeClientSettings settings;
  settings.rate_limit = {.qps = 5, .burst = 2};
  MakeClient(settings);
  for (int i = 0; i < 4; ++i) {
    transport_->Push(200, "{}");
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(client_->Get(apps_, "a").ok());
  }
  // Two from the burst, then one every 200 ms (the fake sleeper advances the fake clock).
  const auto sleeps = sleeper_.Sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], std::chrono::milliseconds(200));
  EXPECT_EQ(sleeps[1], std::chrono::milliseconds(200));
}

TEST_F(HttpKubeClientTest, ReReadsTheTokenFileOnceAfterA401) {
  const std::string file = absl::StrCat(::testing::TempDir(), "/http_client_token_", getpid());
  std::ofstream(file) << "old";
  HttpKubeClientSettings settings = Unlimited();
  settings.rest.bearer_token_file = file;
  MakeClient(settings);
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_->Get(apps_, "a").ok());
  std::ofstream(file) << "new";
  transport_->Push(401, ApiStatus(401, "Unauthorized"));
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_->Get(apps_, "a").ok());
  const auto r = transport_->Requests();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(HeaderValue(r[0], "Authorization"), "Bearer old");
  EXPECT_EQ(HeaderValue(r[1], "Authorization"), "Bearer old");
  EXPECT_EQ(HeaderValue(r[2], "Authorization"), "Bearer new");
  transport_->Push(401, ApiStatus(401, "Unauthorized"));
  transport_->Push(401, ApiStatus(401, "Unauthorized"));
  EXPECT_EQ(client_->Get(apps_, "a").status().code(), absl::StatusCode::kUnauthenticated);
  std::filesystem::remove(file);
}

TEST_F(HttpKubeClientTest, ListParsesPagesAndFillsKindsOfBuiltInItems) {
  MakeClient(Unlimited());
  transport_->Push(200, R"({"kind":"SecretList","apiVersion":"v1",
      "metadata":{"resourceVersion":"42","continue":"tok","remainingItemCount":1},
      "items":[{"metadata":{"name":"s1"}}]})");
  ListOptions options;
  options.label_selector = "a=b";
  options.limit = 1;
  auto page = client_->List(ResourceRef{"", "v1", "secrets", "argocd"}, options);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->resource_version, "42");
  EXPECT_EQ(page->continue_token, "tok");
  EXPECT_EQ(page->remaining_item_count, 1);
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0]["kind"], "Secret");
  EXPECT_EQ(page->items[0]["apiVersion"], "v1");
  EXPECT_EQ(transport_->Requests()[0].path,
            "/api/v1/namespaces/argocd/secrets?labelSelector=a%3Db&limit=1");
}

TEST_F(HttpKubeClientTest, ListAllFollowsContinueTokensAndRestartsUnpagedAfter410) {
  MakeClient(Unlimited());
  transport_->Push(200,
                   R"({"metadata":{"resourceVersion":"5","continue":"c1"},"items":[{"n":1}]})");
  transport_->Push(200, R"({"metadata":{"resourceVersion":"5"},"items":[{"n":2}]})");
  ListOptions one;
  one.limit = 1;
  auto all = ListAll(*client_, apps_, one);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->resource_version, "5");
  EXPECT_THAT(transport_->Requests()[1].path, HasSubstr("continue=c1"));

  transport_->Push(200,
                   R"({"metadata":{"resourceVersion":"6","continue":"c2"},"items":[{"n":1}]})");
  transport_->Push(410, ApiStatus(410, "Expired"));
  transport_->Push(200,
                   R"({"metadata":{"resourceVersion":"9"},"items":[{"n":1},{"n":2},{"n":3}]})");
  all = ListAll(*client_, apps_, one);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 3u);
  EXPECT_EQ(all->resource_version, "9");
  const auto last = transport_->Requests().back();
  EXPECT_THAT(last.path, ::testing::Not(HasSubstr("limit=")));
  EXPECT_THAT(last.path, ::testing::Not(HasSubstr("continue=")));
}

// A caller watching since the first page goes on with the token a 410 carries (the rest of the
// list at the server's current state) instead of listing everything again.
TEST_F(HttpKubeClientTest, ForEachListItemContinuesWithTheTokenOfA410WhenTheCallerAcceptsIt) {
  MakeClient(Unlimited());
  transport_->Push(200,
                   R"({"metadata":{"resourceVersion":"6","continue":"c2"},"items":[{"n":1}]})");
  transport_->Push(410, R"({"kind":"Status","apiVersion":"v1","metadata":{"continue":"fresh"},)"
                        R"("status":"Failure","message":"too old","reason":"Expired","code":410})");
  transport_->Push(200, R"({"metadata":{"resourceVersion":"9"},"items":[{"n":2},{"n":3}]})");
  std::vector<int> items;
  int restarts = 0;
  int inconsistent = 0;
  ListItemCallbacks callbacks;
  callbacks.on_item = [&](nlohmann::json&& item) { items.push_back(item["n"].get<int>()); };
  callbacks.on_restart = [&] { ++restarts; };
  callbacks.on_inconsistent_continue = [&] { ++inconsistent; };
  ListOptions one;
  one.limit = 1;
  auto rv = ForEachListItem(*client_, apps_, one, callbacks);
  ASSERT_TRUE(rv.ok()) << rv.status();
  EXPECT_EQ(*rv, "6");  // the first page's: the caller's watch runs from there
  EXPECT_THAT(items, ElementsAre(1, 2, 3));
  EXPECT_EQ(restarts, 0);
  EXPECT_EQ(inconsistent, 1);
  ASSERT_EQ(transport_->Requests().size(), 3u);
  EXPECT_THAT(transport_->Requests()[2].path, HasSubstr("continue=fresh"));
  EXPECT_THAT(transport_->Requests()[2].path, HasSubstr("limit=1"));

  // A fresh token that expires at once is not followed again: one unpaged list instead.
  transport_->Push(200,
                   R"({"metadata":{"resourceVersion":"10","continue":"c3"},"items":[{"n":1}]})");
  transport_->Push(410, R"({"kind":"Status","apiVersion":"v1","metadata":{"continue":"f1"},)"
                        R"("status":"Failure","message":"too old","reason":"Expired","code":410})");
  transport_->Push(410, R"({"kind":"Status","apiVersion":"v1","metadata":{"continue":"f2"},)"
                        R"("status":"Failure","message":"too old","reason":"Expired","code":410})");
  transport_->Push(200, R"({"metadata":{"resourceVersion":"12"},"items":[{"n":1},{"n":2}]})");
  items.clear();
  rv = ForEachListItem(*client_, apps_, one, callbacks);
  ASSERT_TRUE(rv.ok()) << rv.status();
  EXPECT_EQ(*rv, "12");
  EXPECT_EQ(restarts, 1);
  EXPECT_EQ(inconsistent, 2);
  const auto last = transport_->Requests().back();
  EXPECT_THAT(last.path, ::testing::Not(HasSubstr("continue=")));
  EXPECT_THAT(last.path, ::testing::Not(HasSubstr("limit=")));
}

TEST_F(HttpKubeClientTest, WatchDecodesEventsSplitAcrossChunks) {
  MakeClient(Unlimited());
  transport_->PushStream(
      {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})"
       "\n{\"type\":\"BOOK",
       R"(MARK","object":{"metadata":{"resourceVersion":"3"}}})"
       "\n"});
  std::vector<WatchEvent> events;
  WatchOptions options;
  options.resource_version = "1";
  options.timeout = std::chrono::seconds(30);
  const absl::Status status = WatchInto(options, events);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(events[1].type, WatchEventType::kBookmark);
  EXPECT_EQ(transport_->Requests()[0].path,
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications?watch=true&"
            "resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=30");
}

TEST_F(HttpKubeClientTest, StreamedListAsksForInitialEventsNotOlderThanAConsistentRead) {
  MakeClient(Unlimited());
  transport_->PushStream({R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7",)"
                          R"("annotations":{"k8s.io/initial-events-end":"true"}}}})"
                          "\n"});
  WatchOptions options;
  options.send_initial_events = true;
  options.timeout = std::chrono::seconds(30);
  std::vector<WatchEvent> events;
  const absl::Status status = WatchInto(options, events);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object["metadata"]["annotations"][std::string(kInitialEventsEndAnnotation)],
            "true");
  EXPECT_EQ(transport_->Requests()[0].path,
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications?watch=true&"
            "allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
            "timeoutSeconds=30");
}

TEST_F(HttpKubeClientTest, WatchRefusedWith410IsGone) {
  MakeClient(Unlimited());
  transport_->Push(410, ApiStatus(410, "Expired", "too old resource version: 1 (50)"));
  WatchOptions options;
  options.resource_version = "1";
  const absl::Status status = client_->Watch(apps_, options, [](WatchEvent&&) { return true; }, {});
  EXPECT_TRUE(IsGone(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("too old resource version"));
}

TEST_F(HttpKubeClientTest, WatchReportsABrokenStreamAfterDeliveringWhatArrived) {
  MakeClient(Unlimited());
  transport_->PushStream({R"({"type":"ADDED","object":{}})"
                          "\n{\"type\":\"MODI"},
                         absl::UnavailableError("connection reset"));
  int events = 0;
  const absl::Status status =
      client_->Watch(apps_, {}, [&](WatchEvent&&) { return ++events > 0; }, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(events, 1);
}

TEST_F(HttpKubeClientTest, WatchTurnsGarbageIntoDataLoss) {
  MakeClient(Unlimited());
  transport_->PushStream({"<html>proxy error</html>\n"});
  const absl::Status status = client_->Watch(apps_, {}, [](WatchEvent&&) { return true; }, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
}

TEST_F(HttpKubeClientTest, WatchEndsOkWhenTheHandlerStops) {
  MakeClient(Unlimited());
  transport_->PushStream(
      {"{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADDED\",\"object\":{}}\n"});
  int events = 0;
  const absl::Status status =
      client_->Watch(apps_, {}, [&](WatchEvent&&) { return ++events < 1; }, {});
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(events, 1);
}

}  // namespace
}  // namespace mmi::kube
