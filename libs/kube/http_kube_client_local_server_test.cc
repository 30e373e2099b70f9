// HttpKubeClient over real sockets against a scripted HTTP/1.1 server in this process (loopback,
// port 0): the protocol edge cases a real API server will not produce on demand.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/common/clock.h"
#include "libs/common/testing/fake_sleeper.h"
#include "libs/kube/errors.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/informer.h"

namespace mmi::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

struct Request {
  std::string method;
  std::string target;
  std::string body;
};

// One accepted connection, handed to the script.
class Conn {
 public:
  Conn(int fd, const std::atomic<bool>& stopping) : fd_(fd), stopping_(stopping) {}
  void Write(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  void Respond(int status, const std::string& reason, const std::string& body,
               const std::string& extra_headers = "") {
    Write(absl::StrCat("HTTP/1.1 ", status, " ", reason,
                       "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                       "\r\n", extra_headers, "\r\n", body));
  }
  void StartChunked() {
    Write(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
  }
  void Chunk(std::string_view data) {
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", data.size());
    Write(size);
    Write(data);
    Write("\r\n");
  }
  void EndChunked() { Write("0\r\n\r\n"); }
  // Drops the TCP connection in the middle of whatever was being sent.
  void Abort() { close_after_ = true; }
  // Keeps the response open until the client goes away or the server stops.
  void Hold() {
    while (!stopping_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        char buf[256];
        if (::recv(fd_, buf, sizeof(buf), 0) <= 0) {
          return;
        }
      }
    }
  }
  bool CloseAfter() const { return close_after_; }

 private:
  int fd_;
  const std::atomic<bool>& stopping_;
  bool close_after_ = false;
};

// A loopback HTTP/1.1 server whose answers come from `script` (one call per request).
class ScriptedServer {
 public:
  using Script = std::function<void(int index, const Request&, Conn&)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      for (int fd : open_fds_) {
        ::shutdown(fd, SHUT_RDWR);
      }
      threads.swap(threads_);
    }
    for (auto& t : threads) {
      t.join();
    }
  }
  std::string Url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  std::vector<Request> Requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  int Connections() const { return connections_.load(); }
  bool WaitForRequests(size_t n) const {
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requests_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(std::chrono::seconds(5)));
  }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        return;
      }
      ++connections_;
      absl::MutexLock lock(&mu_);
      open_fds_.push_back(fd);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  // Reads requests off one connection (keep-alive) and runs the script for each.
  void Serve(int fd) {
    std::string buffer;
    while (!stopping_) {
      size_t header_end;
      while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        buffer.append(chunk, static_cast<size_t>(n));
      }
      Request request;
      const std::string head = buffer.substr(0, header_end);
      const size_t sp1 = head.find(' ');
      const size_t sp2 = head.find(' ', sp1 + 1);
      request.method = head.substr(0, sp1);
      request.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t content_length = 0;
      const std::string lower = absl::AsciiStrToLower(head);
      if (const size_t cl = lower.find("content-length:"); cl != std::string::npos) {
        const size_t eol = lower.find("\r\n", cl);
        (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(lower.substr(cl + 15, eol - cl - 15)),
                               &content_length);
      }
      buffer.erase(0, header_end + 4);
      while (buffer.size() < content_length) {
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        buffer.append(chunk, static_cast<size_t>(n));
      }
      request.body = buffer.substr(0, content_length);
      buffer.erase(0, content_length);
      int index = 0;
      {
        absl::MutexLock lock(&mu_);
        index = static_cast<int>(requests_.size());
        requests_.push_back(request);
      }
      Conn conn(fd, stopping_);
      script_(index, request, conn);
      if (conn.CloseAfter()) {
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
        return;
      }
    }
    ::close(fd);
  }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable absl::Mutex mu_;
  std::vector<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
};

