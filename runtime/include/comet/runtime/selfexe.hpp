// CVE-2019-5736: a container process must never be able to open the
// runtime's binary for writing through /proc/PID/exe. Commands that put a
// process into a container (create, run, exec) first re-execute themselves
// from a sealed memfd copy, so /proc/self/exe of anything we start is an
// immutable anonymous file, never the binary on the host.
#pragma once

#include <string>

namespace comet::runtime {

// Returns only if already running from a sealed copy, or the command does
// not need one. On failure to seal, exits 1 (fail closed).
void ensure_sealed_self(int argc, char** argv);
bool running_sealed();
std::string version_text();
int cli_main(int argc, char** argv);

}  // namespace comet::runtime
