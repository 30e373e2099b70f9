// A plain MQTT 5 client on libmosquitto for tests and benches: the agent side of the broker
// (subscribing sourceevents, publishing agentevents) or any client an ACL test needs. Its own
// thread (mosquitto_loop_start) runs the callbacks; every call here is thread-safe and waits with
// a deadline. Not for production: it buffers whatever arrives.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"

struct mosquitto;
struct mosquitto_message;
struct mqtt5__property;

namespace mmi::transport::testing {

struct MqttTestClientOptions {
  std::string host_port{};  // "host:port"
  std::string client_id{};
  std::string ca_file{};  // TLS when set
  std::string cert_file{};
  std::string key_file{};
  std::string username{};  // sent in CONNECT when set
  std::string password{};
  int keep_alive_s = 30;
  // Reconnect (libmosquitto's loop, every second) when the connection drops, and subscribe the
  // filters subscribed so far again.
  bool reconnect = false;
};

struct MqttReceived {
  std::string topic;
  cloudevents::MqttMessage message;
};

class MqttTestClient {
 public:
  // Connects and waits for the CONNACK: kUnavailable naming the reason when the broker refused
  // or did not answer within `timeout`.
  static absl::StatusOr<std::unique_ptr<MqttTestClient>> Connect(
      MqttTestClientOptions options, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  ~MqttTestClient();
  MqttTestClient(const MqttTestClient&) = delete;
  MqttTestClient& operator=(const MqttTestClient&) = delete;

  // SUBSCRIBE and its SUBACK's reason codes (one per filter; >= 0x80 refused); empty without a
  // SUBACK in time. Subscribed again after every reconnect when `options.reconnect`.
  std::vector<int> Subscribe(const std::string& filter, int qos = 1,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // One PUBLISH; its PUBACK reason code (< 0x80 accepted, 0 for QoS 0 once sent), or -1 when no
  // PUBACK came in time or the publish could not be queued.
  int Publish(const std::string& topic, const cloudevents::MqttMessage& message, int qos = 1,
              std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // One PUBLISH without waiting for its PUBACK; false when libmosquitto could not queue it.
  bool PublishNoWait(const std::string& topic, const cloudevents::MqttMessage& message,
                     int qos = 1);
  // Waits until at least `count` PUBACKs have arrived in all; false after `timeout`.
  bool AwaitPubacks(std::size_t count, std::chrono::milliseconds timeout);
  // The next received message, waiting up to `timeout`.
  std::optional<MqttReceived> Next(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Every received message not taken yet.
  std::vector<MqttReceived> Drain();
  // From now on every received message goes to `handler` (on the client's thread) instead of
  // the queue.
  void OnMessage(std::function<void(MqttReceived)> handler);
  // How many SUBACKs arrived so far (a reconnect's resubscription included).
  int subacks() const;
  bool connected() const;

 private:
  explicit MqttTestClient(MqttTestClientOptions options);
  static void OnConnect(mosquitto* mosq, void* self, int reason, int flags,
                        const mqtt5__property* props);
  static void OnSubscribe(mosquitto* mosq, void* self, int mid, int count, const int* granted,
                          const mqtt5__property* props);
  static void OnMessageCallback(mosquitto* mosq, void* self, const mosquitto_message* message,
                                const mqtt5__property* props);
  static void OnPublish(mosquitto* mosq, void* self, int mid, int reason_code,
                        const mqtt5__property* props);
  static void OnDisconnect(mosquitto* mosq, void* self, int reason, const mqtt5__property* props);

  const MqttTestClientOptions options_;
  mosquitto* mosq_ = nullptr;
  mutable absl::Mutex mu_;
  std::optional<int> connack_ ABSL_GUARDED_BY(mu_);
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int, std::vector<int>> subacks_ ABSL_GUARDED_BY(mu_);
  int subacks_seen_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int, int> pubacks_ ABSL_GUARDED_BY(mu_);
  std::size_t pubacks_seen_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<std::string, int>> filters_ ABSL_GUARDED_BY(mu_);
  std::deque<MqttReceived> received_ ABSL_GUARDED_BY(mu_);
  std::function<void(MqttReceived)> handler_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::transport::testing
