#include "comet/egress/nethelper.hpp"

#include <cstdlib>
#include <cstring>

#include "comet/base/switches.hpp"
#include "comet/egress/pasta.hpp"
#include "comet/egress/slirp.hpp"

namespace comet::egress {

const char* net_helper_name(NetHelperKind kind) {
  return kind == NetHelperKind::pasta ? "pasta" : "slirp4netns";
}

Result<NetHelperKind> choose_net_helper() {
  const std::string want = switches::net_helper();
  if (!want.empty()) {
    if (want == "pasta") return NetHelperKind::pasta;
    if (want == "slirp4netns") return NetHelperKind::slirp4netns;
    return Error::msg("COMET_NET_HELPER: \"" + want + "\" is neither slirp4netns nor pasta");
  }
  return switches::pasta().empty() ? NetHelperKind::slirp4netns : NetHelperKind::pasta;
}

Result<Helper> start_net_helper(int netns_fd, const std::string& state_dir) {
  TRY(NetHelperKind kind, choose_net_helper());
  std::string base = state_dir + "/" + net_helper_name(kind);
  if (kind == NetHelperKind::pasta) return start_pasta(netns_fd, base + ".pid", base + ".log");
  return start_slirp(netns_fd, base + ".log");
}

}  // namespace comet::egress
