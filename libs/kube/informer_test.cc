#include "libs/kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/errors.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "prometheus/registry.h"

namespace mmi::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr milliseconds kWait{5000};  // upper bound for conditions; they normally hold in ms

// Records every callback as "add a 101 initial", "update a 101->102", "delete a", "synced".
class RecordingHandler final : public InformerHandler {
 public:
  void OnAdd(const ObjectPtr& o, bool initial) override {
    {
      absl::MutexLock lock(&mu_);
      if (hold_ == Hold::kArmed) {
        hold_ = Hold::kHolding;
        const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return hold_ == Hold::kReleased;
        };
        mu_.Await(absl::Condition(&ready));
      }
    }
    Push(absl::StrCat("add ", Name(*o), " ", ResourceVersionOf(*o), initial ? " initial" : ""));
  }
  void OnUpdate(const ObjectPtr& old_o, const ObjectPtr& new_o) override {
    Push(absl::StrCat("update ", Name(*new_o), " ", ResourceVersionOf(*old_o), "->",
                      ResourceVersionOf(*new_o)));
  }
  void OnDelete(const ObjectPtr& o) override { Push(absl::StrCat("delete ", Name(*o))); }
  void OnSynced() override { Push("synced"); }

  std::vector<std::string> Events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  bool WaitForCount(size_t n) const {
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(kWait));
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    events_.clear();
  }
  // The next OnAdd blocks (as a slow handler would) until ReleaseFirstAdd().
  void HoldFirstAdd() {
    absl::MutexLock lock(&mu_);
    hold_ = Hold::kArmed;
  }
  bool WaitUntilHeld() {
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return hold_ == Hold::kHolding; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(kWait));
  }
  void ReleaseFirstAdd() {
    absl::MutexLock lock(&mu_);
    hold_ = Hold::kReleased;
  }

 private:
  static std::string Name(const json& o) { return o["metadata"].value("name", ""); }
  void Push(std::string e) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(e));
  }
  enum class Hold { kNone, kArmed, kHolding, kReleased };
  mutable absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  Hold hold_ ABSL_GUARDED_BY(mu_) = Hold::kNone;
};

json App(const std::string& name, const std::string& ns = "argocd") {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"pull", "true"}}}}},
          {"spec", {{"project", "default"}}},
          {"status", {{"sync", {{"status", "Synced"}}}}}};
}

class SecondPageGate;  // below: holds a paged list's second page

// Every behaviour holds for both storage modes (json trees and compact MessagePack bytes).
class InformerTest : public ::testing::TestWithParam<bool> {
 protected:
  friend void RelistAfterOneChange(InformerTest& test, InformerSettings settings);

  InformerSettings Settings() {
    InformerSettings s;
    s.resource = apps_;
    s.page_size = 2;  // exercise paging with a handful of objects
    s.backoff = {.initial = milliseconds(1), .max = milliseconds(5), .multiplier = 2, .jitter = 0};
    s.compact_storage = GetParam();
    s.watch_list = false;  // paged LISTs; the Streamed* tests below cover streamed lists
    return s;
  }
  InformerSettings Streaming() {
    InformerSettings s = Settings();
    s.watch_list = true;
    return s;
  }
  // a..e at 101..105, then an informer whose first list is delivered page by page; returns once
  // page 1 (a, b) has been handed out and `gate` holds page 2.
  void StartDeliveringPages(SecondPageGate& gate);
  // Creates `name` where only a relist sees it: the watch never delivers it and its history is
  // compacted away (the watch's resume then gets a 410).
  void CreateWhereOnlyARelistSeesIt(const std::string& name) {
    fake_.SetWatchDeliveryPaused(true);
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
    fake_.Compact();
    fake_.SetWatchDeliveryPaused(false);
  }
  // "a" on the hub; an informer whose first streamed list breaks before its end bookmark, so a
  // paged LIST replaces it (once: "a" is added once). Returns once that list has synced.
  void StartAndBreakTheFirstStream(InformerSettings settings) {
    ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
    fake_.SetInitialEventsEndHeld(true);
    Start(std::move(settings));
    ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
    fake_.BreakWatches(absl::UnavailableError("connection reset"));  // before the end bookmark
    ASSERT_TRUE(informer_->WaitForSynced(kWait));
    ASSERT_TRUE(handler_.WaitForCount(2));
    EXPECT_THAT(handler_.Events(), ElementsAre("add a 101 initial", "synced"));  // once
    EXPECT_EQ(fake_.CountCalls("LIST"), 1u);
  }
  // mmi_kube_lists_total of the Application informer read `how` ("streamed" or "paged").
  double ListsTotal(const std::string& how) {
    return Metric("mmi_kube_lists_total", {{"resource", "applications.argoproj.io"}, {"how", how}});
  }
  size_t StreamedListRequests() {
    size_t n = 0;
    for (const auto& call : fake_.Calls()) {
      n += call.verb == "WATCH" && call.detail == "sendInitialEvents" ? 1 : 0;
    }
    return n;
  }
  void Start(InformerSettings settings) {
    informer_ = std::make_unique<Informer>(fake_, clock_, std::move(settings), &registry_);
    informer_->AddHandler(handler_);
    informer_->Start();
  }
  double Metric(const std::string& name, const std::map<std::string, std::string>& labels) {
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
          return family.type == prometheus::MetricType::Gauge ? metric.gauge.value
                                                              : metric.counter.value;
        }
      }
    }
    return 0;
  }
  // Waits until the informer has synced, applied its list and what its watch buffered meanwhile,
  // and is watching: from then on each change reaches the handlers as it happens.
  bool Steady() {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (informer_->HasSynced() && !informer_->Listing() && fake_.OpenWatches() >= 1) {
        return true;
      }
      fake_.WaitForOpenWatches(1, milliseconds(5));
      std::this_thread::sleep_for(milliseconds(1));
    }
    return false;
  }
  // Waits until the watch has buffered exactly `count` events (while a list is applied).
  bool WaitForBuffered(int64_t count) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (informer_->Stats().buffered_events < count &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return informer_->Stats().buffered_events == count;
  }
  // Waits until the watch has applied exactly `count` events while a paged list was read.
  bool WaitForAppliedWhileListing(int64_t count) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (informer_->Stats().applied_while_listing < count &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return informer_->Stats().applied_while_listing == count;
  }
  // The resourceVersion the newest watch request started from.
  std::string LastWatchFrom() {
    std::string from;
    for (const auto& call : fake_.Calls()) {
      if (call.verb == "WATCH") {
        from = call.detail;
      }
    }
    return from;
  }
  // Waits until the informer is watching again after something ended its watch.
  bool WaitForWatches(size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fake_.CountCalls("WATCH") >= count && fake_.OpenWatches() >= 1) {
        return true;
      }
      fake_.WaitForOpenWatches(1, milliseconds(10));
    }
    return false;
  }

  const ResourceRef apps_{"argoproj.io", "v1alpha1", "applications", "argocd"};
  testing::FakeKubeClient fake_;
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
  RecordingHandler handler_;
  std::unique_ptr<Informer> informer_;
};

