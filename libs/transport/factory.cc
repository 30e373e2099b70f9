#include "libs/transport/factory.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"

#if MMI_TRANSPORT_WITH_MQTT
#include "libs/transport/mqtt/native_mqtt_publisher.h"
#include "libs/transport/mqtt/native_mqtt_subscriber.h"
#endif
#if MMI_TRANSPORT_WITH_KAFKA
#include "libs/transport/kafka/kafka_publisher.h"
#include "libs/transport/kafka/kafka_subscriber.h"
#endif
#if MMI_TRANSPORT_WITH_GRPC
#include "libs/transport/grpc/grpc_channel.h"
#include "libs/transport/grpc/grpc_publisher.h"
#include "libs/transport/grpc/grpc_subscriber.h"
#endif

namespace mmi::transport {
namespace {

[[maybe_unused]] absl::Status CompiledOut(std::string_view name, std::string_view option) {
  return absl::FailedPreconditionError(
      absl::StrCat("transport.type is ", std::string(name), " but this binary was built with ",
                   std::string(option), "=OFF; rebuild with it ON or pick another transport"));
}

struct ClientsBuilder {
  const TransportDeps& deps;
  bool want_publisher;
  bool want_subscriber;

  absl::StatusOr<TransportClients> operator()(const MqttSettings& settings) const {
#if MMI_TRANSPORT_WITH_MQTT
    TransportClients clients;
    // One client per direction: publishing on libmosquitto, receiving on our own MQTT 5 path
    // (docs/adr/0003, 0004).
    if (want_publisher) {
      clients.publisher =
          std::make_unique<NativeMqttPublisher>(settings, deps.clock, deps.registry);
    }
    if (want_subscriber) {
      clients.subscriber = std::make_unique<NativeMqttSubscriber>(settings, deps.registry);
    }
    return clients;
#else
    (void)settings;
    return CompiledOut("mqtt", "MMI_WITH_MQTT");
#endif
  }

  absl::StatusOr<TransportClients> operator()(const KafkaSettings& settings) const {
#if MMI_TRANSPORT_WITH_KAFKA
    TransportClients clients;
    if (want_publisher) {
      clients.publisher = std::make_unique<KafkaPublisher>(settings, deps.clock, deps.registry);
    }
    if (want_subscriber) {
      clients.subscriber = std::make_unique<KafkaSubscriber>(settings, deps.registry);
    }
    return clients;
#else
    (void)settings;
    return CompiledOut("kafka", "MMI_WITH_KAFKA");
#endif
  }

  absl::StatusOr<TransportClients> operator()(const GrpcSettings& settings) const {
#if MMI_TRANSPORT_WITH_GRPC
    ASSIGN_OR_RETURN(std::shared_ptr<::grpc::Channel> channel, MakeGrpcChannel(settings));
    TransportClients clients;
    if (want_publisher) {
      clients.publisher =
          std::make_unique<GrpcPublisher>(settings, channel, deps.clock, deps.registry);
    }
    if (want_subscriber) {
      clients.subscriber =
          std::make_unique<GrpcSubscriber>(settings, channel, deps.clock, deps.registry);
    }
    return clients;
#else
    (void)settings;
    return CompiledOut("grpc", "MMI_WITH_GRPC");
#endif
  }
};

absl::StatusOr<TransportClients> Build(const TransportSettings& settings, const TransportDeps& deps,
                                       bool want_publisher, bool want_subscriber) {
  RETURN_IF_ERROR(ValidateTransportSettings(settings));
  return std::visit(ClientsBuilder{deps, want_publisher, want_subscriber}, settings);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Publisher>> MakePublisher(const TransportSettings& settings,
                                                         const TransportDeps& deps) {
  ASSIGN_OR_RETURN(TransportClients clients, Build(settings, deps, true, false));
  return std::move(clients.publisher);
}

absl::StatusOr<std::unique_ptr<Subscriber>> MakeSubscriber(const TransportSettings& settings,
                                                           const TransportDeps& deps) {
  ASSIGN_OR_RETURN(TransportClients clients, Build(settings, deps, false, true));
  return std::move(clients.subscriber);
}

absl::StatusOr<TransportClients> MakeClients(const TransportSettings& settings,
                                             const TransportDeps& deps) {
  return Build(settings, deps, true, true);
}

}  // namespace mmi::transport
