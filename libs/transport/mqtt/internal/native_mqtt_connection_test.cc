// NativeMqttConnection against a fake broker on a loopback socket: the protocol's edges that a real
// mosquitto does not produce on demand (packets split across reads, one larger than the input
// buffer, a DISCONNECT with a reason, a broker that stops answering PINGREQ, a malformed packet,
// a refused CONNACK). The real broker's side is the transport contract suite (`mqtt`).
#include "libs/transport/mqtt/internal/native_mqtt_connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/registry.h"

namespace mmi::transport::internal {
namespace {

using namespace std::string_literals;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A listening socket on 127.0.0.1 and blocking reads and writes with deadlines on what it
// accepts.
class FakeBroker {
 public:
  FakeBroker() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ok_ = listener_ >= 0 &&
          ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
          ::listen(listener_, 8) == 0 &&
          ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    port_ = ntohs(address.sin_port);
  }
  ~FakeBroker() {
    for (int fd : accepted_) {
      ::close(fd);
    }
    ::close(listener_);
  }

  // False when the loopback listener could not be set up.
  bool ok() const { return ok_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // The next connection, or -1 after `timeout`.
  int Accept(std::chrono::milliseconds timeout = seconds(10)) {
    pollfd fds{listener_, POLLIN, 0};
    int ready = 0;
    do {
      ready = ::poll(&fds, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready != 1) {
      return -1;
    }
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    accepted_.push_back(fd);
    return fd;
  }

  // One whole packet from `fd`; nullopt when it closed or nothing came within `timeout`.
  static std::optional<std::string> ReadPacket(int fd, std::chrono::milliseconds timeout) {
    std::string packet;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto read_byte = [&]() -> bool {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd fds{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&fds, 1, static_cast<int>(left.count())) != 1) {
        return false;
      }
      char c = 0;
      if (::recv(fd, &c, 1, 0) != 1) {
        return false;
      }
      packet.push_back(c);
      return true;
    };
    if (!read_byte()) {
      return std::nullopt;
    }
    std::size_t length = 0;
    for (int i = 0;; ++i) {
      if (!read_byte()) {
        return std::nullopt;
      }
      const auto byte = static_cast<uint8_t>(packet.back());
      length |= static_cast<std::size_t>(byte & 0x7F) << (7 * i);
      if ((byte & 0x80) == 0) {
        break;
      }
    }
    for (std::size_t i = 0; i < length; ++i) {
      if (!read_byte()) {
        return std::nullopt;
      }
    }
    return packet;
  }

  static void Write(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  bool ok_ = false;
  std::vector<int> accepted_;
};

std::string VarInt(std::size_t n) {
  std::string out;
  do {
    auto byte = static_cast<uint8_t>(n & 0x7F);
    n >>= 7;
    out.push_back(static_cast<char>(byte | (n > 0 ? 0x80 : 0)));
  } while (n > 0);
  return out;
}

std::string Str(std::string_view text) {
  return std::string{static_cast<char>(text.size() >> 8), static_cast<char>(text.size() & 0xFF)} +
         std::string(text);
}

std::string Packet(uint8_t first_byte, const std::string& body) {
  return std::string(1, static_cast<char>(first_byte)) + VarInt(body.size()) + body;
}

std::string ConnAck(const std::string& properties = "") {
  return Packet(0x20, "\x00\x00"s + VarInt(properties.size()) + properties);
}

// A QoS 1 PUBLISH with one User Property.
std::string Publish(uint16_t id, const std::string& topic, const std::string& payload) {
  const std::string props = "\x26"s + Str("ce-id") + Str(absl::StrCat(id));
  return Packet(0x32, Str(topic) +
                          std::string{static_cast<char>(id >> 8), static_cast<char>(id & 0xFF)} +
                          VarInt(props.size()) + props + payload);
}

struct Received {
  std::string topic;
  std::string payload;
  std::string ce_id;
};

class NativeMqttConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(broker_.ok()) << "no loopback listener: " << errno; }

  MqttSettings Settings() {
    MqttSettings s;
    s.broker_host = broker_.address();
    s.source_id = "src";
    s.keep_alive = seconds(30);
    s.dial_timeout = seconds(5);
    s.reconnect_backoff = {milliseconds(50), milliseconds(200), 2.0, 0.0};
    return s;
  }

  void Start(const MqttSettings& settings) {
    connection_ =
        std::make_unique<NativeMqttConnection>(settings, "src-sub", seconds(0), metrics_, logger_);
    NativeMqttConnection::Hooks hooks;
    hooks.on_connected = [this](bool reconnect, const mqtt5::ConnAck&) {
      absl::MutexLock lock(&mu_);
      connects_.push_back(reconnect);
    };
    hooks.on_lost = [this] {
      absl::MutexLock lock(&mu_);
      ++lost_;
    };
    hooks.on_publish = [this](const mqtt5::Publish& p) {
      absl::MutexLock lock(&mu_);
      received_.push_back(
          {std::string(p.topic), std::string(p.payload),
           p.user_properties.empty() ? "" : std::string(p.user_properties[0].second)});
    };
    hooks.on_turn = [this] {
      absl::MutexLock lock(&mu_);
      for (const std::string& topic : to_publish_) {
        cloudevents::MqttMessage message;
        message.payload = topic;
        EXPECT_TRUE(mqtt5::AppendPublish(topic, 1, connection_->NextPacketId(), message,
                                         connection_->output())
                        .ok());
      }
      to_publish_.clear();
    };
    hooks.on_puback = [this](const mqtt5::PubAck& puback) {
      absl::MutexLock lock(&mu_);
      pubacks_.push_back(puback);
    };
    ASSERT_TRUE(connection_->Start(std::move(hooks), "test-mqtt").ok());
  }