// A relist that finds most objects at their cached version: only the changed one is transformed
// and stored again; the others keep the snapshot readers hold (no second copy of the cache).
void RelistAfterOneChange(InformerTest& test, InformerSettings settings) {
  for (const char* name : {"keep1", "keep2", "change"}) {
    ASSERT_TRUE(test.fake_.Create(test.apps_, App(name), {}).ok());
  }
  auto transformed = std::make_shared<std::atomic<int>>(0);
  settings.transform = [transformed](json& /*object*/) { ++*transformed; };
  test.Start(std::move(settings));
  ASSERT_TRUE(test.Steady());
  EXPECT_EQ(transformed->load(), 3);
  const ObjectPtr kept = test.informer_->Get("argocd", "keep1");
  test.handler_.Clear();
  test.fake_.SetWatchDeliveryPaused(true);
  auto change = *test.fake_.Get(test.apps_, "change");
  change["spec"]["project"] = "p2";
  ASSERT_TRUE(test.fake_.Update(test.apps_, change, {}).ok());
  test.fake_.Compact();
  test.fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(test.handler_.WaitForCount(1));
  EXPECT_THAT(test.handler_.Events(), ElementsAre("update change 103->104"));
  ASSERT_TRUE(test.WaitForWatches(2));
  ASSERT_TRUE(test.Steady());
  EXPECT_EQ(test.informer_->Stats().lists, 2);
  EXPECT_EQ(transformed->load(), 4);  // the changed object only
  if (!test.GetParam()) {
    EXPECT_EQ(test.informer_->Get("argocd", "keep1"), kept);  // the very snapshot
  }
  EXPECT_EQ(*test.informer_->Get("argocd", "keep1"), *kept);
  EXPECT_THAT(test.informer_->Keys(),
              ::testing::UnorderedElementsAre("argocd/keep1", "argocd/keep2", "argocd/change"));
  EXPECT_THAT(test.informer_->Keys("other"), ::testing::IsEmpty());
}

TEST_P(InformerTest, ListsAllPagesDeliversInitialAddsThenSynced) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  Start(Settings());
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(6));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "add c 103 initial",
                          "add d 104 initial", "add e 105 initial", "synced"));
  EXPECT_EQ(informer_->Size(), 5u);
  EXPECT_EQ(fake_.CountCalls("LIST"), 3u);  // pages of 2
  EXPECT_EQ(informer_->ResourceVersion(), "105");
  ASSERT_TRUE(Steady());
  EXPECT_EQ(LastWatchFrom(), "105");  // the watch starts at the (first page's) list version
}

TEST_P(InformerTest, AppliesWatchEventsToTheCacheAndHandlers) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  Start(Settings());
  ASSERT_TRUE(Steady());
  handler_.Clear();
  ASSERT_TRUE(fake_.Create(apps_, App("b"), {}).ok());
  auto a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "other";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());
  ASSERT_TRUE(fake_.Delete(apps_, "b", {}).ok());
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_THAT(handler_.Events(), ElementsAre("add b 102", "update a 101->103", "delete b"));
  EXPECT_EQ((*informer_->Get("argocd", "a"))["spec"]["project"], "other");
  EXPECT_EQ(informer_->Get("argocd", "b"), nullptr);
  EXPECT_EQ(informer_->ResourceVersion(), "104");
  EXPECT_EQ(informer_->Stats().events, 3);
}

