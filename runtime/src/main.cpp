// comet-runtime: the CLI entry point. Everything lives in runtime/.
#include "comet/runtime/cli.hpp"

int main(int argc, char** argv) {
  comet::runtime::ensure_sealed_self(argc, argv);
  return comet::runtime::cli_main(argc, argv);
}
