// linux.netDevices (runtime-spec 1.2): host interfaces moved into the
// container's network namespace at create, and back at delete, as runc 1.2
// does. One rtnetlink RTM_NEWLINK per move (IFLA_NET_NS_FD, and IFLA_IFNAME
// for the name in the target namespace).
#pragma once

#include <map>
#include <string>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// Pure: the names (host and container) are interface names the kernel
// accepts (1 to 15 bytes, no '/', ':' or space, not "." or "..").
Status check_net_device_names(const std::map<std::string, oci::NetDevice>& devs);
// Every host interface exists (if_nametoindex), else a one-line error.
Status check_net_devices_exist(const std::map<std::string, oci::NetDevice>& devs);
// Move the interface NAME of the caller's network namespace into NETNS_FD,
// named NEW_NAME there ("" keeps NAME).
Status move_link(const std::string& name, int netns_fd, const std::string& new_name);
// Delete: move NAME (the container-side name) from the network namespace at
// NETNS_PATH back to the caller's, named HOST_NAME. From a forked child that
// enters the namespace, so the caller's threads stay where they are.
Status move_link_back(const std::string& netns_path, const std::string& name,
                      const std::string& host_name);

}  // namespace comet::runtime
