// Private to comet_lifecycle: what create.cpp shares with run.cpp, exec.cpp
// and egress_events.cpp.
#pragma once

#include <map>
#include <string>

#include "comet/base/result.hpp"
#include "comet/capability/policy.hpp"
#include "comet/egress/egress.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/reporting/reporter.hpp"

namespace comet::runtime {

// realpath(P), which must be a directory; errors name WHAT and P.
Result<std::string> resolve_dir(const std::string& p, const std::string& what);

// The resolver's DNS and egress violations (docs/events.md): the callbacks
// of `er` that report them to the state dir's events, for the container
// CID (of pack annotations) whose init is INIT_PID.
void report_egress_violations(egress::SetupRequest& er, const std::string& state_dir,
                              const std::map<std::string, std::string>& annotations,
                              const std::string& cid, int init_pid);

// The violation reporter's request for the lock-down of container ID
// (reporter.hpp), as create and exec both fill it: the pack, the state dir,
// the rules it judges by and the trampoline (TRAMPOLINE_FD) it lets run.
// The caller sets where events are delivered and, for create, fs events.
ReporterRequest lockdown_reporter_request(const std::string& id,
                                          const std::map<std::string, std::string>& annotations,
                                          const std::string& state_dir, const capability::Policy& p,
                                          const ChildContext& ctx, int trampoline_fd);

}  // namespace comet::runtime
