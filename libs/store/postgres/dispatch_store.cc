#include "libs/store/postgres/dispatch_store.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/status_macros.h"
#include "libs/store/postgres/internal/shared_statements.h"

namespace mmi::store::postgres {
namespace {

std::chrono::system_clock::time_point FromEpochMicros(int64_t micros) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(micros)));
}

// Rows per multi-row statement: big enough to amortise round trips, small enough for one packet
// budget of a few MiB with 2 KB payloads.
constexpr size_t kRowsPerStatement = 500;

constexpr char kResourceColumns[] =
    "resource_id::text, cluster, hub_namespace, hub_name, hub_uid, work_name, appset_namespace, "
    "appset_name, version, payload_hash, payload, coalesce(metadata, ''), "
    "(extract(epoch from last_published_at) * 1000000)::bigint, deletion_state, delivery";

// The same columns but for the payload and metadata ('' in their places).
constexpr char kStateColumns[] =
    "resource_id::text, cluster, hub_namespace, hub_name, hub_uid, work_name, appset_namespace, "
    "appset_name, version, payload_hash, ''::text, ''::text, "
    "(extract(epoch from last_published_at) * 1000000)::bigint, deletion_state, delivery";

DispatchedResource ResourceFromRow(const pqxx::row& r) {
  DispatchedResource d;
  d.resource_id = r[0].as<std::string>();
  d.cluster = r[1].as<std::string>();
  d.hub_namespace = r[2].as<std::string>();
  d.hub_name = r[3].as<std::string>();
  d.hub_uid = r[4].as<std::string>();
  d.work_name = r[5].as<std::string>();
  if (!r[6].is_null()) {
    d.appset_namespace = r[6].as<std::string>();
  }
  if (!r[7].is_null()) {
    d.appset_name = r[7].as<std::string>();
  }
  d.version = r[8].as<int32_t>();
  d.payload_hash = r[9].as<std::string>();
  d.payload = r[10].as<std::string>();
  d.metadata = r[11].as<std::string>();
  if (!r[12].is_null()) {
    d.last_published_at = FromEpochMicros(r[12].as<int64_t>());
  }
  d.deletion_state = static_cast<DeletionState>(r[13].as<int>());
  d.delivery = static_cast<Delivery>(r[14].as<int>());
  return d;
}

constexpr char kOutboxColumns[] =
    "seq, resource_id::text, cluster, action, version, payload_hash, event, attempts";

OutboxEntry OutboxFromRow(const pqxx::row& r) {
  OutboxEntry e;
  e.seq = r[0].as<int64_t>();
  e.resource_id = r[1].as<std::string>();
  e.cluster = r[2].as<std::string>();
  const std::string action = r[3].as<std::string>();
  e.action = action == "create"   ? OutboxAction::kCreate
             : action == "delete" ? OutboxAction::kDelete
                                  : OutboxAction::kUpdate;
  e.version = r[4].as<int32_t>();
  e.payload_hash = r[5].as<std::string>();
  e.event = r[6].as<std::string>();
  e.attempts = r[7].as<int32_t>();
  return e;
}

