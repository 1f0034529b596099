// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Small helpers of the TCP transport's socket I/O: the completion condition of frame reads
/// and writes, and how an endpoint is written in log lines and errors.
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <dsgd/error.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <limits>
#include <string>

namespace dsgd::transport::detail {

// The completion condition of every frame read and write. Asio's transfer_all() moves at most
// 64 KiB per system call, so a 1 MiB chunk took sixteen sends and, on the receiving side,
// sixteen reads with a wait in epoll between them; this asks for all that is left each time,
// and the socket moves as much as its buffers hold (docs/transport.md, "Chunking").
struct transfer_whole {
  std::size_t operator()(const error_code& ec, std::size_t) const noexcept {
    return ec ? 0 : std::numeric_limits<std::size_t>::max();
  }
};

inline std::string to_string(const boost::asio::ip::tcp::endpoint& ep) {
  error_code ec;
  auto address = ep.address().to_string(ec);
  if (ep.address().is_v6()) address = "[" + address + "]";
  return address + ":" + std::to_string(ep.port());
}

}  // namespace dsgd::transport::detail