TEST_P(InformerTest, ResumesFromTheLastSeenVersionAfterTheServerEndsTheWatch) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  Start(Settings());
  ASSERT_TRUE(Steady());
  ASSERT_TRUE(fake_.Create(apps_, App("b"), {}).ok());
  ASSERT_TRUE(handler_.WaitForCount(3));
  fake_.CloseWatches();  // timeoutSeconds reached
  ASSERT_TRUE(WaitForWatches(2));
  const auto calls = fake_.Calls();
  EXPECT_EQ(calls.back().verb, "WATCH");
  EXPECT_EQ(calls.back().detail, "102");
  EXPECT_EQ(fake_.CountCalls("LIST"), 1u);  // no relist
  EXPECT_EQ(Metric("mmi_kube_watch_restarts_total",
                   {{"resource", "applications.argoproj.io"}, {"reason", "closed"}}),
            1);
}

TEST_P(InformerTest, BacksOffAndResumesAfterAConnectionDrop) {
  Start(Settings());
  ASSERT_TRUE(Steady());
  fake_.FailNext("WATCH", absl::UnavailableError("connection refused"));
  fake_.BreakWatches(absl::UnavailableError("connection reset"));
  ASSERT_TRUE(WaitForWatches(3));
  ASSERT_TRUE(fake_.Create(apps_, App("late"), {}).ok());
  ASSERT_TRUE(handler_.WaitForCount(2));
  EXPECT_EQ(handler_.Events().back(), "add late 101");
  EXPECT_EQ(informer_->Stats().watch_errors, 2);
  EXPECT_EQ(Metric("mmi_kube_watch_restarts_total",
                   {{"resource", "applications.argoproj.io"}, {"reason", "error"}}),
            2);
}

TEST_P(InformerTest, RelistsOn410AndReportsWhatChangedWhileItWasBlind) {
  for (const char* name : {"keep", "change", "gone"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  Start(Settings());
  ASSERT_TRUE(Steady());
  handler_.Clear();
  // Changes the watch never delivers, then the history is compacted away: only a relist and
  // a diff against the cache can find them.
  fake_.SetWatchDeliveryPaused(true);
  auto change = *fake_.Get(apps_, "change");
  change["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, change, {}).ok());
  ASSERT_TRUE(fake_.Delete(apps_, "gone", {}).ok());
  ASSERT_TRUE(fake_.Create(apps_, App("new"), {}).ok());
  fake_.Compact();
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_THAT(handler_.Events(), ::testing::UnorderedElementsAre(
                                     "add new 106", "update change 102->104", "delete gone"));
  EXPECT_EQ(informer_->Size(), 3u);
  EXPECT_EQ(informer_->Stats().lists, 2);
  EXPECT_EQ(informer_->Stats().expired, 1);
  EXPECT_EQ(Metric("mmi_kube_relists_total", {{"resource", "applications.argoproj.io"}}), 1);
  EXPECT_EQ(Metric("mmi_kube_watch_restarts_total",
                   {{"resource", "applications.argoproj.io"}, {"reason", "expired"}}),
            1);
  // Unchanged objects keep their snapshot: readers holding it see no churn.
  ASSERT_TRUE(WaitForWatches(2));
  ASSERT_TRUE(Steady());
  EXPECT_EQ(LastWatchFrom(), informer_->ResourceVersion());
}

TEST_P(InformerTest, PagedRelistTransformsOnlyWhatChangedAndKeepsTheCachedSnapshots) {
  RelistAfterOneChange(*this, Settings());
}

TEST_P(InformerTest, StreamedRelistTransformsOnlyWhatChangedAndKeepsTheCachedSnapshots) {
  RelistAfterOneChange(*this, Streaming());
}

TEST_P(InformerTest, RelistsWhenTheWatchRequestItselfFailsWith410) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  fake_.SetGoneAsHttpError(true);
  Start(Settings());
  ASSERT_TRUE(Steady());
  fake_.SetWatchDeliveryPaused(true);
  ASSERT_TRUE(fake_.Delete(apps_, "a", {}).ok());
  fake_.Compact(/*expire_open_watches=*/false);
  fake_.CloseWatches();  // the resume from the old version now gets HTTP 410
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_EQ(handler_.Events().back(), "delete a");
  EXPECT_EQ(informer_->Stats().expired, 1);
  EXPECT_EQ(informer_->Stats().lists, 2);
}

// Holds a paged LIST's second page (the first request with a continue token) until Release().
class SecondPageGate {
 public:
  explicit SecondPageGate(testing::FakeKubeClient& fake) : fake_(fake) {
    fake_.SetBeforeListPage([this](const ListOptions&) {
      absl::MutexLock lock(&mu_);
      if (held_) {
        return;  // only the second page waits
      }
      held_ = true;
      const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return released_; };
      mu_.Await(absl::Condition(&ready));
    });
  }
  ~SecondPageGate() {
    Release();
    fake_.SetBeforeListPage(nullptr);
  }
  bool WaitUntilHeld() {
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(kWait));
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }

 private:
  testing::FakeKubeClient& fake_;
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

// A paged LIST that outlasts the watch cache's history must not end in 410: the watch starts
// from the first page's version while the other pages are read. What it delivers meanwhile
// reaches the cache and the handlers at once (a restarted controller is never blind for the
// length of a list), and the list's replace keeps that newer state.
TEST_P(InformerTest, PagedListWatchesFromItsFirstPageAndAppliesChangesAtOnce) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());  // 101..105
  }
  SecondPageGate gate(fake_);
  Start(Settings());
  ASSERT_TRUE(gate.WaitUntilHeld());
  // Half-way through the list (a, b read; c, d, e not yet) the watch is already open.
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  EXPECT_EQ(LastWatchFrom(), "105");
  EXPECT_TRUE(informer_->Listing());
  EXPECT_FALSE(informer_->HasSynced());
  auto a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());            // 106: a was listed at 101
  ASSERT_TRUE(fake_.Create(apps_, App("0new"), {}).ok());  // 107: sorts before the list's cursor
  ASSERT_TRUE(fake_.Delete(apps_, "b", {}).ok());          // 108: b was listed
  ASSERT_TRUE(fake_.Delete(apps_, "e", {}).ok());          // 109: e is never listed
  ASSERT_TRUE(WaitForAppliedWhileListing(4));
  fake_.CloseWatches();  // the watch's timeout: it resumes from what it delivered
  ASSERT_TRUE(WaitForWatches(2));
  EXPECT_EQ(LastWatchFrom(), "109");
  a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "p3";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());  // 110
  ASSERT_TRUE(handler_.WaitForCount(3));
  // Before the list is complete: the changes are cached and handed out already (the deletes
  // found nothing cached yet, so nobody hears of b and e).
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 106", "add 0new 107", "update a 106->110"));
  EXPECT_EQ((*informer_->Get("argocd", "a"))["spec"]["project"], "p3");
  EXPECT_FALSE(informer_->HasSynced());
  gate.Release();
  ASSERT_TRUE(Steady());
  // The replace keeps a@110, 0new (never listed) and b's deletion; c and d come from the list.
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 106", "add 0new 107", "update a 106->110",
                                             "add c 103 initial", "add d 104 initial", "synced"));
  EXPECT_EQ(informer_->Size(), 4u);  // a, c, d, 0new
  EXPECT_EQ((*informer_->Get("argocd", "a"))["spec"]["project"], "p3");
  EXPECT_EQ(informer_->ResourceVersion(), "110");
  EXPECT_EQ(informer_->Stats().lists, 1);
  EXPECT_EQ(informer_->Stats().expired, 0);
  EXPECT_EQ(informer_->Stats().applied_while_listing, 5);
  EXPECT_EQ(informer_->Stats().buffered_events, 0);
  // And the watch goes on applying changes as they come.
  ASSERT_TRUE(fake_.Create(apps_, App("f"), {}).ok());  // 111
  ASSERT_TRUE(handler_.WaitForCount(7));
  EXPECT_EQ(handler_.Events().back(), "add f 111");
}

