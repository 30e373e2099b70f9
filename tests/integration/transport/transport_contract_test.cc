// The transport contract: every Publisher/Subscriber implementation, the fake included, passes
// the same tests (STYLE.md §3). MQTT and Kafka run against real brokers (mosquitto, Kafka); gRPC
// runs against a CloudEventService test double on a loopback TCP port because no real Maestro
// can be built on this machine (see grpc_harness.cc); the fake runs in memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/transport/errors.h"
#include "libs/transport/testing/metric_value.h"
#include "libs/transport/testing/test_events.h"
#include "tests/integration/transport/contract_harness.h"
#include "tests/support/wait.h"

namespace mmi::transport::contract {
namespace {

using std::chrono::seconds;
using testing::MakeSpecEvent;
using testing::MakeStatusEvent;
using testing::MetricValue;
using testing::SeqOf;

const std::vector<std::string> kClusters = {"cluster-a", "cluster-b", "cluster-c"};
constexpr int kEvents = 200;
constexpr auto kWait = std::chrono::milliseconds(90'000);

// Collects what a Subscriber hands over; acks all but the withheld sequence numbers.
class Inbox {
 public:
  explicit Inbox(std::set<int> withhold = {}) : withhold_(std::move(withhold)) {}

  EventHandler Handler() {
    return [this](cloudevents::Event event, AckFn ack) {
      if (withhold_.count(SeqOf(event)) == 0) {
        std::move(ack)();
      } else {
        absl::MutexLock lock(&mu_);
        withheld_acks_.push_back(std::move(ack));
      }
      absl::MutexLock lock(&mu_);
      events_.push_back(std::move(event));
    };
  }
  SubscribedHook Hook() {
    return [this](bool resubscribed) {
      absl::MutexLock lock(&mu_);
      hooks_.push_back(resubscribed);
    };
  }
  std::vector<cloudevents::Event> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<bool> hooks() {
    absl::MutexLock lock(&mu_);
    return hooks_;
  }
  size_t count() {
    absl::MutexLock lock(&mu_);
    return events_.size();
  }

 private:
  std::set<int> withhold_;
  absl::Mutex mu_;
  std::vector<cloudevents::Event> events_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> hooks_ ABSL_GUARDED_BY(mu_);
  std::vector<AckFn> withheld_acks_ ABSL_GUARDED_BY(mu_);
};

// Counts publish outcomes.
class Outcomes {
 public:
  PublishCallback Callback() {
    return [this](absl::Status status) {
      absl::MutexLock lock(&mu_);
      if (status.ok()) {
        ++ok_;
      } else {
        errors_.push_back(status);
      }
    };
  }
  int ok() {
    absl::MutexLock lock(&mu_);
    return ok_;
  }
  int total() {
    absl::MutexLock lock(&mu_);
    return ok_ + static_cast<int>(errors_.size());
  }
  std::vector<absl::Status> errors() {
    absl::MutexLock lock(&mu_);
    return errors_;
  }

 private:
  absl::Mutex mu_;
  int ok_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<absl::Status> errors_ ABSL_GUARDED_BY(mu_);
};

// Per cluster, the sequence numbers in arrival order.
std::map<std::string, std::vector<int>> ByCluster(const std::vector<cloudevents::Event>& events) {
  std::map<std::string, std::vector<int>> out;
  for (const cloudevents::Event& event : events) {
    out[*event.ClusterName()].push_back(SeqOf(event));
  }
  return out;
}

std::map<std::string, std::vector<int>> ExpectedByCluster() {
  std::map<std::string, std::vector<int>> out;
  for (int i = 0; i < kEvents; ++i) {
    out[kClusters[i % kClusters.size()]].push_back(i);
  }
  return out;
}

// Removes duplicates (at-least-once may repeat an event) keeping first arrival order.
std::vector<cloudevents::Event> FirstArrivals(const std::vector<cloudevents::Event>& events) {
  std::set<std::string> seen;
  std::vector<cloudevents::Event> out;
  for (const cloudevents::Event& event : events) {
    if (seen.insert(event.id).second) {
      out.push_back(event);
    }
  }
  return out;
}

using HarnessFactory = std::function<std::unique_ptr<Harness>()>;

class TransportContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static const std::map<std::string, HarnessFactory> factories = {
        {"fake", MakeFakeHarness},
#if MMI_CONTRACT_WITH_GRPC
        {"grpc", MakeGrpcHarness},
#endif
#if MMI_CONTRACT_WITH_MQTT
        {"mqtt", MakeMqttHarness},
#endif
#if MMI_CONTRACT_WITH_KAFKA
        {"kafka", MakeKafkaHarness},
#endif
    };
    harness_ = factories.at(GetParam())();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    source_id_ =
        absl::StrCat("src-", std::string(info->name()).substr(0, 12), "-", ::getpid() % 100000);
    for (char& c : source_id_) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!std::isalnum(static_cast<unsigned char>(c))) {
        c = '-';
      }
    }
    harness_->SetUp(source_id_);
  }

  void StartClients(Inbox& inbox) {
    clients_ = harness_->MakeClients(RealClock::Instance(), registry_);
    ASSERT_NE(clients_.publisher, nullptr);
    ASSERT_NE(clients_.subscriber, nullptr);
    ASSERT_TRUE(clients_.publisher->Start().ok());
    ASSERT_TRUE(clients_.subscriber->Start(inbox.Handler(), inbox.Hook()).ok());
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] { return clients_.publisher->connected() && clients_.subscriber->connected(); }, kWait))
        << harness_->name() << ": never connected";
  }

  double Metric(const std::string& name, std::map<std::string, std::string> labels) {
    labels["transport"] = harness_->name();
    return MetricValue(registry_, name, labels);
  }

  // Publishes until the callback says OK, retrying retryable errors as the dispatcher does.
  absl::Status PublishWithRetry(const cloudevents::Event& event) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (true) {
      auto done = std::make_shared<std::promise<absl::Status>>();
      clients_.publisher->Publish(event, [done](absl::Status s) { done->set_value(s); });
      absl::Status status = done->get_future().get();
      if (status.ok() || !IsRetryable(status) || std::chrono::steady_clock::now() > deadline) {
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::unique_ptr<Harness> harness_;  // declared first: outlives the clients
  std::string source_id_;
  prometheus::Registry registry_;
  TransportClients clients_;
};

TEST_P(TransportContractTest, PublishedEventsReachTheAgentInOrderPerCluster) {
  Inbox inbox;
  StartClients(inbox);
  ASSERT_FALSE(HasFatalFailure());
  Outcomes outcomes;
  if (harness_->PipelinedPublishKeepsOrder()) {
    for (int i = 0; i < kEvents; ++i) {
      clients_.publisher->Publish(MakeSpecEvent(source_id_, kClusters[i % kClusters.size()], i),
                                  outcomes.Callback());
    }
  } else {
    // One event in flight per cluster, the next one after the callback (the dispatcher's rule).
    for (int i = 0; i < kEvents; ++i) {
      ASSERT_TRUE(mmi::testing::WaitFor([&] { return outcomes.total() >= i - 2; }, kWait));
      clients_.publisher->Publish(MakeSpecEvent(source_id_, kClusters[i % kClusters.size()], i),
                                  outcomes.Callback());
    }
  }
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return outcomes.total() == kEvents; }, kWait));
  EXPECT_EQ(outcomes.ok(), kEvents) << outcomes.errors().front();
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return FirstArrivals(harness_->AgentReceived()).size() == kEvents; }, kWait))
      << "agent received " << harness_->AgentReceived().size();
  EXPECT_EQ(ByCluster(FirstArrivals(harness_->AgentReceived())), ExpectedByCluster());
  EXPECT_EQ(Metric("mmi_events_published_total", {{"result", "ok"}}), kEvents);
  EXPECT_EQ(clients_.publisher->max_in_flight(), harness_->PublisherMaxInFlight());
}

