#include "libs/store/postgres/errors.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"

namespace mmi::store::postgres {

absl::Status StatusFromCurrentException(const std::string& what) {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(absl::StrCat(what, ": connection to PostgreSQL lost: ", e.what(),
                                               " (check the DSN and that the server is up)"));
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    const std::string msg = absl::StrCat(what, ": ", e.what(), " (SQLSTATE ", state, ")");
    if (state == "40001" || state == "40P01") {
      return absl::AbortedError(msg);
    }
    if (state == "23505") {
      return absl::AlreadyExistsError(msg);
    }
    if (state.rfind("23", 0) == 0) {
      return absl::FailedPreconditionError(msg);
    }
    if (state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03" ||
        state == "53300") {
      return absl::UnavailableError(msg);
    }
    if (state.rfind("42", 0) == 0) {
      return absl::InternalError(msg);
    }
    return absl::UnknownError(msg);
  } catch (const pqxx::in_doubt_error& e) {
    return absl::UnavailableError(absl::StrCat(what, ": commit outcome unknown: ", e.what()));
  } catch (const std::exception& e) {
    return absl::UnknownError(absl::StrCat(what, ": ", e.what()));
  } catch (...) {
    return absl::UnknownError(absl::StrCat(what, ": unknown exception"));
  }
}

}  // namespace mmi::store::postgres
