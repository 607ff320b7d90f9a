#include "comet/base/fault.hpp"
#include "comet/runtime/fault.hpp"

#include <signal.h>

#include <cstdlib>
#include <cstring>

namespace comet::runtime {

// Points (fault.hpp lists them): create-after-record, create-after-clone,
// create-after-mounts, create-after-nft (egress: ruleset, network helper, resolver
// set up and recorded), create-before-ready, start-waiting-fifo.
void fault_point(const char* name) noexcept {
  if (fault_is(name)) ::raise(SIGKILL);
}

}  // namespace comet::runtime