  // Accepts the client's connection, checks its CONNECT and answers `connack`.
  int AcceptAndConnect(const std::string& connack = ConnAck()) {
    const int fd = broker_.Accept();
    EXPECT_GE(fd, 0) << "the client did not connect";
    if (fd < 0) {
      return fd;
    }
    const std::optional<std::string> connect = FakeBroker::ReadPacket(fd, seconds(5));
    EXPECT_TRUE(connect.has_value() && !connect->empty() && (*connect)[0] == '\x10')
        << "no CONNECT";
    FakeBroker::Write(fd, connack);
    return fd;
  }

  bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        absl::MutexLock lock(&mu_);
        if (condition()) {
          return true;
        }
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    absl::MutexLock lock(&mu_);
    return condition();
  }

  void TearDown() override {
    // Before the members its hooks use.
    connection_.reset();
  }

  FakeBroker broker_;
  prometheus::Registry registry_;
  TransportMetrics metrics_{registry_, "mqtt", ClientRole::kSubscriber};
  log::Logger logger_{"test"};
  std::unique_ptr<NativeMqttConnection> connection_;
  absl::Mutex mu_;
  std::vector<bool> connects_ ABSL_GUARDED_BY(mu_);
  int lost_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> to_publish_ ABSL_GUARDED_BY(mu_);  // topics, queued by on_turn
  std::vector<mqtt5::PubAck> pubacks_ ABSL_GUARDED_BY(mu_);
};

TEST_F(NativeMqttConnectionTest, WhatATurnQueuesIsWrittenAfterAWakeAndPubAcksReachTheOwner) {
  Start(Settings());
  const int fd = AcceptAndConnect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitUntil([&] { return connects_.size() == 1; }, seconds(5)));
  {
    absl::MutexLock lock(&mu_);
    to_publish_ = {"a/1", "a/2"};
  }
  connection_->Wake();
  for (const char* topic : {"a/1", "a/2"}) {
    const std::optional<std::string> packet = FakeBroker::ReadPacket(fd, seconds(5));
    ASSERT_TRUE(packet.has_value()) << "no PUBLISH for " << topic;
    mqtt5::Frame frame;
    std::string error;
    ASSERT_EQ(mqtt5::NextFrame(*packet, 1 << 20, frame, error), mqtt5::FrameResult::kComplete);
    mqtt5::Publish publish;
    ASSERT_TRUE(mqtt5::ParsePublish(frame, publish).ok());
    EXPECT_EQ(publish.topic, topic);
    EXPECT_EQ(publish.qos, 1);
    EXPECT_EQ(publish.payload, topic);
  }
  // A success in the two-byte form, then a refusal (0x87, not authorized) with its reason code.
  FakeBroker::Write(fd, "\x40\x02\x00\x01"s + "\x40\x04\x00\x02\x87\x00"s);
  ASSERT_TRUE(WaitUntil([&] { return pubacks_.size() == 2; }, seconds(5)));
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(pubacks_[0].packet_id, 1);
  EXPECT_EQ(pubacks_[0].reason_code, 0);
  EXPECT_EQ(pubacks_[1].packet_id, 2);
  EXPECT_EQ(pubacks_[1].reason_code, 0x87);
}

TEST_F(NativeMqttConnectionTest,
       PublishesSplitAcrossReadsAndLargerThanTheBufferArriveWholeAndInOrder) {
  Start(Settings());
  const int fd = AcceptAndConnect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitUntil([&] { return connects_.size() == 1; }, seconds(5)));

  // Three small ones, the first two byte by byte with pauses (each byte its own read), then one
  // of 600 KiB (more than the 256 KiB input buffer), then a small one after it in the same write.
  const std::string first = Publish(1, "a/b", "one") + Publish(2, "a/b", "two");
  for (char c : first) {
    FakeBroker::Write(fd, std::string(1, c));
    std::this_thread::sleep_for(milliseconds(1));
  }
  const std::string large(600 * 1024, 'x');
  FakeBroker::Write(
      fd, Publish(3, "a/c", "three") + Publish(4, "a/d", large) + Publish(5, "a/e", "five"));

  ASSERT_TRUE(WaitUntil([&] { return received_.size() == 5; }, seconds(10)));
  {
    absl::MutexLock lock(&mu_);
    const std::vector<std::string> payloads = {"one", "two", "three", large, "five"};
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      EXPECT_EQ(received_[i].payload, payloads[i]) << i;
      EXPECT_EQ(received_[i].ce_id, absl::StrCat(i + 1));
    }
    EXPECT_EQ(received_[3].topic, "a/d");
  }
  // Every PUBLISH acknowledged, in the order received.
  for (uint16_t id = 1; id <= 5; ++id) {
    const std::optional<std::string> ack = FakeBroker::ReadPacket(fd, seconds(5));
    ASSERT_TRUE(ack.has_value()) << "no PUBACK for " << id;
    EXPECT_EQ(*ack, "\x40\x02\x00"s + static_cast<char>(id));
  }
}

