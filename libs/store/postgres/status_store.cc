#include "libs/store/postgres/status_store.h"

#include <algorithm>
#include <array>
#include <map>
#include <pqxx/pqxx>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/store/postgres/internal/shared_statements.h"

namespace mmi::store::postgres {
namespace {

constexpr size_t kRowsPerStatement = 500;

// The 8-4-4-4-12 hex form: anything else would make the uuid cast fail the whole statement.
bool IsUuid(const std::string& text) {
  if (text.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : !absl::ascii_isxdigit(static_cast<unsigned char>(text[i]))) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> OptionalText(const pqxx::field& f) {
  if (f.is_null()) {
    return std::nullopt;
  }
  return f.as<std::string>();
}

std::string Optional(pqxx::transaction_base& tx, const std::optional<std::string>& v) {
  return v ? tx.quote(*v) : "NULL";
}

std::string Timestamp(std::chrono::system_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  // Exact microseconds: to_timestamp() goes through a double.
  return absl::StrCat("(timestamptz 'epoch' + ", micros, " * interval '1 microsecond')");
}

std::optional<std::chrono::system_clock::time_point> OptionalMicros(const pqxx::field& f) {
  if (f.is_null()) {
    return std::nullopt;
  }
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(f.as<int64_t>())));
}

constexpr char kAppliedColumns[] =
    "resource_id::text, last_sequence_id, status_hash, material_hash, sync_status, health_status, "
    "appset_namespace, appset_name, (extract(epoch from volatile_written_at) * 1000000)::bigint, "
    "acked_version";

AppliedStatus AppliedFromRow(const pqxx::row& r) {
  AppliedStatus s;
  s.resource_id = r[0].as<std::string>();
  s.last_sequence_id = r[1].as<int64_t>();
  s.status_hash = r[2].as<std::string>();
  s.material_hash = r[3].as<std::string>();
  s.sync_status = OptionalText(r[4]);
  s.health_status = OptionalText(r[5]);
  s.appset_namespace = OptionalText(r[6]);
  s.appset_name = OptionalText(r[7]);
  s.volatile_written_at = OptionalMicros(r[8]);
  if (!r[9].is_null()) {
    s.acked_version = r[9].as<int32_t>();
  }
  return s;
}

HubAppRef HubAppFromRow(const pqxx::row& r) {
  HubAppRef ref;
  ref.resource_id = r[0].as<std::string>();
  ref.cluster = r[1].as<std::string>();
  ref.hub_namespace = r[2].as<std::string>();
  ref.hub_name = r[3].as<std::string>();
  ref.appset_namespace = OptionalText(r[4]);
  ref.appset_name = OptionalText(r[5]);
  ref.deletion_state = static_cast<DeletionState>(r[6].as<int>());
  if (r[7].as<bool>()) {  // a manifest_renders row: manifest delivery
    ManifestRenderRef m;
    m.revision = r[8].as<std::string>();
    m.source_type = r[9].as<std::string>();
    m.render_error = OptionalText(r[10]);
    m.payload_hash = r[11].as<std::string>();
    m.version = r[12].as<int64_t>();
    m.last_published_at = OptionalMicros(r[13]);
    ref.manifest = std::move(m);
  }
  return ref;
}

DispatchedPayload PayloadFromRow(const pqxx::row& r) {
  return {r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>()};
}

}  // namespace

