// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Type-erased completion handlers, one per queued message: what lets a connection hold the
/// handlers of many sends of different types in one queue. Erasure is per message, never per
/// element.
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <type_traits>
#include <vector>

namespace dsgd::transport::detail {

/// A pending completion with signature void(Args...).
template <class... Args>
class erased_completion {
 public:
  virtual ~erased_completion() = default;
  /// Delivers @p args to the handler on its associated executor. Pass @p continuation = true
  /// only from a completion of the connection's own I/O (then the handler may run inline);
  /// from an initiating function pass false, so the handler never runs before it returns.
  virtual void complete(bool continuation, Args... args) = 0;
};

template <class Handler, class IoExecutor, class... Args>
class completion_for final : public erased_completion<Args...> {
  using handler_executor =
      decltype(boost::asio::get_associated_executor(std::declval<Handler&>(), std::declval<const IoExecutor&>()));
  using tracked_executor = std::decay_t<decltype(boost::asio::prefer(
      std::declval<handler_executor>(), boost::asio::execution::outstanding_work.tracked))>;

 public:
  completion_for(Handler handler, const IoExecutor& io)
      : handler_(std::move(handler)),
        // Holding tracked work keeps the handler's execution context running until we deliver.
        work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_, io),
                                  boost::asio::execution::outstanding_work.tracked)) {}

  void complete(bool continuation, Args... args) override {
    tracked_executor ex = std::move(work_);
    auto call = [h = std::move(handler_), ... a = std::move(args)]() mutable { std::move(h)(std::move(a)...); };
    if (continuation) boost::asio::dispatch(ex, std::move(call));
    else boost::asio::post(ex, std::move(call));
  }

 private:
  Handler handler_;
  tracked_executor work_;
};

/// Wraps @p handler (an Asio completion handler or any callable) for later delivery.
template <class... Args, class Handler, class IoExecutor>
std::unique_ptr<erased_completion<Args...>> make_completion(Handler&& handler, const IoExecutor& io) {
  return std::make_unique<completion_for<std::decay_t<Handler>, IoExecutor, Args...>>(std::forward<Handler>(handler),
                                                                                      io);
}

/// The body of every connection's async_send: copies @p payload's buffer descriptors (never its
/// bytes) into a vector and initiates the operation, which calls @p start(buffers, completion)
/// with the handler wrapped for delivery on @p io. A connection passes what queues the message.
template <class Token, class IoExecutor, class ConstBufferSequence, class Start>
auto initiate_send(const IoExecutor& io, const ConstBufferSequence& payload, Token&& token, Start start) {
  std::vector<boost::asio::const_buffer> buffers(boost::asio::buffer_sequence_begin(payload),
                                                 boost::asio::buffer_sequence_end(payload));
  return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
      [io, start = std::move(start)](auto handler, std::vector<boost::asio::const_buffer> bufs) mutable {
        start(std::move(bufs), make_completion<boost::system::error_code>(std::move(handler), io));
      },
      token, std::move(buffers));
}

}  // namespace dsgd::transport::detail