TEST_F(NativeMqttConnectionTest, ABrokerDisconnectEndsTheConnectionAndTheClientComesBack) {
  Start(Settings());
  const int fd = AcceptAndConnect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitUntil([&] { return connects_.size() == 1; }, seconds(5)));
  FakeBroker::Write(fd, Packet(0xE0, "\x8E\x00"s));  // session taken over
  ::shutdown(fd, SHUT_RDWR);
  const int again = AcceptAndConnect();
  ASSERT_GE(again, 0) << "the client did not reconnect";
  ASSERT_TRUE(WaitUntil([&] { return connects_.size() == 2; }, seconds(5)));
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(lost_, 1);
  EXPECT_FALSE(connects_[0]);
  EXPECT_TRUE(connects_[1]);
}

TEST_F(NativeMqttConnectionTest, NoPingRespWithinTheServerKeepAliveEndsTheConnection) {
  Start(Settings());
  // Server Keep Alive 1 s replaces the client's 30 s.
  const int fd = AcceptAndConnect(ConnAck("\x13\x00\x01"s));
  ASSERT_GE(fd, 0);
  const std::optional<std::string> ping = FakeBroker::ReadPacket(fd, seconds(10));
  ASSERT_TRUE(ping.has_value()) << "no PINGREQ after the keep-alive";
  EXPECT_EQ(*ping, "\xC0\x00"s);
  // Not answered: the client gives up on this connection and connects again.
  const int again = AcceptAndConnect();
  EXPECT_GE(again, 0) << "the client did not reconnect after the missing PINGRESP";
  EXPECT_TRUE(WaitUntil([&] { return lost_ == 1; }, seconds(5)));
}

TEST_F(NativeMqttConnectionTest, AMalformedPacketIsAnsweredWithDisconnectAndAReconnect) {
  Start(Settings());
  const int fd = AcceptAndConnect();
  ASSERT_GE(fd, 0);
  // QoS 2, which no subscription of ours asks for.
  FakeBroker::Write(fd, Packet(0x34, Str("t") + "\x00\x01\x00"s));
  const std::optional<std::string> disconnect = FakeBroker::ReadPacket(fd, seconds(5));
  ASSERT_TRUE(disconnect.has_value());
  EXPECT_EQ(*disconnect, "\xE0\x02\x81\x00"s);  // malformed packet
  EXPECT_FALSE(FakeBroker::ReadPacket(fd, seconds(5)).has_value()) << "the client kept it open";
  EXPECT_GE(AcceptAndConnect(), 0) << "the client did not reconnect";
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(received_.empty());
}

TEST_F(NativeMqttConnectionTest, ARefusedConnectIsRetried) {
  Start(Settings());
  const int refused = AcceptAndConnect(Packet(0x20, "\x00\x87\x00"s));  // not authorized
  ASSERT_GE(refused, 0);
  EXPECT_GE(AcceptAndConnect(), 0) << "the client did not retry";
  EXPECT_TRUE(WaitUntil([&] { return connects_.size() == 1; }, seconds(5)));
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(lost_, 0);  // only accepted connections are lost
}

TEST_F(NativeMqttConnectionTest, StopSendsANormalDisconnect) {
  Start(Settings());
  const int fd = AcceptAndConnect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitUntil([&] { return connects_.size() == 1; }, seconds(5)));
  connection_->Stop();
  const std::optional<std::string> disconnect = FakeBroker::ReadPacket(fd, seconds(5));
  ASSERT_TRUE(disconnect.has_value());
  EXPECT_EQ(*disconnect, "\xE0\x02\x00\x00"s);
  EXPECT_FALSE(connection_->connected());
}

TEST_F(NativeMqttConnectionTest, StopBeforeTheConnAckClosesWithoutADisconnect) {
  Start(Settings());
  const int fd = broker_.Accept();
  ASSERT_GE(fd, 0);
  const std::optional<std::string> connect = FakeBroker::ReadPacket(fd, seconds(5));
  ASSERT_TRUE(connect.has_value() && (*connect)[0] == '\x10') << "no CONNECT";
  connection_->Stop();  // never answered: not connected, so nothing to say goodbye to
  EXPECT_FALSE(FakeBroker::ReadPacket(fd, seconds(5)).has_value());
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(connects_.empty());
  EXPECT_EQ(lost_, 0);
}

}  // namespace
}  // namespace mmi::transport::internal