void InformerTest::StartDeliveringPages(SecondPageGate& gate) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());  // 101..105
  }
  InformerSettings settings = Settings();
  settings.deliver_first_list_pages = true;
  Start(std::move(settings));
  ASSERT_TRUE(gate.WaitUntilHeld());
}

// deliver_first_list_pages: a cold start's handlers get each page's objects as it arrives; the
// watch's changes meanwhile are updates of those (or adds of what no page held yet), a delete
// of a delivered object reaches OnDelete, and the replace adds only what was not delivered.
TEST_P(InformerTest, FirstListDeliveredPageByPage) {
  SecondPageGate gate(fake_);
  ASSERT_NO_FATAL_FAILURE(StartDeliveringPages(gate));
  ASSERT_TRUE(handler_.WaitForCount(2));
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 101 initial", "add b 102 initial"));
  EXPECT_FALSE(informer_->HasSynced());
  EXPECT_EQ(informer_->Size(), 2u);
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "b"), "102");
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  auto a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());            // 106
  ASSERT_TRUE(fake_.Create(apps_, App("0new"), {}).ok());  // 107
  ASSERT_TRUE(fake_.Delete(apps_, "b", {}).ok());          // 108: delivered from page 1
  auto c = *fake_.Get(apps_, "c");
  c["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, c, {}).ok());  // 109: c's page is still to come
  ASSERT_TRUE(WaitForAppliedWhileListing(4));
  ASSERT_TRUE(handler_.WaitForCount(6));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "update a 101->106",
                          "add 0new 107", "delete b", "add c 109"));
  gate.Release();
  ASSERT_TRUE(Steady());
  // Page 2 brings c as the watch left it (the fake lists its current state, so a marker) and d;
  // page 3 e; nothing twice.
  EXPECT_THAT(
      handler_.Events(),
      ElementsAre("add a 101 initial", "add b 102 initial", "update a 101->106", "add 0new 107",
                  "delete b", "add c 109", "add d 104 initial", "add e 105 initial", "synced"));
  EXPECT_EQ(informer_->Size(), 5u);  // a, c, d, e, 0new
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "a"), "106");
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "c"), "109");
  EXPECT_EQ(informer_->Get("argocd", "b"), nullptr);
  EXPECT_EQ(informer_->Stats().delivered_from_pages, 4);  // a, b, d, e
  EXPECT_EQ(informer_->Stats().lists, 1);
  // A relist is not delivered page by page: it diffs against the cache as before.
  handler_.Clear();
  auto d = *fake_.Get(apps_, "d");
  fake_.SetWatchDeliveryPaused(true);
  d["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, d, {}).ok());    // 110
  ASSERT_TRUE(fake_.Delete(apps_, "e", {}).ok());  // 111
  fake_.Compact();
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(handler_.WaitForCount(2));
  ASSERT_TRUE(WaitForWatches(2));
  ASSERT_TRUE(Steady());
  EXPECT_THAT(handler_.Events(), ElementsAre("update d 104->110", "delete e"));
  EXPECT_EQ(informer_->Stats().delivered_from_pages, 4);
}

