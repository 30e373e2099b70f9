#include "libs/store/postgres/deletion_listener.h"

#include <utility>

namespace mmi::store::postgres {

PostgresDeletionListener::PostgresDeletionListener(DeletionListenerSettings settings,
                                                   DispatchStore& store)
    : listener_(NotificationListenerSettings{.dsn = std::move(settings.dsn),
                                             .channel = std::move(settings.channel),
                                             .what = "deletion confirmations",
                                             .logger = "dispatcher.deletion",
                                             .poll = settings.poll,
                                             .reconnect = settings.reconnect},
                [&store](const NotificationListener::Callback& missed) -> absl::Status {
                  auto confirmed = store.ConfirmedDeletions();
                  if (!confirmed.ok()) {
                    return confirmed.status();
                  }
                  for (const auto& id : *confirmed) {
                    missed(id);
                  }
                  return absl::OkStatus();
                }) {}

}  // namespace mmi::store::postgres
