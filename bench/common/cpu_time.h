// CPU time as the benchmarks read it: the calling thread's (CLOCK_THREAD_CPUTIME_ID, so other
// load on the machine does not count), every thread of this process by name (from /proc, to
// split the run by stage: the reconcile loop, the worker pool, the MQTT client's threads), and a
// peer's process tree (PostgreSQL's postmaster and backends, mosquitto).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace mmi::bench {

// Nanoseconds on CPU of the calling thread.
int64_t ThreadCpuNs();

// Nanoseconds on CPU of every live thread of this process but the main one, summed by the
// group `group_of` puts each thread name in.
using ThreadGroups = std::map<std::string, double>;
ThreadGroups ThreadCpuByGroup(std::string (*group_of)(const std::string& thread_name));

// Nanoseconds on CPU of process `pid`, its reaped children and its live children.
double ProcessTreeCpuNs(int pid);

}  // namespace mmi::bench
