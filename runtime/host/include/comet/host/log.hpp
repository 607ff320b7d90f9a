// Logging as runc does it: --log FILE (default stderr), --log-format
// text|json. JSON lines are {"level","msg","time"}; containerd and podman
// read the msg of the last "error" line as the failure reason.
#pragma once

#include <string>

namespace comet::runtime::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// Returns false (and leaves logging on stderr) when the file cannot be opened.
bool init(const std::string& path, bool json, bool debug);
void write(Level lvl, const std::string& msg);
inline void debug(const std::string& m) {
  write(Level::kDebug, m);
}
inline void info(const std::string& m) {
  write(Level::kInfo, m);
}
inline void warn(const std::string& m) {
  write(Level::kWarn, m);
}
// An error: to the log, and also as a plain line on stderr when the log is a
// file (runc does the same, and people read stderr).
void error(const std::string& m);
bool debug_enabled();
// Sends the log lines to FD from now on (the caller keeps it open;
// STDERR_FILENO puts them back). IS_STDERR: FD is this process's original
// stderr under another number (pack run's output capture), so error() adds
// no plain copy.
void set_fd(int fd, bool is_stderr);

}  // namespace comet::runtime::log
