// tests/peers/bin/start-postgres TLS=1: PostgreSQL with a server certificate for
// 127.0.0.1/localhost from a CA made by the script, TLS only, passwords checked (scram-sha-256).
// The DSN it emits (PG_DSN, sslmode=verify-full + sslrootcert=PG_CA_FILE) is what a secure
// deployment gives the services' store (libpqxx); these tests use libpqxx too.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "tests/support/peer.h"

namespace mmi {
namespace {

// A libpq keyword/value connection string to the peer with `extra` settings.
std::string Conn(const testing::PeerProcess& pg, const std::string& extra) {
  return "host=127.0.0.1 port=" + pg.Get("PG_PORT") + " user=" + pg.Get("PG_USER") +
         " dbname=" + pg.Get("PG_DB") + " " + extra;
}

// The error libpq reports for `conn`, "" when it connects.
std::string ConnectError(const std::string& conn) {
  try {
    pqxx::connection c(conn);
    return "";
  } catch (const pqxx::broken_connection& e) {
    return e.what();
  }
}

TEST(PostgresTlsTest, TheEmittedDsnVerifiesTheServerAndUsesTls) {
  MMI_START_PEER(pg, "postgres", {"TLS=1"});
  EXPECT_EQ(pg->Get("PG_TLS"), "1");
  EXPECT_EQ(pg->Get("PG_SSLMODE"), "verify-full");
  const std::string dsn = pg->Get("PG_DSN");
  EXPECT_NE(dsn.find("sslmode=verify-full"), std::string::npos) << dsn;
  EXPECT_NE(dsn.find("sslrootcert="), std::string::npos) << dsn;
  EXPECT_NE(pg->Get("PG_PASSWORD"), "mmi") << "TLS=1 uses a random password";

  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  const pqxx::row ssl =
      tx.exec1("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  EXPECT_TRUE(ssl[0].as<bool>());
  EXPECT_EQ(ssl[1].as<std::string>(), "TLSv1.3");
  tx.exec0("CREATE TABLE t (id int)");
  tx.commit();
}

TEST(PostgresTlsTest, TheCertificateNamesLocalhostToo) {
  MMI_START_PEER(pg, "postgres", {"TLS=1"});
  const std::string conn = "host=localhost port=" + pg->Get("PG_PORT") + " user=mmi dbname=mmi" +
                           " password=" + pg->Get("PG_PASSWORD") +
                           " sslmode=verify-full sslrootcert=" + pg->Get("PG_CA_FILE");
  EXPECT_EQ(ConnectError(conn), "");
}

TEST(PostgresTlsTest, RefusesPlainConnectionsWrongPasswordsAndOtherCas) {
  MMI_START_PEER(pg, "postgres", {"TLS=1"});
  const std::string password = " password=" + pg->Get("PG_PASSWORD");
  const std::string ca = " sslrootcert=" + pg->Get("PG_CA_FILE");

  EXPECT_NE(ConnectError(Conn(*pg, "sslmode=disable" + password)).find("no encryption"),
            std::string::npos);
  EXPECT_NE(ConnectError(Conn(*pg, "sslmode=verify-full password=wrong" + ca))
                .find("password authentication failed"),
            std::string::npos);
  // Another PostgreSQL's CA (each start makes its own) does not verify this server.
  MMI_START_PEER(other, "postgres", {"TLS=1"});
  EXPECT_NE(ConnectError(Conn(*pg, "sslmode=verify-full" + password +
                                       " sslrootcert=" + other->Get("PG_CA_FILE")))
                .find("certificate verify failed"),
            std::string::npos);
  // The right CA, but a name the certificate does not carry (connecting to 127.0.0.1).
  EXPECT_NE(ConnectError("host=db.example hostaddr=127.0.0.1 port=" + pg->Get("PG_PORT") +
                         " user=mmi dbname=mmi sslmode=verify-full" + password + ca)
                .find("does not match host name"),
            std::string::npos);
}

}  // namespace
}  // namespace mmi