// A listed object whose key the watch has touched is not delivered from its page: the watch's
// state is the newer one, and the replace decides (here: c deleted by the watch, then created
// again where only the list sees it, so the replace adds it, after the pages).
TEST_P(InformerTest, FirstListPagesLeaveWhatTheWatchTouchedToTheReplace) {
  SecondPageGate gate(fake_);
  ASSERT_NO_FATAL_FAILURE(StartDeliveringPages(gate));
  ASSERT_TRUE(handler_.WaitForCount(2));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  ASSERT_TRUE(fake_.Delete(apps_, "c", {}).ok());  // 106: touched, nothing cached to delete
  ASSERT_TRUE(WaitForAppliedWhileListing(1));
  fake_.SetWatchDeliveryPaused(true);
  ASSERT_TRUE(fake_.Create(apps_, App("c"), {}).ok());  // 107: listed by page 2 only
  gate.Release();
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(6));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "add d 104 initial",
                          "add e 105 initial", "add c 107 initial", "synced"));
  EXPECT_EQ(informer_->Stats().delivered_from_pages, 4);  // a, b, d, e
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(Steady());
  ASSERT_TRUE(fake_.Create(apps_, App("f"), {}).ok());  // 108
  ASSERT_TRUE(handler_.WaitForCount(7));
  EXPECT_EQ(handler_.Events().back(), "add f 108");  // c@107 from the watch changed nothing
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "c"), "107");
}

// A relist (after 410) of a full cache: the watch's changes while the pages are read reach the
// handlers at once, also for objects the list had already read as unchanged, and the replace
// keeps them (an object the watch deleted stays deleted, though the snapshot lists it).
TEST_P(InformerTest, PagedRelistAppliesChangesAtOnceAndKeepsThem) {
  for (const char* name : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());  // 101..104
  }
  Start(Settings());
  ASSERT_TRUE(Steady());
  handler_.Clear();
  SecondPageGate gate(fake_);
  fake_.Compact(/*expire_open_watches=*/true);  // 410: relist
  ASSERT_TRUE(gate.WaitUntilHeld());
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  auto a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());         // 105: a was read on page 1, unchanged then
  ASSERT_TRUE(fake_.Delete(apps_, "c", {}).ok());       // 106: c is on the held page 2
  ASSERT_TRUE(fake_.Create(apps_, App("e"), {}).ok());  // 107
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_THAT(handler_.Events(), ElementsAre("update a 101->105", "delete c", "add e 107"));
  EXPECT_TRUE(informer_->Listing());
  gate.Release();
  ASSERT_TRUE(Steady());
  EXPECT_THAT(handler_.Events(), ElementsAre("update a 101->105", "delete c", "add e 107"));
  EXPECT_EQ(informer_->Size(), 4u);  // a, b, d, e
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "a"), "105");
  EXPECT_EQ(informer_->Get("argocd", "c"), nullptr);
  EXPECT_EQ(informer_->ResourceVersion(), "107");
  EXPECT_EQ(informer_->Stats().lists, 2);
  EXPECT_EQ(informer_->Stats().applied_while_listing, 3);
}

// A paged LIST longer than etcd's compaction interval loses its continue token. With the watch
// open since the first page, the list goes on from the next key at the current state (the
// token the 410 carries) instead of one unpaged LIST of everything; a buffered event older than
// what a later page held does not take the object back.
TEST_P(InformerTest, PagedListWhoseContinueTokenExpiresGoesOnAtTheCurrentState) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());  // 101..105
  }
  SecondPageGate gate(fake_);
  Start(Settings());
  ASSERT_TRUE(gate.WaitUntilHeld());
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  auto c = *fake_.Get(apps_, "c");
  c["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, c, {}).ok());  // 106: delivered and applied at once
  ASSERT_TRUE(WaitForAppliedWhileListing(1));
  fake_.Compact(/*expire_open_watches=*/false);  // the list's continue token is too old now
  fake_.SetWatchDeliveryPaused(true);
  c = *fake_.Get(apps_, "c");
  c["spec"]["project"] = "p3";
  ASSERT_TRUE(fake_.Update(apps_, c, {}).ok());    // 107: listed, not yet watched
  ASSERT_TRUE(fake_.Delete(apps_, "e", {}).ok());  // 108: never listed
  gate.Release();
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!informer_->HasSynced() || informer_->Listing()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(milliseconds(1));
  }
  // c@106 was applied at once; the later page's c@107 is newer and replaces it; the watch's
  // own c@107, when it comes, finds that very version cached.
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "c"), "107");
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(Steady());
  ASSERT_TRUE(fake_.Create(apps_, App("f"), {}).ok());  // 109
  ASSERT_TRUE(handler_.WaitForCount(7));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add c 106", "add a 101 initial", "add b 102 initial",
                          "add d 104 initial", "update c 106->107", "synced", "add f 109"));
  EXPECT_EQ(informer_->Size(), 5u);
  EXPECT_EQ((*informer_->Get("argocd", "c"))["spec"]["project"], "p3");
  const InformerStats stats = informer_->Stats();
  EXPECT_EQ(stats.inconsistent_continues, 1);
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.expired, 0);
  EXPECT_EQ(Metric("mmi_kube_list_inconsistent_continues_total",
                   {{"resource", "applications.argoproj.io"}}),
            1);
  // first page, the expired continue (410), then the rest (c, d) from the 410's token
  std::vector<std::string> continues;
  for (const auto& call : fake_.Calls()) {
    if (call.verb == "LIST") {
      continues.push_back(call.detail);
    }
  }
  EXPECT_THAT(continues, ElementsAre("", "105:argocd/b", "-1:argocd/b"));
}

