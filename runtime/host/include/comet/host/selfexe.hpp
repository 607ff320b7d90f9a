// Version text and the CLI entry point.
//
// CVE-2019-5736 (a container process writing the runtime's binary through
// /proc/PID/exe) is closed by two things instead of a full self-copy: every
// process the runtime starts inside a container is non-dumpable until it
// execs (so /proc/PID/exe cannot be opened from the container), and the
// final exec goes through a sealed memfd trampoline (trampoline.hpp), so a
// "#!/proc/self/exe" target resolves to that immutable file, never to the
// binary on the host.
#pragma once

#include <string>

namespace comet::runtime {

std::string version_text();
int cli_main(int argc, char** argv);

}  // namespace comet::runtime