std::string Status(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

std::string Event(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

json App(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata", {{"name", name}, {"namespace", "argocd"}, {"resourceVersion", rv}}}};
}

class LocalServerTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpKubeClient> Client(const ScriptedServer& server) {
    HttpKubeClientSettings settings;
    settings.rest.server = server.Url();
    settings.rate_limit.qps = 0;
    auto client = HttpKubeClient::Create(settings, RealClock::Instance(), sleeper_, nullptr);
    EXPECT_TRUE(client.ok()) << client.status();
    return std::move(*client);
  }
  // An informer of apps_ that retries at once.
  InformerSettings FastInformer(bool watch_list) const {
    InformerSettings settings;
    settings.resource = apps_;
    settings.watch_list = watch_list;
    settings.backoff = {
        .initial = milliseconds(1), .max = milliseconds(5), .multiplier = 2, .jitter = 0};
    return settings;
  }

  const ResourceRef apps_{"argoproj.io", "v1alpha1", "applications", "argocd"};
  // Real time for stall detection over sockets; waits (Retry-After) are recorded, not slept.
  mmi::testing::FakeSleeper sleeper_;
};

TEST_F(LocalServerTest, HonoursRetryAfterOn429AndSucceedsOnTheRetry) {
  ScriptedServer server([](int index, const Request&, Conn& conn) {
    if (index == 0) {
      conn.Respond(429, "Too Many Requests", Status(429, "TooManyRequests", "slow down"),
                   "Retry-After: 2\r\n");
    } else {
      conn.Respond(201, "Created", App("a", "5").dump());
    }
  });
  auto client = Client(server);
  auto created = client->Create(apps_, App("a", ""), {});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["resourceVersion"], "5");
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].body, requests[0].body);  // the same body is sent again
  ASSERT_EQ(sleeper_.Sleeps().size(), 1u);
  EXPECT_GE(sleeper_.Sleeps()[0], std::chrono::seconds(2));
  EXPECT_EQ(server.Connections(), 1);  // the keep-alive connection is reused
}

TEST_F(LocalServerTest, ReportsAWatchCutMidEventAsUnavailableAfterTheWholeEvents) {
  ScriptedServer server([](int, const Request&, Conn& conn) {
    conn.StartChunked();
    const std::string second = Event("MODIFIED", App("a", "12"));
    conn.Chunk(Event("ADDED", App("a", "11")) + second.substr(0, 20));
    conn.Abort();  // the connection drops inside the second event
  });
  auto client = Client(server);
  std::vector<std::string> versions;
  WatchOptions options;
  options.resource_version = "10";
  const absl::Status status = client->Watch(
      apps_, options,
      [&](WatchEvent&& e) {
        versions.push_back(ResourceVersionOf(e.object));
        return true;
      },
      std::stop_token());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(versions, ::testing::ElementsAre("11"));
  EXPECT_THAT(server.Requests()[0].target,
              HasSubstr("watch=true&resourceVersion=10&allowWatchBookmarks=true"));
}

TEST_F(LocalServerTest, DetectsAStalledWatch) {
  ScriptedServer server([](int, const Request&, Conn& conn) {
    conn.StartChunked();
    conn.Hold();  // headers, then silence
  });
  auto client = Client(server);
  WatchOptions options;
  options.stall_timeout = milliseconds(200);
  const auto started = std::chrono::steady_clock::now();
  const absl::Status status =
      client->Watch(apps_, options, [](WatchEvent&&) { return true; }, std::stop_token());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("stalled"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(900));
}

TEST_F(LocalServerTest, StopEndsAQuietWatchAtOnce) {
  ScriptedServer server([](int, const Request&, Conn& conn) {
    conn.StartChunked();
    conn.Hold();
  });
  auto client = Client(server);
  std::stop_source stop;
  absl::Status status;
  std::thread watcher([&] {
    status =
        client->Watch(apps_, WatchOptions(), [](WatchEvent&&) { return true; }, stop.get_token());
  });
  ASSERT_TRUE(server.WaitForRequests(1));
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  watcher.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, milliseconds(300));
}

TEST_F(LocalServerTest, WatchRefusedWith410IsGone) {
  ScriptedServer server([](int, const Request&, Conn& conn) {
    conn.Respond(410, "Gone", Status(410, "Expired", "too old resource version: 1 (99)"));
  });
  auto client = Client(server);
  WatchOptions options;
  options.resource_version = "1";
  const absl::Status status =
      client->Watch(apps_, options, [](WatchEvent&&) { return true; }, std::stop_token());
  EXPECT_TRUE(IsGone(status)) << status;
}

// The informer over real HTTP: resume after a mid-stream disconnect, relist after an ERROR 410.
class Recorder final : public InformerHandler {
 public:
  void OnAdd(const ObjectPtr& o, bool) override { Push("add " + Name(o)); }
  void OnUpdate(const ObjectPtr&, const ObjectPtr& o) override { Push("update " + Name(o)); }
  void OnDelete(const ObjectPtr& o) override { Push("delete " + Name(o)); }
  bool WaitForCount(size_t n) {
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(std::chrono::seconds(5)));
  }
  std::vector<std::string> Events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  static std::string Name(const ObjectPtr& o) {
    return absl::StrCat((*o)["metadata"]["name"].get<std::string>(), "@", ResourceVersionOf(*o));
  }
  void Push(std::string e) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(e));
  }
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