// With the first list delivered page by page, pages read past an expired continue token are
// not delivered: they may be newer than the watch, which could then hand out an older version
// after them. The replace takes them in (and guards against the watch's older events).
TEST_P(InformerTest, FirstListStopsDeliveringPagesAtAnInconsistentContinue) {
  SecondPageGate gate(fake_);
  ASSERT_NO_FATAL_FAILURE(StartDeliveringPages(gate));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  auto c = *fake_.Get(apps_, "c");
  c["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, c, {}).ok());  // 106
  ASSERT_TRUE(WaitForAppliedWhileListing(1));
  fake_.Compact(/*expire_open_watches=*/false);
  fake_.SetWatchDeliveryPaused(true);
  c = *fake_.Get(apps_, "c");
  c["spec"]["project"] = "p3";
  ASSERT_TRUE(fake_.Update(apps_, c, {}).ok());    // 107: listed, not yet watched
  ASSERT_TRUE(fake_.Delete(apps_, "e", {}).ok());  // 108
  gate.Release();
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  fake_.SetWatchDeliveryPaused(false);
  ASSERT_TRUE(Steady());
  ASSERT_TRUE(fake_.Create(apps_, App("f"), {}).ok());  // 109
  ASSERT_TRUE(handler_.WaitForCount(7));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "add c 106",
                          "add d 104 initial", "update c 106->107", "synced", "add f 109"));
  EXPECT_EQ(informer_->Stats().delivered_from_pages, 2);  // page 1 only
  EXPECT_EQ(informer_->Stats().inconsistent_continues, 1);
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "c"), "107");
  EXPECT_EQ(informer_->Size(), 5u);
}

// Without a token in the 410 (older servers) the list restarts as one unpaged LIST.
TEST_P(InformerTest, PagedListWhoseContinueTokenExpiresWithoutAFreshTokenListsOnceUnpaged) {
  fake_.SetContinueOnExpiry(false);
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  bool compacted = false;
  fake_.SetBeforeListPage([&](const ListOptions&) {
    if (!compacted) {
      compacted = true;
      ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));      // else the watch itself would get 410
      ASSERT_TRUE(fake_.Create(apps_, App("d"), {}).ok());  // 104
      ASSERT_TRUE(WaitForAppliedWhileListing(1));           // the watch hands d out at once
      fake_.Compact(/*expire_open_watches=*/false);
    }
  });
  Start(Settings());
  ASSERT_TRUE(Steady());
  ASSERT_TRUE(handler_.WaitForCount(5));
  // The unpaged LIST holds d@104 too: the replace keeps the watch's (the same version).
  EXPECT_THAT(handler_.Events(), ElementsAre("add d 104", "add a 101 initial", "add b 102 initial",
                                             "add c 103 initial", "synced"));
  EXPECT_EQ(informer_->Stats().inconsistent_continues, 0);
  EXPECT_EQ(informer_->Stats().lists, 1);
  EXPECT_EQ(fake_.CountCalls("LIST"), 3u);  // first page, the expired continue, one unpaged LIST
}

TEST_P(InformerTest, PagedListFailingAfterItsWatchStartedEndsTheWatchAndListsAgain) {
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  bool failed_once = false;
  fake_.SetBeforeListPage([&](const ListOptions&) {
    if (!failed_once) {
      failed_once = true;
      fake_.FailNext("LIST", absl::UnavailableError("connection reset"));
    }
  });
  Start(Settings());
  ASSERT_TRUE(Steady());
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "add c 103 initial", "synced"));
  EXPECT_EQ(informer_->Stats().lists, 1);
  EXPECT_EQ(fake_.CountCalls("LIST"), 4u);   // 2 pages (the second failed), then 2 pages
  EXPECT_EQ(fake_.CountCalls("WATCH"), 2u);  // the first list's watch ended with it
  EXPECT_EQ(Metric("mmi_kube_watch_restarts_total",
                   {{"resource", "applications.argoproj.io"}, {"reason", "list_failed"}}),
            0);
}

// The API server ends a watcher that does not keep up ("slow watcher"): the stream must be read
// while the cache is replaced and handlers run, however long that takes.
TEST_P(InformerTest, StreamedListIsReplacedOffTheStreamWhichGoesOnBeingRead) {
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  handler_.HoldFirstAdd();
  Start(Streaming());
  ASSERT_TRUE(handler_.WaitUntilHeld());                // the replace is in its first OnAdd
  ASSERT_TRUE(fake_.Create(apps_, App("c"), {}).ok());  // 103
  ASSERT_TRUE(fake_.Delete(apps_, "b", {}).ok());       // 104
  ASSERT_TRUE(WaitForBuffered(2));                      // read while the handler is held
  handler_.ReleaseFirstAdd();
  ASSERT_TRUE(Steady());
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 101 initial", "add b 102 initial", "synced",
                                             "add c 103", "delete b"));
  EXPECT_EQ(informer_->Size(), 2u);
  EXPECT_EQ(informer_->ResourceVersion(), "104");
  EXPECT_EQ(fake_.CountCalls("WATCH"), 1u);
}