// A PostgreSQL array literal of `values`, each element quoted and escaped ({"a","b\\"c"}), for
// a bound parameter: never spliced into a statement.
std::string ArrayLiteral(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i == 0 ? "\"" : ",\"";
    for (char c : values[i]) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string EpochSeconds(std::chrono::system_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  return absl::StrCat("to_timestamp(", micros / 1000000, ".",
                      absl::StrCat(1000000 + micros % 1000000).substr(1), ")");
}

std::string SeqArray(const std::vector<int64_t>& seqs) {
  return absl::StrCat("'{", absl::StrJoin(seqs, ","), "}'::bigint[]");
}

// The rows of one multi-row INSERT as bound parameters ($1, $2, ...): values travel to the
// server as they are, so neither the client quotes them nor the server lexes them out of the
// statement text (both were a large part of Record()'s cost with ~2 KB payloads). The strings
// added must outlive the statement's execution; numbers are kept here.
class BoundRows {
 public:
  // One SQL cast per column ("::uuid", or "" for text).
  explicit BoundRows(const std::vector<std::string_view>& casts) : casts_(casts) {}

  void Add(const std::string& value) { params_.push_back(value.c_str()); }
  void AddNull() { params_.push_back(nullptr); }
  void Add(const std::optional<std::string>& value) { value ? Add(*value) : AddNull(); }
  void AddNumber(int64_t value) {
    numbers_.push_back(std::to_string(value));
    params_.push_back(numbers_.back().c_str());
  }

  // "($1::uuid,$2,...),(...)" for the rows added.
  std::string Values() const {
    std::string out;
    const size_t columns = casts_.size();
    for (size_t p = 0; p < params_.size(); ++p) {
      const size_t column = p % columns;
      out += column == 0 ? (p == 0 ? "(" : "),(") : ",";
      absl::StrAppend(&out, "$", p + 1);
      out.append(casts_[column]);
    }
    return out + ")";
  }
  const std::vector<const char*>& params() const { return params_; }

 private:
  const std::vector<std::string_view>& casts_;
  std::vector<const char*> params_;
  std::deque<std::string> numbers_;  // stable addresses
};

const std::vector<std::string_view> kResourceInsertCasts = {
    "::uuid", "", "", "", "", "", "", "", "::integer", "", "", "", "::smallint", "::smallint"};
constexpr char kResourceInsert[] =
    "INSERT INTO dispatched_resources (resource_id, cluster, hub_namespace, hub_name, hub_uid, "
    "work_name, appset_namespace, appset_name, version, payload_hash, payload, metadata, "
    "deletion_state, delivery) VALUES ";
constexpr char kResourceUpsert[] =
    " ON CONFLICT (resource_id) DO UPDATE SET cluster = EXCLUDED.cluster, "
    "hub_namespace = EXCLUDED.hub_namespace, hub_name = EXCLUDED.hub_name, "
    "hub_uid = EXCLUDED.hub_uid, work_name = EXCLUDED.work_name, "
    "appset_namespace = EXCLUDED.appset_namespace, appset_name = EXCLUDED.appset_name, "
    "version = EXCLUDED.version, payload_hash = EXCLUDED.payload_hash, "
    "payload = EXCLUDED.payload, metadata = EXCLUDED.metadata, delivery = EXCLUDED.delivery, "
    // A delete request recorded again after the agent's confirmation (a resend whose record
    // raced the Deleted status) keeps the row confirmed: 2 never goes back to 1.
    "deletion_state = CASE WHEN EXCLUDED.deletion_state = 1 AND "
    "dispatched_resources.deletion_state = 2 THEN 2 ELSE EXCLUDED.deletion_state END, "
    "updated_at = now(), "
    "deletion_requested_at = CASE WHEN EXCLUDED.deletion_state = 1 AND "
    "dispatched_resources.deletion_state = 0 THEN now() ELSE "
    "dispatched_resources.deletion_requested_at END";

void AddResourceRow(const DispatchedResource& r, BoundRows& bound) {
  bound.Add(r.resource_id);
  bound.Add(r.cluster);
  bound.Add(r.hub_namespace);
  bound.Add(r.hub_name);
  bound.Add(r.hub_uid);
  bound.Add(r.work_name);
  bound.Add(r.appset_namespace);
  bound.Add(r.appset_name);
  bound.AddNumber(r.version);
  bound.Add(r.payload_hash);
  bound.Add(r.payload);
  r.metadata.empty() ? bound.AddNull() : bound.Add(r.metadata);
  bound.AddNumber(static_cast<int>(r.deletion_state));
  bound.AddNumber(static_cast<int>(r.delivery));
}

const std::vector<std::string_view> kOutboxInsertCasts = {"::uuid", "", "", "::integer", "", ""};
constexpr char kOutboxInsert[] =
    "INSERT INTO outbox (resource_id, cluster, action, version, payload_hash, event) VALUES ";

void AddOutboxRow(const OutboxEntry& e, BoundRows& bound) {
  // Indexed by OutboxAction.
  static const std::string kActions[] = {std::string(OutboxActionName(OutboxAction::kCreate)),
                                         std::string(OutboxActionName(OutboxAction::kUpdate)),
                                         std::string(OutboxActionName(OutboxAction::kDelete))};
  bound.Add(e.resource_id);
  bound.Add(e.cluster);
  bound.Add(kActions[static_cast<int>(e.action)]);
  bound.AddNumber(e.version);
  bound.Add(e.payload_hash);
  bound.Add(e.event);
}

// Upserts one `manifest_renders` row and notifies kManifestRenderChannel, both delivered only
// when `tx` commits.
void UpsertManifestRender(pqxx::transaction_base& tx, const ManifestRender& render) {
  tx.exec_params0(
      "INSERT INTO manifest_renders (resource_id, revision, source_type, render_error, "
      "updated_at) VALUES ($1, $2, $3, $4, now()) ON CONFLICT (resource_id) DO UPDATE SET "
      "revision = EXCLUDED.revision, source_type = EXCLUDED.source_type, "
      "render_error = EXCLUDED.render_error, updated_at = now()",
      render.resource_id, render.revision, render.source_type, render.render_error);
  tx.exec_params("SELECT pg_notify($1, $2)", std::string(kManifestRenderChannel),
                 render.resource_id);
}

}  // namespace

