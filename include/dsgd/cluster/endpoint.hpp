// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The TCP endpoints a task's cluster-spec address names: cluster::endpoint_of (the first),
/// resolve_all (every resolver result, IPv4 and IPv6, with "not resolvable yet" told apart from
/// a bad name, so that a caller can retry a name a pod's DNS does not know yet), and
/// listen_endpoint (where a ps binds: its spec address, any address, or a named interface).
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::cluster {

/// What resolve_all() found.
struct resolution {
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  ///< every result, in the resolver's order
  /// Why there is none: empty when endpoints were found; else the resolver's answer.
  std::string failure;
  /// True when the name may resolve later (no such name yet, or a temporary resolver failure):
  /// a pod's name appears in DNS only once the pod exists, so callers retry until a deadline.
  bool may_resolve_later = false;
};

/// Every endpoint of @p address: an IP literal as it is ("localhost" as 127.0.0.1), a host name
/// through the resolver (all its results, both families). Never throws for a name that does not
/// resolve: resolution::failure says why.
inline resolution resolve_all(const task_address& address) {
  resolution out;
  error_code ec;
  auto ip = boost::asio::ip::make_address(address.host == "localhost" ? "127.0.0.1" : address.host, ec);
  if (!ec) {
    out.endpoints.emplace_back(ip, address.port);
    return out;
  }
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::resolver resolver(ctx);
  auto results = resolver.resolve(address.host, std::to_string(address.port), ec);
  if (!ec)
    for (const auto& r : results) out.endpoints.push_back(r.endpoint());
  if (out.endpoints.empty()) {
    out.failure = ec ? ec.message() : std::string("no addresses");
    out.may_resolve_later = ec == boost::asio::error::host_not_found ||
                            ec == boost::asio::error::host_not_found_try_again || ec == boost::asio::error::no_data ||
                            !ec;
  }
  return out;
}

/// @returns the first TCP endpoint of task @p who at @p address (see resolve_all()).
/// @throws dsgd::error(errc::bad_cluster_spec) naming the task, the address and the resolver's
///         answer when it does not resolve
inline boost::asio::ip::tcp::endpoint endpoint_of(const task_address& address, const std::string& who) {
  auto r = resolve_all(address);
  if (r.endpoints.empty())
    throw error(errc::bad_cluster_spec,
                "cannot resolve the address of " + who + ", " + address.to_string() + ": " + r.failure);
  return r.endpoints.front();
}

/// Where a task listens, given its cluster-spec address and a listen setting:
///  - "" (the default): exactly the spec address (resolved; the first result);
///  - "*": any address on the spec's port, IPv6 and IPv4 both ("::", dual stack), as a pod whose
///    dialled name is a Service's and not one of its own addresses needs;
///  - "0.0.0.0" or "::": any IPv4 / any IPv6 address;
///  - another IP literal: that address;
///  - "if:NAME": the first IPv4 address of network interface NAME (else its first IPv6 one).
/// The port is always the spec's.
/// @throws dsgd::error(errc::bad_cluster_spec) naming the task, the setting and what is wrong (an
///         unknown interface, one without an address, a malformed address)
inline boost::asio::ip::tcp::endpoint listen_endpoint(const task_address& address, std::string_view listen,
                                                      const std::string& who) {
  using boost::asio::ip::tcp;
  if (listen.empty()) return endpoint_of(address, who);
  if (listen == "*") return {boost::asio::ip::address_v6::any(), address.port};
  if (listen.starts_with("if:")) {
    const std::string name(listen.substr(3));
    if (name.empty() || name.size() >= IF_NAMESIZE)
      throw error(errc::bad_cluster_spec, who + ": listen \"" + std::string(listen) + "\": not an interface name");
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0)
      throw error(errc::bad_cluster_spec, who + ": listen \"" + std::string(listen) + "\": getifaddrs failed");
    std::optional<boost::asio::ip::address> v4, v6;
    bool exists = false;
    for (auto* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_name == nullptr || name != a->ifa_name) continue;
      exists = true;
      if (a->ifa_addr == nullptr) continue;
      if (a->ifa_addr->sa_family == AF_INET && !v4) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
        v4 = boost::asio::ip::address_v4(ntohl(in->sin_addr.s_addr));
      } else if (a->ifa_addr->sa_family == AF_INET6 && !v6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
        boost::asio::ip::address_v6::bytes_type bytes;
        std::copy(std::begin(in6->sin6_addr.s6_addr), std::end(in6->sin6_addr.s6_addr), bytes.begin());
        v6 = boost::asio::ip::address_v6(bytes, in6->sin6_scope_id);
      }
    }
    ::freeifaddrs(list);
    if (!exists)
      throw error(errc::bad_cluster_spec, who + ": listen \"" + std::string(listen) + "\": no such interface");
    if (!v4 && !v6)
      throw error(errc::bad_cluster_spec,
                  who + ": listen \"" + std::string(listen) + "\": the interface has no address");
    return {v4 ? *v4 : *v6, address.port};
  }
  error_code ec;
  const auto ip = boost::asio::ip::make_address(std::string(listen), ec);
  if (ec)
    throw error(errc::bad_cluster_spec,
                who + ": listen \"" + std::string(listen) + "\": expected \"\", \"*\", an IP address or \"if:NAME\"");
  return {ip, address.port};
}

}  // namespace dsgd::cluster
