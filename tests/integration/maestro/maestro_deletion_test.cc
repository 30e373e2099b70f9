// A deletion confirmation nobody hears, on the real Maestro server (tests/peers/bin/start-maestro):
// Maestro sends the agent's Deleted status once, to the source subscribers connected at that
// moment, then forgets the resource. With our subscriber gone (a status sink restarting), the
// confirmation is lost, and the dispatcher learns of it only from Maestro's REST API: 200 while
// the resource is held (also while marked deleting, the agent not done yet), 404 once it is gone
// (maestro-protocol.md rule 17). This drives the dispatcher's DeletionCheck with the project's REST
// client (MaestroResourceBundles) against the server, on a real loop and worker pool.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/transport/grpc/maestro_resource_bundles.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"
#include "services/dispatcher/apps/deletion_check.h"
#include "services/dispatcher/apps/metrics.h"
#include "tests/integration/maestro/maestro_test_support.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using cloudevents::Event;
using std::chrono::seconds;

using maestro_test::Is;
using maestro_test::kCluster;
using maestro_test::kSource;
using maestro_test::SourceClients;
using maestro_test::SourceSettings;

// The dispatcher's DeletionCheck on a started loop and worker pool, asking `bundles`; records the
// resources it found gone.
class LiveDeletionCheck {
 public:
  explicit LiveDeletionCheck(const transport::MaestroResourceBundles& bundles)
      : metrics_(registry_, "grpc"),
        check_({.loop = loop_,
                .workers = workers_,
                .clock = RealClock::Instance(),
                .metrics = metrics_,
                .exists = [&bundles](const std::string& id) { return bundles.Exists(id); },
                .waiting = [](const std::string&) { return true; },
                .gone =
                    [this](const std::string& id) {
                      absl::MutexLock lock(&mu_);
                      gone_.push_back(id);
                    }},
               dispatcher::DeletionCheckSettings{}) {
    loop_.Start();
    workers_.Start();
  }
  ~LiveDeletionCheck() {
    loop_.Stop();
    workers_.Stop();
  }

  void Submit(const std::string& id) {
    loop_.Post([this, id] { check_.Submit(id); });
  }
  double Checks(const std::string& result) const {
    return transport::testing::MetricValue(registry_, "mmi_dispatcher_deletion_checks_total",
                                           {{"result", result}});
  }
  std::vector<std::string> gone() const {
    absl::MutexLock lock(&mu_);
    return gone_;
  }

 private:
  prometheus::Registry registry_;
  dispatcher::DispatcherMetrics metrics_;
  Loop loop_{RealClock::Instance(), "check-loop"};
  WorkerPool workers_{RealClock::Instance(), "check-workers", 1};
  dispatcher::DeletionCheck check_;
  mutable absl::Mutex mu_;
  std::vector<std::string> gone_ ABSL_GUARDED_BY(mu_);
};