absl::Status PostgresDispatchStore::Run(std::string_view operation, const std::string& what,
                                        const std::function<void(pqxx::connection&)>& fn) {
  if (!observer_) {
    return pool_.Run(what, fn);
  }
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = pool_.Run(what, fn);
  observer_(operation, std::chrono::steady_clock::now() - start, status.ok());
  return status;
}

absl::Status PostgresDispatchStore::ForEachResource(
    const std::function<void(const DispatchedResource&)>& fn) {
  return Run("for_each_resource", "load dispatched resources", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    internal::ForEachByResourceId(
        tx,
        absl::StrCat("SELECT ", kStateColumns,
                     " FROM dispatched_resources WHERE resource_id > $1::uuid"
                     " ORDER BY resource_id LIMIT ",
                     internal::kResourcePageSize),
        [&](const pqxx::row& r) { fn(ResourceFromRow(r)); });
    tx.commit();
  });
}

absl::StatusOr<bool> PostgresDispatchStore::HasResources() {
  bool any = false;
  absl::Status status =
      Run("has_resources", "check for dispatched resources", [&](pqxx::connection& conn) {
        pqxx::nontransaction tx(conn);
        any = tx.exec1("SELECT EXISTS (SELECT 1 FROM dispatched_resources)")[0].as<bool>();
      });
  if (!status.ok()) {
    return status;
  }
  return any;
}

