// Private to comet_lifecycle: what create.cpp shares with run.cpp and
// egress_events.cpp.
#pragma once

#include <map>
#include <string>

#include "comet/base/result.hpp"
#include "comet/egress/egress.hpp"

namespace comet::runtime {

// realpath(P), which must be a directory; errors name WHAT and P.
Result<std::string> resolve_dir(const std::string& p, const std::string& what);

// The resolver's DNS and egress violations (docs/events.md): the callbacks
// of `er` that report them to the state dir's events, for the container
// CID (of pack annotations) whose init is INIT_PID.
void report_egress_violations(egress::SetupRequest& er, const std::string& state_dir,
                              const std::map<std::string, std::string>& annotations,
                              const std::string& cid, int init_pid);

}  // namespace comet::runtime
