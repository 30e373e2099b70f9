// The MQTT publisher's in-flight window against a real mosquitto 2
// (tests/peers/bin/start-mosquitto): NativeMqttPublisher writes at most the broker's
// Receive Maximum (mosquitto's max_inflight_messages) at a time, holds the rest in call order,
// re-reads the limit when a restarted broker announces another one, and never leaves a held event
// without its callback. The broker is paused with SIGSTOP where a test needs PUBACKs to stop
// coming, so the window fills deterministically.
#include <gtest/gtest.h>
#include <mosquitto.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/common/clock.h"
#include "libs/transport/mqtt/mosquitto_message.h"
#include "libs/transport/mqtt/native_mqtt_publisher.h"
#include "libs/transport/testing/metric_value.h"
#include "libs/transport/testing/test_events.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::transport {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MakeSpecEvent;
using testing::MetricValue;
using testing::SeqOf;

constexpr auto kWait = milliseconds(60'000);
const std::vector<std::string> kClusters = {"cluster-a", "cluster-b", "cluster-c"};

// Counts publish outcomes by status code.
class Outcomes {
 public:
  PublishCallback Callback() {
    return [this](absl::Status status) {
      absl::MutexLock lock(&mu_);
      ++by_code_[status.code()];
      ++total_;
    };
  }
  int total() {
    absl::MutexLock lock(&mu_);
    return total_;
  }
  int count(absl::StatusCode code) {
    absl::MutexLock lock(&mu_);
    return by_code_[code];
  }
  std::map<absl::StatusCode, int> by_code() {
    absl::MutexLock lock(&mu_);
    return by_code_;
  }

 private:
  absl::Mutex mu_;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<absl::StatusCode, int> by_code_ ABSL_GUARDED_BY(mu_);
};

std::string Describe(const std::map<absl::StatusCode, int>& by_code) {
  std::string out;
  for (const auto& [code, n] : by_code) {
    absl::StrAppend(&out, absl::StatusCodeToString(code), "=", n, " ");
  }
  return out;
}

// The current broker's PID (restart-mosquitto rewrites it in <data-dir>/env).
pid_t BrokerPid(const mmi::testing::PeerProcess& broker) {
  std::ifstream env(broker.data_dir() + "/env");
  std::string line;
  pid_t pid = 0;
  while (std::getline(env, line)) {
    if (line.rfind("MOSQUITTO_PID=", 0) == 0) {
      pid = static_cast<pid_t>(std::stol(line.substr(14)));
    }
  }
  return pid;
}

class MqttPublisherWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker = mmi::testing::PeerProcess::Start("mosquitto", {"MAX_INFLIGHT=20"});
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = *std::move(broker);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    source_id_ = absl::StrCat("win-", ::getpid() % 100000, "-",
                              std::hash<std::string>{}(info->name()) % 10000);
    settings_.broker_host = broker_->Get("MQTT_HOST");
    settings_.source_id = source_id_;
    settings_.client_id = source_id_;
    settings_.keep_alive = seconds(5);
    settings_.publish_timeout = milliseconds(20'000);
    settings_.reconnect_backoff = {milliseconds(100), milliseconds(1'000), 2.0, 0.2};
  }

  void TearDown() override {
    if (publisher_ != nullptr) {
      publisher_->Stop();
    }
    if (paused_ && broker_ != nullptr) {
      ::kill(BrokerPid(*broker_), SIGCONT);  // let PeerProcess stop it normally
    }
  }

  void StartPublisher() {
    auto publisher =
        std::make_unique<NativeMqttPublisher>(settings_, RealClock::Instance(), registry_);
    peak_ = [p = publisher.get()] { return p->PeakInFlightForTest(); };
    publisher_ = std::move(publisher);
    ASSERT_TRUE(publisher_->Start().ok());
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return publisher_->connected(); }, kWait))
        << "never connected";
  }

  void PublishBurst(int first, int count, Outcomes& outcomes) {
    for (int i = first; i < first + count; ++i) {
      publisher_->Publish(MakeSpecEvent(source_id_, kClusters[i % kClusters.size()], i),
                          outcomes.Callback());
    }
  }

  double Held() {
    return MetricValue(registry_, "mmi_transport_publish_held", {{"transport", "mqtt"}});
  }

  // SIGSTOP / SIGCONT: the TCP connection stays up, PUBACKs stop coming.
  void PauseBroker() {
    ASSERT_EQ(::kill(BrokerPid(*broker_), SIGSTOP), 0);
    paused_ = true;
  }
  void ResumeBroker() {
    ASSERT_EQ(::kill(BrokerPid(*broker_), SIGCONT), 0);
    paused_ = false;
  }

  std::unique_ptr<mmi::testing::PeerProcess> broker_;
  std::string source_id_;
  MqttSettings settings_;
  prometheus::Registry registry_;
  // The most events the publisher ever handed its library at once.
  size_t PeakInFlight() const { return peak_(); }

  std::unique_ptr<Publisher> publisher_;
  std::function<size_t()> peak_;
  bool paused_ = false;
};