absl::StatusOr<std::optional<DispatchedResource>> PostgresDispatchStore::GetResource(
    const std::string& resource_id) {
  std::optional<DispatchedResource> out;
  absl::Status status = Run("get_resource", "get dispatched resource", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    const auto rows =
        tx.exec_params(absl::StrCat("SELECT ", kResourceColumns,
                                    " FROM dispatched_resources WHERE resource_id = $1::uuid"),
                       resource_id);
    if (!rows.empty()) {
      out = ResourceFromRow(rows[0]);
    }
  });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::StatusOr<ApplicationRows> PostgresDispatchStore::LoadApplications(
    const std::vector<HubKey>& keys, const std::vector<std::string>& resource_ids) {
  ApplicationRows out;
  if (keys.empty() && resource_ids.empty()) {
    return out;
  }
  std::vector<std::string> namespaces;
  std::vector<std::string> names;
  for (const auto& k : keys) {
    namespaces.push_back(k.hub_namespace);
    names.push_back(k.hub_name);
  }
  const std::string ns_array = ArrayLiteral(namespaces);
  const std::string name_array = ArrayLiteral(names);
  const std::string id_array = ArrayLiteral(resource_ids);
  absl::Status status =
      Run("load_applications", "load the rows of Applications", [&](pqxx::connection& conn) {
        out = ApplicationRows();
        // One snapshot: an outbox event and its row are recorded in one transaction.
        pqxx::work tx(conn);
        tx.exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
        // By key through the unique (hub_namespace, hub_name, cluster) index; by id through the
        // primary key. One fixed statement whatever the counts.
        for (const auto& r :
             tx.exec_params(absl::StrCat("SELECT ", kStateColumns,
                                         " FROM dispatched_resources "
                                         "JOIN unnest($1::text[], $2::text[]) AS k(ns, name) "
                                         "ON hub_namespace = k.ns AND hub_name = k.name "
                                         "UNION SELECT ",
                                         kStateColumns,
                                         " FROM dispatched_resources "
                                         "WHERE resource_id = ANY($3::uuid[]) ORDER BY 1"),
                            ns_array, name_array, id_array)) {
          out.resources.push_back(ResourceFromRow(r));
        }
        if (out.resources.empty()) {
          return;
        }
        std::vector<std::string> found;
        found.reserve(out.resources.size());
        for (const auto& r : out.resources) {
          found.push_back(r.resource_id);
        }
        for (const auto& r : tx.exec_params(
                 absl::StrCat("SELECT ", kOutboxColumns,
                              " FROM outbox WHERE resource_id = ANY($1::uuid[]) ORDER BY seq"),
                 ArrayLiteral(found))) {
          out.outbox.push_back(OutboxFromRow(r));
        }
        tx.commit();
      });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::StatusOr<std::vector<DispatchedResource>> PostgresDispatchStore::ResourcesOfCluster(
    const std::string& cluster) {
  std::vector<DispatchedResource> out;
  absl::Status status =
      Run("resources_of_cluster", "list resources of a cluster", [&](pqxx::connection& conn) {
        pqxx::nontransaction tx(conn);
        for (const auto& r : tx.exec_params(
                 absl::StrCat("SELECT ", kResourceColumns,
                              " FROM dispatched_resources WHERE cluster = $1 ORDER BY resource_id"),
                 cluster)) {
          out.push_back(ResourceFromRow(r));
        }
      });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> PostgresDispatchStore::Record(
    const std::vector<DispatchChange>& changes) {
  std::vector<int64_t> seqs;
  if (changes.empty()) {
    return seqs;
  }
  // ON CONFLICT cannot touch a row twice in one statement: the last change of a resource wins.
  std::map<std::string, const DispatchedResource*> latest;
  for (const auto& c : changes) {
    latest[c.resource.resource_id] = &c.resource;
  }
  std::vector<const DispatchedResource*> rows;
  rows.reserve(latest.size());
  for (const auto& [id, r] : latest) {
    rows.push_back(r);
  }
  std::map<std::string, const ManifestRender*> renders;  // the last of each resource, too
  // Resources whose last change here sends an Application (a create or update without a render):
  // a `manifest_renders` row they had from manifest delivery goes.
  std::map<std::string, bool> as_application;
  for (const auto& c : changes) {
    if (c.manifest_render) {
      renders[c.manifest_render->resource_id] = &*c.manifest_render;
    }
    if (c.event.action != OutboxAction::kDelete) {
      as_application[c.resource.resource_id] = !c.manifest_render.has_value();
    }
  }
  std::vector<std::string> application_ids;
  for (const auto& [id, application] : as_application) {
    if (application) {
      renders.erase(id);  // an earlier change in this batch rendered it: the last one wins
      application_ids.push_back(id);
    }
  }

  absl::Status status = Run("record", "record dispatch changes", [&](pqxx::connection& conn) {
    seqs.clear();
    pqxx::work tx(conn);
    for (size_t start = 0; start < rows.size(); start += kRowsPerStatement) {
      const size_t end = std::min(rows.size(), start + kRowsPerStatement);
      BoundRows bound(kResourceInsertCasts);
      for (size_t i = start; i < end; ++i) {
        AddResourceRow(*rows[i], bound);
      }
      tx.exec_params0(absl::StrCat(kResourceInsert, bound.Values(), kResourceUpsert),
                      pqxx::prepare::make_dynamic_params(bound.params()));
    }
    for (size_t start = 0; start < changes.size(); start += kRowsPerStatement) {
      const size_t end = std::min(changes.size(), start + kRowsPerStatement);
      BoundRows bound(kOutboxInsertCasts);
      for (size_t i = start; i < end; ++i) {
        AddOutboxRow(changes[i].event, bound);
      }
      std::vector<int64_t> chunk;
      for (const auto& r :
           tx.exec_params(absl::StrCat(kOutboxInsert, bound.Values(), " RETURNING seq"),
                          pqxx::prepare::make_dynamic_params(bound.params()))) {
        chunk.push_back(r[0].as<int64_t>());
      }
      // Serial values are drawn in VALUES order, so ascending seqs follow the input order.
      std::sort(chunk.begin(), chunk.end());
      seqs.insert(seqs.end(), chunk.begin(), chunk.end());
    }
    // Few per batch (manifest delivery only): one statement each keeps the SQL plain.
    for (const auto& [id, render] : renders) {
      UpsertManifestRender(tx, *render);
    }
    if (!application_ids.empty()) {
      // One statement per batch; it finds a row only for a switch out of manifest delivery.
      tx.exec_params(
          "WITH gone AS (DELETE FROM manifest_renders WHERE resource_id = ANY($1::text[]) "
          "RETURNING resource_id) SELECT pg_notify($2, resource_id) FROM gone",
          ArrayLiteral(application_ids), std::string(kManifestRenderChannel));
    }
    tx.commit();
  });
  if (!status.ok()) {
    return status;
  }
  return seqs;
}

absl::StatusOr<std::vector<OutboxEntry>> PostgresDispatchStore::PendingOutbox(int64_t after_seq,
                                                                              int limit) {
  std::vector<OutboxEntry> out;
  absl::Status status = Run("pending_outbox", "read the outbox", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    for (const auto& r : tx.exec_params(absl::StrCat("SELECT ", kOutboxColumns,
                                                     " FROM outbox WHERE seq > $1 ORDER BY seq "
                                                     "LIMIT $2"),
                                        after_seq, limit)) {
      out.push_back(OutboxFromRow(r));
    }
  });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::Status PostgresDispatchStore::MarkPublished(const std::vector<int64_t>& seqs,
                                                  std::chrono::system_clock::time_point at) {
  if (seqs.empty()) {
    return absl::OkStatus();
  }
  return Run("mark_published", "mark outbox entries published", [&](pqxx::connection& conn) {
    // One statement (its own transaction): the rows leave the outbox and their resources are
    // stamped together, in one round trip.
    pqxx::nontransaction tx(conn);
    tx.exec0(absl::StrCat("WITH done AS (DELETE FROM outbox WHERE seq = ANY(", SeqArray(seqs),
                          ") RETURNING resource_id) UPDATE dispatched_resources SET "
                          "last_published_at = ",
                          EpochSeconds(at),
                          " WHERE resource_id IN (SELECT resource_id FROM done)"));
  });
}

absl::Status PostgresDispatchStore::RecordPublishFailure(int64_t seq, const std::string& error) {
  return Run("record_publish_failure", "record a publish failure", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    tx.exec_params0(
        "UPDATE outbox SET attempts = attempts + 1, last_error = left($2, 2000) WHERE seq = $1",
        seq, error);
  });
}

absl::StatusOr<bool> PostgresDispatchStore::MarkDeletionConfirmed(const std::string& resource_id) {
  bool confirmed = false;
  absl::Status status =
      Run("mark_deletion_confirmed", "confirm a deletion", [&](pqxx::connection& conn) {
        pqxx::work tx(conn);
        const bool deleting = internal::ConfirmDeletionOfDeleting(tx, resource_id);
        if (deleting) {
          // Delivered to listeners only when the transaction commits (same as the StatusStore's).
          internal::NotifyDeletionConfirmed(tx, resource_id);
        }
        tx.commit();
        confirmed = deleting;
      });
  if (!status.ok()) {
    return status;
  }
  return confirmed;
}

absl::StatusOr<std::vector<std::string>> PostgresDispatchStore::ConfirmedDeletions() {
  std::vector<std::string> out;
  absl::Status status =
      Run("confirmed_deletions", "list confirmed deletions", [&](pqxx::connection& conn) {
        out.clear();
        pqxx::nontransaction tx(conn);
        for (const auto& r : tx.exec("SELECT resource_id::text FROM dispatched_resources "
                                     "WHERE deletion_state = 2 ORDER BY resource_id")) {
          out.push_back(r[0].as<std::string>());
        }
      });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::Status PostgresDispatchStore::Forget(const std::string& resource_id) {
  return Run("forget", "forget a resource", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    tx.exec_params0("DELETE FROM outbox WHERE resource_id = $1::uuid", resource_id);
    tx.exec_params0("DELETE FROM dispatched_resources WHERE resource_id = $1::uuid", resource_id);
    tx.exec_params0("DELETE FROM manifest_renders WHERE resource_id = $1", resource_id);
    // The id comes back if the Application is created again (UUIDv5 of its names); its versions
    // start again at 1, so an old acknowledgement must not count for them.
    tx.exec_params0("UPDATE resource_status SET acked_version = NULL WHERE resource_id = $1::uuid",
                    resource_id);
    tx.commit();
  });
}

absl::Status PostgresDispatchStore::PutManifestRender(const ManifestRender& render) {
  if (render.resource_id.empty()) {
    return absl::InvalidArgumentError("manifest render: resource_id is empty");
  }
  return Run("put_manifest_render", "write a manifest render", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    UpsertManifestRender(tx, render);
    tx.commit();
  });
}