TEST_P(InformerTest, BookmarksAdvanceTheResumeVersionWithoutEvents) {
  Start(Settings());
  ASSERT_TRUE(Steady());
  const std::string before = informer_->ResourceVersion();
  // Another collection moves the global version; our watch only sees a bookmark.
  ASSERT_TRUE(fake_
                  .Create(ResourceRef{"", "v1", "configmaps", "argocd"},
                          json{{"metadata", {{"name", "cm"}}}}, {})
                  .ok());
  fake_.SendBookmark();
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (informer_->ResourceVersion() == before && std::chrono::steady_clock::now() < deadline) {
    fake_.WaitForOpenWatches(2, milliseconds(5));
  }
  EXPECT_EQ(informer_->ResourceVersion(), fake_.CurrentResourceVersion());
  EXPECT_EQ(informer_->Stats().events, 0);
  EXPECT_THAT(handler_.Events(), ElementsAre("synced"));
}

TEST_P(InformerTest, StreamedListSyncsAndWatchesOnTheSameStream) {
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  Start(Streaming());
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(4));
  EXPECT_THAT(handler_.Events(),
              ElementsAre("add a 101 initial", "add b 102 initial", "add c 103 initial", "synced"));
  EXPECT_EQ(informer_->ResourceVersion(), "103");  // the end bookmark's
  ASSERT_TRUE(fake_.Create(apps_, App("d"), {}).ok());
  ASSERT_TRUE(handler_.WaitForCount(5));
  EXPECT_EQ(handler_.Events().back(), "add d 104");
  EXPECT_EQ(fake_.CountCalls("LIST"), 0u);
  EXPECT_EQ(fake_.CountCalls("WATCH"), 1u);  // the list and its watch are one request
  EXPECT_EQ(StreamedListRequests(), 1u);
  EXPECT_EQ(informer_->Stats().lists, 1);
  EXPECT_EQ(informer_->Stats().streamed_lists, 1);
  EXPECT_EQ(informer_->ResourceVersion(), "104");
}

TEST_P(InformerTest, StreamedListTakesInChangesThatArriveBeforeItsEndBookmark) {
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  fake_.SetInitialEventsEndHeld(true);
  Start(Streaming());
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  auto a = *fake_.Get(apps_, "a");
  a["spec"]["project"] = "p2";
  ASSERT_TRUE(fake_.Update(apps_, a, {}).ok());              // 103
  ASSERT_TRUE(fake_.Delete(apps_, "b", {}).ok());            // 104
  ASSERT_TRUE(fake_.Create(apps_, App("c"), {}).ok());       // 105
  EXPECT_FALSE(informer_->WaitForSynced(milliseconds(50)));  // no end bookmark yet
  EXPECT_THAT(handler_.Events(), IsEmpty());
  fake_.SendBookmark();
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 103 initial", "add c 105 initial", "synced"));
  EXPECT_EQ(informer_->Size(), 2u);
  EXPECT_EQ((*informer_->Get("argocd", "a"))["spec"]["project"], "p2");
}

TEST_P(InformerTest, StreamedListFallsBackToPagedListsForGoodWhenTheServerCannotStream) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  fake_.SetWatchListSupported(false);  // a 500 naming RequestWatchProgress, as with etcd 3.4
  Start(Streaming());
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(2));
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 101 initial", "synced"));
  EXPECT_EQ(fake_.CountCalls("LIST"), 1u);
  EXPECT_EQ(informer_->Stats().watch_list_fallbacks, 1);
  EXPECT_EQ(informer_->Stats().streamed_lists, 0);
  // A 410 later: the relist is a paged LIST at once, no second streamed attempt.
  ASSERT_TRUE(fake_.WaitForOpenWatches(1, kWait));
  fake_.Compact();
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (informer_->Stats().lists < 2 && std::chrono::steady_clock::now() < deadline) {
    fake_.WaitForOpenWatches(2, milliseconds(5));
  }
  EXPECT_EQ(informer_->Stats().lists, 2);
  EXPECT_EQ(fake_.CountCalls("LIST"), 2u);
  EXPECT_EQ(StreamedListRequests(), 1u);
}

TEST_P(InformerTest, StreamedListBrokenBeforeItsEndIsReplacedByOneListThenStreamsAgain) {
  ASSERT_NO_FATAL_FAILURE(StartAndBreakTheFirstStream(Streaming()));
  EXPECT_EQ(informer_->Stats().watch_list_fallbacks, 1);
  // The next relist (after a 410) streams again and diffs against the cache.
  fake_.SetInitialEventsEndHeld(false);
  ASSERT_TRUE(WaitForWatches(2));
  handler_.Clear();
  ASSERT_NO_FATAL_FAILURE(CreateWhereOnlyARelistSeesIt("b"));
  ASSERT_TRUE(handler_.WaitForCount(1));
  EXPECT_THAT(handler_.Events(), ElementsAre("add b 102"));
  EXPECT_EQ(informer_->Stats().lists, 2);
  EXPECT_EQ(informer_->Stats().streamed_lists, 1);
  EXPECT_EQ(StreamedListRequests(), 2u);
  EXPECT_EQ(fake_.CountCalls("LIST"), 1u);
}