// An agent-side subscriber on the plain listener (libmosquitto, its own thread): what arrived, per
// cluster, in arrival order.
class Agent {
 public:
  Agent(const std::string& host, const std::string& source_id)
      : host_(host.substr(0, host.rfind(':'))),
        port_(std::stoi(host.substr(host.rfind(':') + 1))),
        filter_(absl::StrCat("sources/", source_id, "/consumers/+/sourceevents")) {
    mosquitto_lib_init();
    mosq_ = mosquitto_new((source_id + "-agent").c_str(), true, this);
    mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_subscribe_v5_callback_set(
        mosq_, [](mosquitto*, void* self, int, int, const int*, const mosquitto_property*) {
          static_cast<Agent*>(self)->subscribed_ = true;
        });
    mosquitto_message_v5_callback_set(mosq_,
                                      [](mosquitto*, void* self, const mosquitto_message* message,
                                         const mosquitto_property* props) {
                                        static_cast<Agent*>(self)->OnMessage(*message, props);
                                      });
  }
  ~Agent() {
    mosquitto_disconnect(mosq_);
    mosquitto_loop_stop(mosq_, false);
    mosquitto_destroy(mosq_);
  }
  bool Connect() {
    if (mosquitto_connect(mosq_, host_.c_str(), port_, 10) != MOSQ_ERR_SUCCESS ||
        mosquitto_loop_start(mosq_) != MOSQ_ERR_SUCCESS ||
        mosquitto_subscribe_v5(mosq_, nullptr, filter_.c_str(), 1, 0, nullptr) !=
            MOSQ_ERR_SUCCESS) {
      return false;
    }
    return mmi::testing::WaitFor([&] { return subscribed_.load(); }, seconds(10));
  }
  int received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  std::map<std::string, std::vector<int>> by_cluster() {
    absl::MutexLock lock(&mu_);
    return by_cluster_;
  }

 private:
  void OnMessage(const mosquitto_message& message, const mosquitto_property* props) {
    auto event = cloudevents::DecodeMqtt(FromMosquittoMessage(message, props));
    absl::MutexLock lock(&mu_);
    if (event.ok()) {
      by_cluster_[*event->ClusterName()].push_back(SeqOf(*event));
      ++received_;
    }
  }

  const std::string host_;
  const int port_;
  const std::string filter_;
  mosquitto* mosq_ = nullptr;
  std::atomic<bool> subscribed_{false};
  absl::Mutex mu_;
  int received_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::vector<int>> by_cluster_ ABSL_GUARDED_BY(mu_);
};

TEST_F(MqttPublisherWindowTest, ABurstFarAboveReceiveMaximumGoesOutWithinTheWindowInOrder) {
  Agent agent(broker_->Get("MQTT_HOST"), source_id_);
  ASSERT_TRUE(agent.Connect());
  StartPublisher();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(publisher_->max_in_flight(), 20u);

  constexpr int kEvents = 1'000;
  Outcomes outcomes;
  const auto begin = std::chrono::steady_clock::now();
  PublishBurst(0, kEvents, outcomes);
  ASSERT_TRUE(
      mmi::testing::WaitFor([&] { return outcomes.total() == kEvents; }, kWait, milliseconds(5)))
      << "completed " << outcomes.total();
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(outcomes.count(absl::StatusCode::kOk), kEvents) << Describe(outcomes.by_code());
  // Paho C, the client before, held back what exceeded Receive Maximum and sent it up to a second
  // late: the burst took seconds. Within the window it takes milliseconds (generous bound for
  // sanitizers).
  EXPECT_LT(elapsed, seconds(5));
  EXPECT_LE(PeakInFlight(), 20u);
  EXPECT_GT(PeakInFlight(), 1u);
  EXPECT_EQ(Held(), 0);
  EXPECT_EQ(MetricValue(registry_, "mmi_events_published_total",
                        {{"transport", "mqtt"}, {"result", "ok"}}),
            kEvents);

  ASSERT_TRUE(mmi::testing::WaitFor([&] { return agent.received() >= kEvents; }, kWait))
      << "agent received " << agent.received();
  std::map<std::string, std::vector<int>> expected;
  for (int i = 0; i < kEvents; ++i) {
    expected[kClusters[i % kClusters.size()]].push_back(i);
  }
  EXPECT_EQ(agent.by_cluster(), expected) << "per-cluster order";
  std::cout << "1000-event burst completed in "
            << std::chrono::duration_cast<milliseconds>(elapsed).count() << " ms\n";
}