template <typename T>
absl::StatusOr<std::vector<T>> PostgresStatusStore::SelectByIds(
    const char* what, const std::vector<std::string>& resource_ids, const std::string& select_in,
    T (*of)(const pqxx::row&)) {
  std::vector<std::string> ids;
  for (const auto& id : resource_ids) {
    if (IsUuid(id)) {
      ids.push_back(absl::AsciiStrToLower(id));
    }
  }
  std::vector<T> out;
  if (ids.empty()) {
    return out;
  }
  absl::Status status = pool_.Run(what, [&](pqxx::connection& conn) {
    out.clear();  // a retried attempt starts over
    pqxx::nontransaction tx(conn);
    for (size_t start = 0; start < ids.size(); start += kRowsPerStatement) {
      const size_t end = std::min(ids.size(), start + kRowsPerStatement);
      std::vector<std::string> quoted;
      for (size_t i = start; i < end; ++i) {
        quoted.push_back(tx.quote(ids[i]));
      }
      for (const auto& r : tx.exec(absl::StrCat(select_in, absl::StrJoin(quoted, ","), ")"))) {
        out.push_back(of(r));
      }
    }
  });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::Status PostgresStatusStore::ForEachPage(const char* what, const std::string& select,
                                              const std::function<void(const pqxx::row&)>& fn) {
  return pool_.Run(what, [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    internal::ForEachByResourceId(tx, absl::StrCat(select, " LIMIT ", internal::kResourcePageSize),
                                  fn);
    tx.commit();
  });
}

absl::StatusOr<std::vector<HubAppRef>> PostgresStatusStore::LookupHubApps(
    const std::vector<std::string>& resource_ids) {
  return SelectByIds(
      "look up hub applications", resource_ids,
      "SELECT d.resource_id::text, d.cluster, d.hub_namespace, d.hub_name, d.appset_namespace, "
      "d.appset_name, d.deletion_state, r.resource_id IS NOT NULL, r.revision, r.source_type, "
      "r.render_error, d.payload_hash, d.version, "
      "(extract(epoch from d.last_published_at) * 1000000)::bigint "
      "FROM dispatched_resources d LEFT JOIN manifest_renders r "
      "ON r.resource_id = d.resource_id::text WHERE d.resource_id IN (",
      HubAppFromRow);
}

absl::StatusOr<std::vector<DispatchedPayload>> PostgresStatusStore::LookupPayloads(
    const std::vector<std::string>& resource_ids) {
  return SelectByIds("look up dispatched payloads", resource_ids,
                     "SELECT resource_id::text, payload_hash, payload FROM dispatched_resources "
                     "WHERE resource_id IN (",
                     PayloadFromRow);
}

absl::Status PostgresStatusStore::ForEachStaleManifestRender(
    const std::function<void(const std::string& resource_id, const std::string& cluster)>& fn) {
  return ForEachPage(
      "list stale manifest renders",
      "SELECT d.resource_id::text, d.cluster FROM manifest_renders r"
      " JOIN dispatched_resources d ON d.resource_id::text = r.resource_id"
      " LEFT JOIN resource_status s ON s.resource_id = d.resource_id"
      " WHERE d.resource_id > $1::uuid"
      " AND (s.applied_at IS NULL OR r.updated_at >= s.applied_at)"
      " ORDER BY d.resource_id",
      [&](const pqxx::row& r) { fn(r[0].as<std::string>(), r[1].as<std::string>()); });
}

absl::Status PostgresStatusStore::ForEachAppliedStatus(
    const std::function<void(const AppliedStatus&)>& fn) {
  return ForEachPage("load applied statuses",
                     absl::StrCat("SELECT ", kAppliedColumns,
                                  " FROM resource_status WHERE resource_id > $1::uuid"
                                  " ORDER BY resource_id"),
                     [&](const pqxx::row& r) { fn(AppliedFromRow(r)); });
}

absl::Status PostgresStatusStore::SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) {
  if (statuses.empty()) {
    return absl::OkStatus();
  }
  // ON CONFLICT cannot touch a row twice in one statement: the last entry of a resource wins,
  // with the sync and health of an earlier one when it is an acknowledgement alone.
  std::map<std::string, AppliedStatus> latest;
  for (const auto& s : statuses) {
    if (!IsUuid(s.resource_id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("save applied status: resource id ", s.resource_id, " is not a UUID"));
    }
    auto [it, fresh] = latest.try_emplace(absl::AsciiStrToLower(s.resource_id), s);
    if (!fresh) {
      it->second = KeepingStatusOf(it->second, s);
    }
  }
  // Statuses, and acknowledgements alone (whose sync and health stay as stored).
  std::array<std::vector<const AppliedStatus*>, 2> groups;
  for (const auto& [id, s] : latest) {
    groups[s.acknowledgement_only ? 1 : 0].push_back(&s);
  }
  return pool_.Run("save applied statuses", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    for (const auto& rows : groups) {
      const bool alone = &rows == &groups[1];
      for (size_t start = 0; start < rows.size(); start += kRowsPerStatement) {
        std::string sql =
            "INSERT INTO resource_status (resource_id, last_sequence_id, status_hash, "
            "material_hash, sync_status, health_status, appset_namespace, appset_name, "
            "volatile_written_at, acked_version, applied_at) VALUES ";
        const size_t end = std::min(rows.size(), start + kRowsPerStatement);
        for (size_t i = start; i < end; ++i) {
          const AppliedStatus& s = *rows[i];
          absl::StrAppend(&sql, i == start ? "" : ",", "(", tx.quote(s.resource_id), "::uuid,",
                          s.last_sequence_id, ",", tx.quote(s.status_hash), ",",
                          tx.quote(s.material_hash), ",", Optional(tx, s.sync_status), ",",
                          Optional(tx, s.health_status), ",", Optional(tx, s.appset_namespace), ",",
                          Optional(tx, s.appset_name), ",",
                          s.volatile_written_at ? Timestamp(*s.volatile_written_at) : "NULL", ",",
                          s.acked_version ? absl::StrCat(*s.acked_version) : "NULL", ", now())");
        }
        absl::StrAppend(
            &sql,
            " ON CONFLICT (resource_id) DO UPDATE SET last_sequence_id = "
            "EXCLUDED.last_sequence_id, status_hash = EXCLUDED.status_hash, material_hash = "
            "EXCLUDED.material_hash, ",
            alone ? ""
                  : "sync_status = EXCLUDED.sync_status, health_status = "
                    "EXCLUDED.health_status, ",
            "appset_namespace = EXCLUDED.appset_namespace, appset_name = EXCLUDED.appset_name, "
            "volatile_written_at = EXCLUDED.volatile_written_at, "
            "acked_version = EXCLUDED.acked_version, applied_at = now()");
        tx.exec0(sql);
      }
    }
    tx.commit();
  });
}