absl::StatusOr<std::optional<ManifestRender>> PostgresDispatchStore::GetManifestRender(
    const std::string& resource_id) {
  std::optional<ManifestRender> out;
  absl::Status status =
      Run("get_manifest_render", "read a manifest render", [&](pqxx::connection& conn) {
        out.reset();
        pqxx::nontransaction tx(conn);
        for (const auto& r :
             tx.exec_params("SELECT revision, source_type, render_error FROM manifest_renders "
                            "WHERE resource_id = $1",
                            resource_id)) {
          out = ManifestRender{.resource_id = resource_id,
                               .revision = r[0].as<std::string>(),
                               .source_type = r[1].as<std::string>(),
                               .render_error = r[2].is_null()
                                                   ? std::nullopt
                                                   : std::optional(r[2].as<std::string>())};
        }
      });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::StatusOr<AckSnapshot> PostgresDispatchStore::UnacknowledgedResources(
    const AckWindow& window) {
  // Per cluster: the latest publish its agent acknowledged, how many it acknowledged and its
  // latest report (live rows only); over all clusters the same as the progress; then the rows of
  // a cluster published `grace` before the one or `timeout` before the other and not
  // acknowledged. A scan of both tables (~0.3 s at 300,000 rows), run once per check interval.
  // The progress is one row, joined to the (maybe no) rows found.
  static constexpr char kSql[] =
      "WITH clusters AS ("
      " SELECT d.cluster,"
      "  max(d.last_published_at) FILTER (WHERE s.acked_version >= d.version) AS acked_publish,"
      "  count(*) FILTER (WHERE s.acked_version >= d.version) AS acked,"
      "  max(s.applied_at) AS reported"
      " FROM dispatched_resources d JOIN resource_status s ON s.resource_id = d.resource_id"
      " WHERE d.deletion_state = 0 GROUP BY d.cluster), "
      "progress AS (SELECT max(acked_publish) AS frontier, coalesce(sum(acked), 0)::bigint AS acked"
      " FROM clusters), "
      "found AS ("
      " SELECT d.resource_id::text AS id, d.version, s.acked_version,"
      "  d.last_published_at AS published,"
      "  coalesce(c.acked_publish >= d.last_published_at + make_interval(secs => $1), false)"
      "   AS overtaken"
      " FROM dispatched_resources d JOIN clusters c ON c.cluster = d.cluster"
      " LEFT JOIN resource_status s ON s.resource_id = d.resource_id"
      " WHERE d.deletion_state = 0 AND d.last_published_at IS NOT NULL"
      "  AND (s.acked_version IS NULL OR s.acked_version < d.version)"
      "  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.resource_id = d.resource_id)"
      // Manifest delivery has no Application to carry the stamp (yet).
      "  AND NOT EXISTS (SELECT 1 FROM manifest_renders m"
      "   WHERE m.resource_id = d.resource_id::text)"
      "  AND (c.acked_publish >= d.last_published_at + make_interval(secs => $1)"
      "   OR c.reported >= d.last_published_at + make_interval(secs => $2))"
      " ORDER BY overtaken DESC, d.last_published_at, d.resource_id LIMIT $3) "
      "SELECT (extract(epoch from p.frontier) * 1000000)::bigint, p.acked, f.id, f.version,"
      " f.acked_version, (extract(epoch from f.published) * 1000000)::bigint, f.overtaken "
      "FROM progress p LEFT JOIN found f ON true "
      "ORDER BY f.overtaken DESC, f.published, f.id";
  AckSnapshot out;
  absl::Status status =
      Run("unacknowledged_resources", "list unacknowledged resources", [&](pqxx::connection& conn) {
        out = AckSnapshot{};
        pqxx::nontransaction tx(conn);
        for (const auto& r :
             tx.exec_params(kSql, static_cast<double>(window.grace.count()),
                            static_cast<double>(window.timeout.count()), window.limit)) {
          if (!r[0].is_null()) {
            out.acked_frontier = FromEpochMicros(r[0].as<int64_t>());
          }
          out.acknowledged = r[1].as<int64_t>();
          if (r[2].is_null()) {
            continue;  // the progress alone: nothing found
          }
          UnacknowledgedResource u;
          u.resource_id = r[2].as<std::string>();
          u.version = r[3].as<int32_t>();
          if (!r[4].is_null()) {
            u.acked_version = r[4].as<int32_t>();
          }
          u.published_at = FromEpochMicros(r[5].as<int64_t>());
          u.overtaken = r[6].as<bool>();
          out.resources.push_back(std::move(u));
        }
      });
  if (!status.ok()) {
    return status;
  }
  return out;
}

absl::StatusOr<std::vector<AcknowledgedHandover>> PostgresDispatchStore::AcknowledgedHandovers(
    int limit) {
  // Few rows are ever in a hand-over: the partial index of migration 0005 finds them.
  static constexpr char kSql[] =
      "SELECT d.resource_id::text, d.version, d.delivery FROM dispatched_resources d "
      "JOIN resource_status s ON s.resource_id = d.resource_id "
      "WHERE d.delivery IN (2, 3) AND d.deletion_state = 0 AND s.acked_version >= d.version "
      "ORDER BY d.resource_id LIMIT $1";
  std::vector<AcknowledgedHandover> out;
  RETURN_IF_ERROR(
      Run("acknowledged_handovers", "list acknowledged hand-overs", [&](pqxx::connection& conn) {
        out.clear();
        pqxx::nontransaction tx(conn);
        const pqxx::result rows = tx.exec_params(kSql, limit);
        out.reserve(rows.size());
        for (const auto& r : rows) {
          out.push_back({.resource_id = r[0].as<std::string>(),
                         .version = r[1].as<int32_t>(),
                         .delivery = static_cast<Delivery>(r[2].as<int>())});
        }
      }));
  return out;
}

}  // namespace mmi::store::postgres