TEST(MaestroDeletionTest, AConfirmationLostWithNoSubscriberIsFoundByTheRestNotFound) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(broker, "mosquitto");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.push_back("BROKER=mqtt");
  args.push_back("MQTT_HOST=" + broker->Get("MQTT_HOST"));
  MMI_START_PEER(maestro, "maestro", args);
  const std::string rest = maestro->Get("MAESTRO_REST_URL");
  ASSERT_TRUE(maestro_test::Registry(rest).EnsureConsumer(kCluster).ok());

  maestro_test::MqttClusterAgent agent(broker->Get("MQTT_HOST"), maestro->Get("MAESTRO_SOURCE_ID"));
  ASSERT_TRUE(agent.Start().ok());
  SourceClients source(SourceSettings(maestro->Get("MAESTRO_GRPC_ADDR")));
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] { return source.publisher->connected() && source.subscriber->connected(); }, seconds(20)))
      << "gRPC source clients never connected to " << maestro->Get("MAESTRO_GRPC_ADDR");

  transport::MaestroRestSettings rest_settings;
  rest_settings.base_url = rest;
  const transport::MaestroResourceBundles bundles(rest_settings);
  LiveDeletionCheck check(bundles);

  const std::string name = "lost-confirmation";
  const std::string id = cloudevents::WorkResourceId(kSource, kCluster, name);
  EXPECT_EQ(bundles.Exists(id).value_or(true), false) << "not created yet: 404";
  ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, name)).ok());
  std::optional<Event> spec =
      agent.specs().Await(Is(cloudevents::kSpecCreateRequestType, id), seconds(30));
  ASSERT_TRUE(spec.has_value()) << "the create never reached the agent";
  ASSERT_TRUE(agent.Answer(*spec).ok());
  EXPECT_EQ(bundles.Exists(id).value_or(false), true);

  // The delete request: Maestro marks the row deleting and sends the delete to the agent, which
  // holds it for now. The resource is still there: the check must not take it for gone.
  ASSERT_TRUE(source.PublishAndWait(maestro_test::DeleteRequest(kCluster, name, id)).ok());
  std::optional<Event> delete_spec =
      agent.specs().Await(Is(cloudevents::kSpecDeleteRequestType, id), seconds(30));
  ASSERT_TRUE(delete_spec.has_value()) << "the delete never reached the agent";
  check.Submit(id);
  ASSERT_TRUE(testing::WaitFor([&] { return check.Checks("present") == 1; }, seconds(15)))
      << "marked deleting, Maestro must still answer 200 (error look-ups: " << check.Checks("error")
      << ")";
  EXPECT_TRUE(check.gone().empty());

  // No subscriber any more (the status sink is down), then the agent confirms.
  source.subscriber->Stop();
  ASSERT_TRUE(agent.Answer(*delete_spec).ok());
  // Maestro removes the row once it has the agent's Deleted (its status handler, asynchronously).
  ASSERT_TRUE(testing::WaitFor([&] { return !bundles.Exists(id).value_or(true); }, seconds(30)))
      << "the resource bundle is still held after the agent's Deleted";
  // The row goes first (the agent-side handler), the broadcast follows from Maestro's status
  // controller, asynchronously: a subscription made between the two still gets the Deleted (seen
  // on a loaded CI machine). Wait for the controller to have reconciled the StatusDelete event:
  // its handler hands the status to the broadcaster (an unbuffered channel) before returning, so
  // from then on the confirmation has gone to the subscribers of that moment: none.
  const std::string metrics = maestro->Get("MAESTRO_METRICS_URL");
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return maestro_test::ScrapeCounter(metrics, "status_controller_event_reconcile_total",
                                           {{"event_type", "StatusDelete"}, {"status", "success"}})
                   .value_or(0) >= 1;
      },
      seconds(30)))
      << "Maestro's status controller never reconciled the StatusDelete event";
  // The Deleted status went nowhere: it is not sent again to a new subscription either.
  SourceClients later(SourceSettings(maestro->Get("MAESTRO_GRPC_ADDR")));
  ASSERT_TRUE(later.Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return later.subscriber->connected(); }, seconds(20)));
  EXPECT_FALSE(
      later.statuses
          .Await([&](const Event& e) { return Is(cloudevents::kStatusUpdateRequestType, id)(e); },
                 std::chrono::milliseconds(3000))
          .has_value())
      << "Maestro sent the lost confirmation again: the REST check would not be needed";

  // The dispatcher's resend asks again: the 404 confirms the deletion.
  check.Submit(id);
  ASSERT_TRUE(testing::WaitFor([&] { return !check.gone().empty(); }, seconds(15)))
      << "the REST 404 did not confirm the deletion (error look-ups: " << check.Checks("error")
      << ")";
  EXPECT_EQ(check.gone(), std::vector<std::string>{id});
  EXPECT_EQ(check.Checks("gone"), 1);
  EXPECT_EQ(check.Checks("error"), 0);
}

}  // namespace
}  // namespace mmi
