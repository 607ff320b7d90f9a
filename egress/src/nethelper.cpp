#include "comet/egress/nethelper.hpp"

#include <cstdlib>
#include <cstring>

#include "comet/egress/pasta.hpp"
#include "comet/egress/slirp.hpp"

namespace comet::egress {

const char* net_helper_name(NetHelperKind kind) {
  return kind == NetHelperKind::pasta ? "pasta" : "slirp4netns";
}

Result<NetHelperKind> choose_net_helper() {
  const char* want = std::getenv("COMET_NET_HELPER");
  const char* pasta = std::getenv("COMET_PASTA");
  if (want && *want) {
    if (std::strcmp(want, "pasta") == 0) return NetHelperKind::pasta;
    if (std::strcmp(want, "slirp4netns") == 0) return NetHelperKind::slirp4netns;
    return Error::msg(std::string("COMET_NET_HELPER: \"") + want +
                      "\" is neither slirp4netns nor pasta");
  }
  return pasta && *pasta ? NetHelperKind::pasta : NetHelperKind::slirp4netns;
}

Result<Helper> start_net_helper(int netns_fd, const std::string& state_dir) {
  TRY(NetHelperKind kind, choose_net_helper());
  std::string base = state_dir + "/" + net_helper_name(kind);
  if (kind == NetHelperKind::pasta) return start_pasta(netns_fd, base + ".pid", base + ".log");
  return start_slirp(netns_fd, base + ".log");
}

}  // namespace comet::egress