TEST_F(MqttPublisherWindowTest, HeldEventsFailWithDeadlineExceededCountedFromTheirPublishCall) {
  settings_.publish_timeout = milliseconds(3'000);
  StartPublisher();
  ASSERT_FALSE(HasFatalFailure());
  PauseBroker();
  ASSERT_FALSE(HasFatalFailure());
  Outcomes outcomes;
  PublishBurst(0, 50, outcomes);
  // 20 handed to libmosquitto, the rest held: deterministic, the paused broker sends no PUBACK.
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return Held() == 30; }, seconds(5), milliseconds(5)))
      << "held " << Held();
  EXPECT_EQ(PeakInFlight(), 20u);
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return outcomes.total() == 50; }, seconds(15)))
      << "completed " << outcomes.total();
  EXPECT_EQ(outcomes.count(absl::StatusCode::kDeadlineExceeded), 50)
      << Describe(outcomes.by_code());
  EXPECT_EQ(Held(), 0);

  // libmosquitto still holds the 20 expired ones: their slots stay taken until their PUBACKs, so
  // a new burst waits here instead of piling up in libmosquitto above Receive Maximum.
  Outcomes more;
  PublishBurst(50, 10, more);
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return Held() == 10; }, seconds(5), milliseconds(5)))
      << "held " << Held();
  EXPECT_EQ(PeakInFlight(), 20u);
  ResumeBroker();
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return more.total() == 10; }, seconds(10)))
      << "completed " << more.total();
  EXPECT_EQ(more.count(absl::StatusCode::kOk), 10) << Describe(more.by_code());
  EXPECT_EQ(outcomes.total(), 50) << "an expired event's late PUBACK is not reported again";
  EXPECT_LE(PeakInFlight(), 20u);
}

TEST_F(MqttPublisherWindowTest, ARestartedBrokerWithAnotherReceiveMaximumGetsTheNewWindow) {
  StartPublisher();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(publisher_->max_in_flight(), 20u);

  // Fill the window (paused broker), then kill it: handed and held events alike fail with
  // kUnavailable, none hangs.
  PauseBroker();
  ASSERT_FALSE(HasFatalFailure());
  Outcomes lost;
  PublishBurst(0, 300, lost);
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return Held() == 280; }, seconds(5), milliseconds(5)))
      << "held " << Held();
  EXPECT_EQ(PeakInFlight(), 20u);
  const pid_t old_pid = BrokerPid(*broker_);
  ASSERT_EQ(::kill(old_pid, SIGKILL), 0);
  paused_ = false;
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return lost.total() == 300; }, seconds(30)))
      << "completed " << lost.total() << " of 300 after the broker died";
  EXPECT_EQ(lost.count(absl::StatusCode::kUnavailable), 300) << Describe(lost.by_code());
  EXPECT_EQ(Held(), 0);

  // Same ports, now max_inflight_messages 5: the publisher reconnects by itself and reads it.
  const auto restarted =
      mmi::testing::RunCommand(mmi::testing::PeersBinDir() + "/restart-mosquitto '" +
                               broker_->data_dir() + "' MAX_INFLIGHT=5");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return publisher_->connected() && publisher_->max_in_flight() == 5; }, kWait))
      << "connected " << publisher_->connected() << ", max_in_flight "
      << publisher_->max_in_flight();
  EXPECT_GE(MetricValue(registry_, "mmi_transport_reconnects_total",
                        {{"transport", "mqtt"}, {"client", "publisher"}}),
            1);

  // The new window: 5 handed, the rest held while the broker is paused; all OK once it resumes.
  PauseBroker();
  ASSERT_FALSE(HasFatalFailure());
  Outcomes paused;
  PublishBurst(1'000, 40, paused);
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return Held() == 35; }, seconds(5), milliseconds(5)))
      << "held " << Held();
  ResumeBroker();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return paused.total() == 40; }, kWait))
      << "completed " << paused.total();
  EXPECT_EQ(paused.count(absl::StatusCode::kOk), 40) << Describe(paused.by_code());

  Outcomes burst;
  PublishBurst(2'000, 1'000, burst);
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return burst.total() == 1'000; }, kWait))
      << "completed " << burst.total();
  EXPECT_EQ(burst.count(absl::StatusCode::kOk), 1'000) << Describe(burst.by_code());
  EXPECT_EQ(Held(), 0);
}

}  // namespace
}  // namespace mmi::transport
