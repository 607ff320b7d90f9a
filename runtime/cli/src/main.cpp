// comet-runtime: the CLI entry point. Everything lives in runtime/.
#include <malloc.h>

#include <cstring>

#include "comet/cli/cli.hpp"
#include "comet/reporting/fswatch.hpp"

int main(int argc, char** argv) {
  // The fs events detacher (fswatch.hpp), spawned with this argv[0] only.
  if (argc == 1 && std::strcmp(argv[0], "comet-fswatch-linger") == 0)
    return comet::runtime::fswatch_linger_main();
  // Allocations up to 1 MiB from the heap, and the heap kept: libnftables
  // allocates several 128 KiB hash tables per nft context and per table,
  // which glibc would otherwise map fresh (and unmap) each time; on a VM
  // where a first-touch page fault costs ~13 us that was ~1 ms of the egress
  // ruleset load (docs/egress.md, "Ruleset load time"). +0.2 MiB peak RSS.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  return comet::runtime::cli_main(argc, argv);
}
