// The SQL files of migrations/, embedded at build time (migrations/CMakeLists.txt).
#pragma once

#include <string_view>
#include <vector>

namespace mmi::migrations {

struct Migration {
  int version;            // the file's number prefix: 1 for 0001_dispatch_state.sql
  std::string_view name;  // the file name
  std::string_view sql;
};

// All migrations, in ascending version order.
const std::vector<Migration>& All();

}  // namespace mmi::migrations