TEST_P(TransportContractTest, AgentEventsReachTheSubscriberInOrderPerCluster) {
  Inbox inbox;
  StartClients(inbox);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(inbox.hooks(), std::vector<bool>{false});
  for (int i = 0; i < kEvents; ++i) {
    harness_->AgentSend(MakeStatusEvent(source_id_, kClusters[i % kClusters.size()], i));
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_TRUE(
      mmi::testing::WaitFor([&] { return FirstArrivals(inbox.events()).size() == kEvents; }, kWait))
      << "subscriber received " << inbox.count();
  EXPECT_EQ(ByCluster(FirstArrivals(inbox.events())), ExpectedByCluster());
  EXPECT_EQ(Metric("mmi_events_received_total", {{"type", "status"}}), inbox.count());
}

TEST_P(TransportContractTest, UnackedEventsAreRedeliveredOrTheServiceIsToldToResync) {
  {
    Inbox first(/*withhold=*/{1});
    StartClients(first);
    ASSERT_FALSE(HasFatalFailure());
    for (int i = 0; i < 3; ++i) {
      harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-a", i));
    }
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return first.count() >= 3; }, kWait));
    clients_.subscriber->Stop();
    clients_.publisher->Stop();
    clients_ = TransportClients{};
  }
  Inbox second;
  StartClients(second);
  ASSERT_FALSE(HasFatalFailure());
  if (harness_->RedeliversUnacked()) {
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return second.count() >= 1; }, kWait));
    EXPECT_EQ(SeqOf(second.events().front()), 1) << "the unacked event comes back first";
    for (const cloudevents::Event& event : second.events()) {
      EXPECT_NE(SeqOf(event), 0) << "an acked event that preceded every unacked one came back";
    }
  } else {
    // No redelivery: the recovery path is the SubscribedHook after a reconnect.
    harness_->RestartBroker();
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] { return second.hooks() == std::vector<bool>{false, true}; }, kWait))
        << "hooks seen: " << second.hooks().size();
  }
}

