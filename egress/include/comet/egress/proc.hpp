// Small process helpers for egress/ (which may not use runtime/'s).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::egress {

// The last non-empty line among the first max_bytes of a helper's log that
// is_noise() does not reject, for an error message; "" when there is none.
std::string last_log_line(const std::string& log_file, std::size_t max_bytes,
                          bool (*is_noise)(std::string_view line));

// /proc/PID/stat starttime (field 22), 0 when unreadable.
unsigned long long start_time(int pid);
// SIGKILL `pid` if it is still the process that started at `start` (0:
// do not check), then wait up to timeout_ms for it to be gone. Never
// blocks longer; returns true when it is gone.
bool kill_verified(int pid, unsigned long long start, int timeout_ms = 2000);
// The children of `pid` (/proc/PID/task/PID/children), empty when unreadable.
std::vector<int> children_of(int pid);
// Wait up to timeout_ms for the child `pid` to exit; its status, or an
// error (ETIMEDOUT after killing it).
Result<int> wait_child(pid_t pid, int timeout_ms);
// In a freshly forked child: stdin/stdout to /dev/null, stderr to
// stderr_fd (or /dev/null), the signal mask and dispositions reset.
void child_stdio(int stderr_fd = -1) noexcept;
// Closes every fd above 2 except those in keep (sorted ascending).
void close_fds_except(const int* keep, int n) noexcept;

}  // namespace comet::egress
