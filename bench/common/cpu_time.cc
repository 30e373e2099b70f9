#include "bench/common/cpu_time.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace mmi::bench {
namespace {

// utime + stime (+ cutime + cstime when `with_children`) of /proc/<pid>/stat, in nanoseconds.
double StatCpuNs(int pid, bool with_children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                             std::istream_iterator<std::string>());
  // Fields from the state (3rd of stat): utime is the 14th of stat, so f[11].
  if (f.size() < 15) {
    return 0;
  }
  double ticks = std::stod(f[11]) + std::stod(f[12]);
  if (with_children) {
    ticks += std::stod(f[13]) + std::stod(f[14]);
  }
  return ticks * 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::vector<int> ChildrenOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<int> out;
  for (int child = 0; in >> child;) {
    out.push_back(child);
  }
  return out;
}

}  // namespace

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

ThreadGroups ThreadCpuByGroup(std::string (*group_of)(const std::string& thread_name)) {
  ThreadGroups out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) {
    return out;
  }
  const std::string main_tid = std::to_string(getpid());
  while (const dirent* entry = readdir(dir)) {
    const std::string tid = entry->d_name;
    if (tid == "." || tid == ".." || tid == main_tid) {
      continue;  // the main thread only waits
    }
    const std::string base = "/proc/self/task/" + tid;
    std::string name;
    double ns = 0;
    std::ifstream(base + "/comm") >> name;
    std::ifstream(base + "/schedstat") >> ns;
    out[group_of(name)] += ns;
  }
  closedir(dir);
  return out;
}

double ProcessTreeCpuNs(int pid) {
  double ns = StatCpuNs(pid, true);
  for (int child : ChildrenOf(pid)) {
    ns += StatCpuNs(child, false);
  }
  return ns;
}

}  // namespace mmi::bench