TEST_P(TransportContractTest, BothDirectionsRecoverAfterTheBrokerRestarts) {
  Inbox inbox;
  StartClients(inbox);
  ASSERT_FALSE(HasFatalFailure());
  harness_->RestartBroker();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        const auto hooks = inbox.hooks();
        return !hooks.empty() && hooks.back() && clients_.subscriber->connected() &&
               clients_.publisher->connected();
      },
      kWait))
      << harness_->name() << ": did not re-subscribe after the restart";
  EXPECT_GE(Metric("mmi_transport_reconnects_total", {{"client", "subscriber"}}), 1);

  const absl::Status published = PublishWithRetry(MakeSpecEvent(source_id_, "cluster-b", 42));
  ASSERT_TRUE(published.ok()) << published;
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        for (const auto& event : harness_->AgentReceived()) {
          if (SeqOf(event) == 42) {
            return true;
          }
        }
        return false;
      },
      kWait));
  harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-b", 43));
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        for (const auto& event : inbox.events()) {
          if (SeqOf(event) == 43) {
            return true;
          }
        }
        return false;
      },
      kWait));
}

// A restarted or new leader resumes the subscription of the one before it: an agent's spec resync
// request sent while no dispatcher was subscribed is still answered (issue: the request fell into
// the gap between a restart and the new subscription and was lost).
TEST_P(TransportContractTest, WithAPersistentSessionWhatAgentsSentWhileNoSubscriberRanArrives) {
  if (!harness_->UsePersistentSession()) {
    GTEST_SKIP() << harness_->name() << " has no persistent subscription to resume";
  }
  {
    Inbox first;
    StartClients(first);
    ASSERT_FALSE(HasFatalFailure());
    harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-a", 1));
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return first.count() >= 1; }, kWait));
    clients_.subscriber->Stop();
    clients_.publisher->Stop();
    clients_ = TransportClients{};
  }
  // Nobody subscribed: a restart, a leader handover.
  harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-a", 2));
  harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-b", 3));
  Inbox second;
  StartClients(second);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        std::set<int> seqs;
        for (const cloudevents::Event& event : second.events()) {
          seqs.insert(SeqOf(event));
        }
        return seqs.count(2) == 1 && seqs.count(3) == 1;
      },
      kWait))
      << harness_->name() << ": the events sent while no subscriber ran did not arrive; got "
      << second.count();
}