absl::Status PostgresStatusStore::ForEachResyncEntry(
    const std::function<void(const ResyncEntry&)>& fn) {
  return ForEachPage(
      "list resync entries",
      "SELECT d.resource_id::text, d.cluster, coalesce(s.status_hash, '')"
      " FROM dispatched_resources d LEFT JOIN resource_status s"
      " ON s.resource_id = d.resource_id WHERE d.resource_id > $1::uuid ORDER BY d.resource_id",
      [&](const pqxx::row& r) {
        fn(ResyncEntry{r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>()});
      });
}

absl::StatusOr<bool> PostgresStatusStore::MarkDeletionConfirmed(const std::string& resource_id) {
  if (!IsUuid(resource_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confirm a deletion: resource id ", resource_id, " is not a UUID"));
  }
  const std::string id = absl::AsciiStrToLower(resource_id);
  bool confirmed = false;
  absl::Status status = pool_.Run("confirm a deletion", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    const bool deleting = internal::ConfirmDeletionOfDeleting(tx, id);
    if (deleting) {
      tx.exec_params0("DELETE FROM resource_status WHERE resource_id = $1::uuid", id);
      // Delivered to listeners only when the transaction commits.
      internal::NotifyDeletionConfirmed(tx, id);
    }
    tx.commit();
    confirmed = deleting;
  });
  if (!status.ok()) {
    return status;
  }
  return confirmed;
}

absl::StatusOr<std::vector<AppSetCount>> PostgresStatusStore::AppSetCounts() {
  std::vector<AppSetCount> out;
  absl::Status status = pool_.Run("count applications per appset", [&](pqxx::connection& conn) {
    out.clear();
    pqxx::nontransaction tx(conn);
    for (const auto& r :
         tx.exec("SELECT coalesce(appset_namespace, ''), appset_name, coalesce(sync_status, ''), "
                 "coalesce(health_status, ''), count(*) FROM resource_status "
                 "WHERE appset_name IS NOT NULL GROUP BY 1, 2, 3, 4")) {
      out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                     r[3].as<std::string>(), r[4].as<int64_t>()});
    }
  });
  if (!status.ok()) {
    return status;
  }
  // Byte order, whatever the database collation.
  std::sort(out.begin(), out.end(), [](const AppSetCount& a, const AppSetCount& b) {
    return std::tie(a.appset_namespace, a.appset_name, a.sync_status, a.health_status) <
           std::tie(b.appset_namespace, b.appset_name, b.sync_status, b.health_status);
  });
  return out;
}

}  // namespace mmi::store::postgres