TEST_P(InformerTest, StreamedFirstListOnlyRelistsInPages) {
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(fake_.Create(apps_, App(name), {}).ok());
  }
  InformerSettings settings = Streaming();
  settings.stream_first_list_only = true;
  Start(std::move(settings));
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  ASSERT_TRUE(handler_.WaitForCount(3));
  EXPECT_THAT(handler_.Events(), ElementsAre("add a 101 initial", "add b 102 initial", "synced"));
  EXPECT_EQ(StreamedListRequests(), 1u);
  EXPECT_EQ(fake_.CountCalls("LIST"), 0u);
  // A 410: the relist is paged (its watch hands out changes while the pages are read).
  handler_.Clear();
  ASSERT_NO_FATAL_FAILURE(CreateWhereOnlyARelistSeesIt("c"));
  ASSERT_TRUE(handler_.WaitForCount(1));
  EXPECT_THAT(handler_.Events(), ElementsAre("add c 103"));
  EXPECT_EQ(informer_->Stats().lists, 2);
  EXPECT_EQ(informer_->Stats().streamed_lists, 1);
  EXPECT_EQ(StreamedListRequests(), 1u);
  EXPECT_EQ(fake_.CountCalls("LIST"), 2u);  // a, b then c: one page of two, one of one
  EXPECT_EQ(informer_->Size(), 3u);
  EXPECT_EQ(ListsTotal("streamed"), 1);
  EXPECT_EQ(ListsTotal("paged"), 1);
}

TEST_P(InformerTest, StreamedFirstListOnlyThatBreaksIsListedInPagesAndNeverStreamsAgain) {
  InformerSettings settings = Streaming();
  settings.stream_first_list_only = true;
  ASSERT_NO_FATAL_FAILURE(StartAndBreakTheFirstStream(std::move(settings)));
  fake_.SetInitialEventsEndHeld(false);
  // A 410 later: the relist is paged too.
  ASSERT_TRUE(WaitForWatches(2));
  handler_.Clear();
  ASSERT_NO_FATAL_FAILURE(CreateWhereOnlyARelistSeesIt("b"));
  ASSERT_TRUE(handler_.WaitForCount(1));
  EXPECT_THAT(handler_.Events(), ElementsAre("add b 102"));
  EXPECT_EQ(StreamedListRequests(), 1u);
  EXPECT_EQ(fake_.CountCalls("LIST"), 2u);
  EXPECT_EQ(informer_->Stats().streamed_lists, 0);
  EXPECT_EQ(ListsTotal("streamed"), 0);
  EXPECT_EQ(ListsTotal("paged"), 2);
}

TEST_P(InformerTest, TransformRunsBeforeObjectsAreCachedOrHandedOut) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  InformerSettings settings = Settings();
  settings.transform = DropFields({"/status", "/metadata/managedFields", "/no/such/field"});
  Start(settings);
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  const ObjectPtr a = informer_->Get("argocd", "a");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->contains("status"));
  EXPECT_EQ((*a)["spec"]["project"], "default");
}

TEST_P(InformerTest, ListsByNamespaceAndAppliesSelectors) {
  const ResourceRef all = apps_.InNamespace("");
  ASSERT_TRUE(fake_.Create(all, App("a", "ns1"), {}).ok());
  ASSERT_TRUE(fake_.Create(all, App("b", "ns2"), {}).ok());
  json unlabeled = App("c", "ns1");
  unlabeled["metadata"].erase("labels");
  ASSERT_TRUE(fake_.Create(all, unlabeled, {}).ok());
  InformerSettings settings = Settings();
  settings.resource = all;
  settings.label_selector = "pull=true";
  Start(settings);
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  EXPECT_EQ(informer_->Size(), 2u);
  EXPECT_EQ(informer_->List("ns1").size(), 1u);
  EXPECT_EQ(informer_->List().size(), 2u);
  EXPECT_NE(informer_->Get("ns2", "b"), nullptr);
  EXPECT_EQ(informer_->Get("ns1", "c"), nullptr);
  EXPECT_EQ(Metric("mmi_kube_cache_objects", {{"resource", "applications.argoproj.io"}}), 2);
}

TEST_P(InformerTest, RetriesAFailedListWithBackoff) {
  fake_.FailNext("LIST", absl::UnavailableError("apiserver down"));
  fake_.FailNext("LIST", absl::PermissionDeniedError("rbac"));
  Start(Settings());
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  EXPECT_EQ(fake_.CountCalls("LIST"), 3u);
}

TEST_P(InformerTest, StopEndsAnIdleWatchPromptly) {
  Start(Settings());
  ASSERT_TRUE(Steady());
  const auto before = std::chrono::steady_clock::now();
  informer_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(500));
  EXPECT_EQ(fake_.OpenWatches(), 0);
  informer_->Stop();  // idempotent
}

TEST_P(InformerTest, ReadersGetEqualObjectsAndVersionsWithoutDecoding) {
  ASSERT_TRUE(fake_.Create(apps_, App("a"), {}).ok());
  Start(Settings());
  ASSERT_TRUE(informer_->WaitForSynced(kWait));
  const json stored = *fake_.Get(apps_, "a");
  EXPECT_EQ(*informer_->Get("argocd", "a"), stored);
  EXPECT_EQ(*informer_->List().at(0), stored);
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "a"), "101");
  EXPECT_EQ(informer_->ResourceVersionOf("argocd", "zzz"), "");
}

INSTANTIATE_TEST_SUITE_P(StorageModes, InformerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Compact" : "Trees";
                         });

TEST(DropFieldsTest, ErasesNestedFieldsAndIgnoresAbsentOnes) {
  json object = {{"metadata", {{"name", "a"}, {"managedFields", json::array()}}},
                 {"status", {{"x", 1}}},
                 {"spec", 1}};
  DropFields({"/status", "/metadata/managedFields", "/spec/deep", "/absent/x"})(object);
  EXPECT_EQ(object, json({{"metadata", {{"name", "a"}}}, {"spec", 1}}));
}

}  // namespace
}  // namespace mmi::kube