// The dispatcher's outbox publishes only while connected(), so a publisher that sends nothing
// must come back by itself: no Publish() may be needed to wake its connection.
TEST_P(TransportContractTest, APublisherThatSendsNothingIsConnectedAgainAfterTheBrokerRestarts) {
  clients_ = harness_->MakeClients(RealClock::Instance(), registry_);
  ASSERT_TRUE(clients_.publisher->Start().ok());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return clients_.publisher->connected(); }, kWait))
      << harness_->name() << ": never connected";
  harness_->RestartBroker();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        return clients_.publisher->connected() &&
               (!harness_->CountsReconnects() ||
                Metric("mmi_transport_reconnects_total", {{"client", "publisher"}}) >= 1);
      },
      kWait))
      << harness_->name() << ": the publisher did not reconnect by itself";
  const absl::Status published = PublishWithRetry(MakeSpecEvent(source_id_, "cluster-c", 7));
  ASSERT_TRUE(published.ok()) << published;
}

TEST_P(TransportContractTest, MalformedAndOversizeMessagesAreRejectedAndTheSubscriptionLives) {
  Inbox inbox;
  StartClients(inbox);
  ASSERT_FALSE(HasFatalFailure());
  harness_->AgentSendMalformed();
  harness_->AgentSendOversize();
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        return Metric("mmi_transport_messages_rejected_total", {{"reason", "malformed"}}) >= 1 &&
               Metric("mmi_transport_messages_rejected_total", {{"reason", "oversize"}}) >= 1;
      },
      kWait));
  // Still (or again, for gRPC, where an over-limit message breaks the stream) subscribed: a
  // valid event goes through.
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return clients_.subscriber->connected(); }, kWait));
  harness_->AgentSend(MakeStatusEvent(source_id_, "cluster-c", 7));
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return inbox.count() >= 1; }, kWait));
  for (const cloudevents::Event& event : inbox.events()) {
    EXPECT_EQ(SeqOf(event), 7) << "only the valid event reaches the handler";
  }
}

TEST_P(TransportContractTest, PublishOutsideStartAndStopFailsAndStopIsIdempotent) {
  clients_ = harness_->MakeClients(RealClock::Instance(), registry_);
  ASSERT_NE(clients_.publisher, nullptr);
  auto publish = [&](int seq) {
    auto done = std::make_shared<std::promise<absl::Status>>();
    clients_.publisher->Publish(MakeSpecEvent(source_id_, "cluster-a", seq),
                                [done](absl::Status s) { done->set_value(s); });
    return done->get_future().get();
  };
  EXPECT_EQ(publish(1).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(clients_.publisher->Start().ok());
  clients_.publisher->Stop();
  clients_.publisher->Stop();
  EXPECT_EQ(publish(2).code(), absl::StatusCode::kFailedPrecondition);
  clients_.subscriber->Stop();  // never started: still fine
  EXPECT_FALSE(clients_.subscriber->connected());
}

std::vector<std::string> Transports() {
  std::vector<std::string> names = {"fake"};
#if MMI_CONTRACT_WITH_GRPC
  names.push_back("grpc");
#endif
#if MMI_CONTRACT_WITH_MQTT
  names.push_back("mqtt");
#endif
#if MMI_CONTRACT_WITH_KAFKA
  names.push_back("kafka");
#endif
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllTransports, TransportContractTest, ::testing::ValuesIn(Transports()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mmi::transport::contract
