// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: a cluster spec whose tasks listen on free ports of 127.0.0.1, for clusters run
// as threads of one test process.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dsgd::test {

// A port that was free a moment ago (the kernel picks it; another process could take it
// before the test binds it, which loopback tests accept).
inline std::uint16_t free_port() {
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor a(ctx, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// @p ps ps tasks and @p workers worker tasks on 127.0.0.1, on distinct ports: every port stays
// bound until all are chosen, so the kernel cannot hand out one twice.
inline cluster::cluster_spec loopback_cluster(std::size_t ps, std::size_t workers) {
  boost::asio::io_context ctx;
  std::vector<boost::asio::ip::tcp::acceptor> held;
  auto next = [&] {
    held.emplace_back(ctx, boost::asio::ip::tcp::endpoint{boost::asio::ip::make_address("127.0.0.1"), 0});
    return "127.0.0.1:" + std::to_string(held.back().local_endpoint().port());
  };
  std::map<std::string, std::vector<std::string>> jobs;
  for (std::size_t i = 0; i < ps; ++i) jobs["ps"].push_back(next());
  for (std::size_t i = 0; i < workers; ++i) jobs["worker"].push_back(next());
  return cluster::cluster_spec(jobs);
}

}  // namespace dsgd::test
