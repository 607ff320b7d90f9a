// comet-runtime: the CLI entry point. Everything lives in runtime/.
#include "comet/runtime/cli.hpp"

int main(int argc, char** argv) {
  return comet::runtime::cli_main(argc, argv);
}