TEST_F(LocalServerTest, InformerResumesAfterADisconnectAndRelistsAfterExpiry) {
  Recorder recorder;
  ScriptedServer server([&recorder](int index, const Request& request, Conn& conn) {
    const bool watch = request.target.find("watch=true") != std::string::npos;
    if (!watch) {
      // First list: a@10, b@10. Relist (after the 410): a@13, c@14 (b vanished).
      const json items = index == 0 ? json::array({App("a", "10"), App("b", "10")})
                                    : json::array({App("a", "13"), App("c", "14")});
      conn.Respond(200, "OK",
                   json{{"kind", "ApplicationList"},
                        {"metadata", {{"resourceVersion", index == 0 ? "10" : "14"}}},
                        {"items", items}}
                       .dump());
      return;
    }
    conn.StartChunked();
    if (request.target.find("resourceVersion=10&") != std::string::npos) {
      // The informer watches from the list's version while it still hands the list over; the
      // event waits for the list's two adds, so the order below is the one checked.
      recorder.WaitForCount(2);
      conn.Chunk(Event("MODIFIED", App("a", "11")) + "{\"type\":\"ADD");
      conn.Abort();  // mid-stream disconnect
    } else if (request.target.find("resourceVersion=11&") != std::string::npos) {
      conn.Chunk(Event("ERROR", json::parse(Status(410, "Expired", "too old resource version"))));
      conn.EndChunked();
    } else {
      conn.Hold();
    }
  });
  auto client = Client(server);
  Informer informer(*client, RealClock::Instance(),
                    FastInformer(/*watch_list=*/false),  // paged LISTs (streamed: the next test)
                    nullptr);
  informer.AddHandler(recorder);
  informer.Start();
  ASSERT_TRUE(recorder.WaitForCount(6));
  EXPECT_THAT(recorder.Events(),
              ::testing::ElementsAre("add a@10", "add b@10", "update a@11",       // list, watch
                                     "add c@14", "update a@13", "delete b@10"));  // relist diff
  ASSERT_TRUE(server.WaitForRequests(5));
  const auto requests = server.Requests();
  EXPECT_THAT(requests[1].target, HasSubstr("resourceVersion=10&"));
  EXPECT_THAT(requests[2].target, HasSubstr("resourceVersion=11&"));  // resumed, not relisted
  EXPECT_THAT(requests[3].target, ::testing::Not(HasSubstr("watch=true")));  // relist after 410
  EXPECT_THAT(requests[4].target, HasSubstr("resourceVersion=14&"));
  EXPECT_EQ(informer.Size(), 2u);
  informer.Stop();
}

TEST_F(LocalServerTest, InformerStreamsItsListThenResumesTheWatchFromTheLastEvent) {
  ScriptedServer server([](int index, const Request& request, Conn& conn) {
    if (request.target.find("watch=true") == std::string::npos) {
      conn.Respond(500, "Internal Server Error", Status(500, "InternalError", "no LIST expected"));
      return;
    }
    conn.StartChunked();
    if (index == 0) {
      json end = {
          {"kind", "Application"},
          {"apiVersion", "argoproj.io/v1alpha1"},
          {"metadata",
           {{"resourceVersion", "12"}, {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
      conn.Chunk(Event("ADDED", App("a", "10")) + Event("ADDED", App("b", "11")) +
                 Event("BOOKMARK", end) + Event("MODIFIED", App("a", "13")));
      conn.Abort();  // the connection drops after the list, during the watch
    } else {
      conn.Hold();
    }
  });
  auto client = Client(server);
  Recorder recorder;
  Informer informer(*client, RealClock::Instance(), FastInformer(/*watch_list=*/true), nullptr);
  informer.AddHandler(recorder);
  informer.Start();
  ASSERT_TRUE(recorder.WaitForCount(3));
  EXPECT_THAT(recorder.Events(), ::testing::ElementsAre("add a@10", "add b@11", "update a@13"));
  ASSERT_TRUE(server.WaitForRequests(2));
  const auto requests = server.Requests();
  EXPECT_THAT(requests[0].target, HasSubstr("sendInitialEvents=true"));
  EXPECT_THAT(requests[0].target, HasSubstr("resourceVersionMatch=NotOlderThan"));
  EXPECT_THAT(requests[0].target, ::testing::Not(HasSubstr("resourceVersion=")));
  EXPECT_THAT(requests[1].target, HasSubstr("resourceVersion=13&"));  // resumed, no relist
  EXPECT_THAT(requests[1].target, ::testing::Not(HasSubstr("sendInitialEvents")));
  EXPECT_EQ(informer.Stats().streamed_lists, 1);
  EXPECT_EQ(informer.Size(), 2u);
  informer.Stop();
}

}  // namespace
}  // namespace mmi::kube
