// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// transport::inproc: a whole cluster as threads of one process, with no sockets (Gloo's Pair
/// idea). An inproc_hub, made by the test or example and handed to every task's transport, maps
/// task addresses to listeners; connections then move frames between the tasks' own
/// executors. Semantics follow tcp_connection where the roles rely on them: frames in order,
/// chunking by chunk_bytes, caps checked before the sink, payloads copied once from the
/// sender's buffers into the receiver's, token and accept_peer checks, bounded send queues.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/detail/completion.hpp>
#include <dsgd/transport/detail/inproc_link.hpp>
#include <dsgd/transport/handshake.hpp>
#include <dsgd/transport/tcp_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::transport {

class inproc_listener;

/// The registry of in-process listeners by address ("host:port"): one per simulated cluster,
/// shared by every task's transport::inproc value. Thread-safe.
class inproc_hub {
 public:
  /// @returns a new, empty hub.
  static std::shared_ptr<inproc_hub> create() { return std::make_shared<inproc_hub>(); }

  /// @returns how many listeners are bound now.
  std::size_t listeners() const {
    std::lock_guard lock(mutex_);
    return listeners_.size();
  }

 private:
  friend class inproc_listener;

  // Binds @p at (port 0: the first free port from 49152) to @p l; @returns the bound address.
  cluster::task_address bind(cluster::task_address at, const std::shared_ptr<inproc_listener>& l) {
    std::lock_guard lock(mutex_);
    if (at.port == 0) {
      for (at.port = 49152; listeners_.contains(at.to_string()); ++at.port)
        if (at.port == 65535) throw error(boost::asio::error::address_in_use, "inproc: no free port on " + at.host);
    } else if (listeners_.contains(at.to_string())) {
      throw error(boost::asio::error::address_in_use,
                  "inproc_listener: cannot bind " + at.to_string() + ": another listener is bound there");
    }
    listeners_.emplace(at.to_string(), l);
    return at;
  }

  void unbind(const std::string& key) {
    std::lock_guard lock(mutex_);
    listeners_.erase(key);
  }

  std::shared_ptr<inproc_listener> find(const cluster::task_address& at) const {
    std::lock_guard lock(mutex_);
    auto it = listeners_.find(at.to_string());
    return it == listeners_.end() ? nullptr : it->second.lock();
  }

  mutable std::mutex mutex_;
  std::map<std::string, std::weak_ptr<inproc_listener>> listeners_;
};

/// One end of an in-process connection. Create it with inproc::listen or inproc::async_connect;
/// shared-owned because its pending operations keep it alive. Like tcp_connection, use it from
/// its executor; the two ends may run on different threads. Destroying (or closing) an end
/// closes the connection, and it must not outlive its executor's context.
class inproc_connection : public std::enable_shared_from_this<inproc_connection> {
  struct private_tag {};

 public:
  using executor_type = boost::asio::any_io_executor;  ///< completions of this end run there

  /// Use inproc::async_connect or inproc_listener; public only for std::make_shared.
  inproc_connection(private_tag, std::shared_ptr<detail::inproc_link> link, int side)
      : link_(std::move(link)), side_(side) {}
  ~inproc_connection() { link_->close(side_, boost::asio::error::operation_aborted, "connection destroyed", false); }
  inproc_connection(const inproc_connection&) = delete;
  inproc_connection& operator=(const inproc_connection&) = delete;

  /// @returns the executor this end's completions run on.
  executor_type get_executor() const noexcept { return link_->side(side_).executor; }
  /// @returns the identity the peer presented (its options.identity).
  const std::string& peer_identity() const noexcept { return link_->side(side_).peer_identity; }
  /// @returns true until either end closed the connection or an error closed it.
  bool is_open() const { return link_->is_open(side_); }
  /// @returns why the connection was closed (empty while open).
  std::string close_reason() const { return link_->close_reason(side_); }
  /// @returns messages sent by this end that the peer has not received whole.
  std::size_t queued_sends() const { return link_->queued_sends(side_); }
  /// @returns the options this end was made with.
  const tcp_options& options() const noexcept { return link_->side(side_).options; }
  /// Queues one message, as tcp_connection::async_send does: version, payload_length,
  /// chunk_offset and total_length are filled here, a payload larger than options().chunk_bytes
  /// goes as several frames (never a control message), no payload byte is copied until the peer
  /// receives it. @p payload must stay valid until completion.
  /// Completion signature: void(error_code); boost::asio::error::no_buffer_space when the
  /// send queue is full (nothing was queued).
  template <class ConstBufferSequence, boost::asio::completion_token_for<void(error_code)> Token>
  requires boost::asio::is_const_buffer_sequence<ConstBufferSequence>::value auto async_send(
      const frame_header& header, const ConstBufferSequence& payload, Token&& token) {
    return detail::initiate_send(get_executor(), payload, std::forward<Token>(token),
                                 [self = shared_from_this(), header](auto bufs, auto done) {
                                   self->link_->send(self->side_, header, std::move(bufs), std::move(done), self);
                                 });
  }

  /// Receives the next frame, as tcp_connection::async_receive does: its header is checked
  /// against options().caps (errc::bad_frame closes the connection before @p sink is asked),
  /// @p sink names where the payload goes, and the payload is copied there from the sender's
  /// buffers. Completion signature: void(error_code, frame_header); boost::asio::error::eof
  /// once the peer closed.
  template <ReceiveSink Sink, boost::asio::completion_token_for<void(error_code, frame_header)> Token>
  auto async_receive(Sink sink, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code, frame_header)>(
        [self = shared_from_this()](auto handler, Sink s) {
          detail::inproc_receive op{
              std::make_unique<detail::sink_for<Sink>>(std::move(s)),
              detail::make_completion<error_code, frame_header>(std::move(handler), self->get_executor()), self};
          self->link_->receive(self->side_, std::move(op));
        },
        token, std::move(sink));
  }

  /// Closes the connection; pending operations complete with operation_aborted here and the
  /// peer's with boost::asio::error::eof.
  void close() { link_->close(side_, boost::asio::error::operation_aborted, "closed locally", false); }

 private:
  friend class inproc_listener;
  static std::shared_ptr<inproc_connection> make(std::shared_ptr<detail::inproc_link> link, int side) {
    return std::make_shared<inproc_connection>(private_tag{}, std::move(link), side);
  }

  std::shared_ptr<detail::inproc_link> link_;
  int side_;
};

/// Accepts in-process connections on one address of an inproc_hub, checking each connector's
/// token and identity (options.accept_peer) as the TCP handshake does. Connections that arrive
/// before start() wait for it, as in a socket's backlog.
class inproc_listener : public std::enable_shared_from_this<inproc_listener> {
  struct private_tag {};

 public:
  using executor_type = boost::asio::any_io_executor;  ///< where connections are handed over
  /// Called with each authenticated connection, on the listener's executor.
  using on_connection_type = std::function<void(std::shared_ptr<inproc_connection>)>;
  /// Completion of a connect.
  using connect_done = std::unique_ptr<detail::erased_completion<error_code, std::shared_ptr<inproc_connection>>>;

  /// Use inproc::listen(); public only for std::make_shared.
  inproc_listener(private_tag, std::shared_ptr<inproc_hub> hub, executor_type ex, tcp_options options)
      : hub_(std::move(hub)), executor_(std::move(ex)), options_(std::move(options)) {}
  ~inproc_listener() {
    if (bound_) hub_->unbind(address_.to_string());
  }
  inproc_listener(const inproc_listener&) = delete;
  inproc_listener& operator=(const inproc_listener&) = delete;

  /// Binds @p at on @p hub (port 0 picks a free port; see local_address()).
  /// @throws dsgd::error(boost::asio::error::address_in_use) when a listener is bound there
  static std::shared_ptr<inproc_listener> create(std::shared_ptr<inproc_hub> hub, executor_type ex,
                                                 const cluster::task_address& at, tcp_options options) {
    auto l = std::make_shared<inproc_listener>(private_tag{}, hub, std::move(ex), std::move(options));
    l->address_ = hub->bind(at, l);
    l->bound_ = true;
    return l;
  }

  /// @returns the bound address, with the real port.
  const cluster::task_address& local_address() const noexcept { return address_; }
  /// @returns the executor connections are handed over on.
  executor_type get_executor() const noexcept { return executor_; }
  /// @returns how many connectors failed authentication so far.
  std::size_t rejected() const noexcept { return rejected_.load(); }
  /// Starts handing over connections to @p on_connection (on the listener's executor).
  void start(on_connection_type on_connection) {
    on_connection_ = std::move(on_connection);
    started_ = true;
    auto waiting = std::move(backlog_);
    backlog_.clear();
    for (auto& r : waiting) accept(std::move(r));
  }
  /// Stops accepting: the address is free again, later connects fail with connection_refused.
  void close() {
    closed_ = true;
    if (bound_) hub_->unbind(address_.to_string());
    bound_ = false;
    auto waiting = std::move(backlog_);
    backlog_.clear();
    for (auto& r : waiting) r.done->complete(true, boost::asio::error::connection_refused, nullptr);
  }

  /// Connects to the listener bound at @p to on @p hub (inproc::async_connect's work).
  static void connect(const inproc_hub& hub, boost::asio::any_io_executor ex, const cluster::task_address& to,
                      tcp_options options, connect_done done) {
    auto l = hub.find(to);
    if (!l) return done->complete(false, boost::asio::error::connection_refused, nullptr);
    std::string reason;
    if (!valid(options, reason)) {
      log(options, "handshake failed: " + reason);
      return done->complete(false, make_error_code(errc::invalid_argument), nullptr);
    }
    // The listener's identity never changes, so the connector may read it from its own thread.
    if (options.accept_peer && !options.accept_peer(l->options_.identity)) {
      ++l->rejected_;
      log(options, "handshake failed: unknown peer identity '" + l->options_.identity + "'");
      return done->complete(false, make_error_code(errc::handshake_failed), nullptr);
    }
    auto ex_listener = l->executor_;
    boost::asio::post(ex_listener,
                      [l = std::move(l), r = request{std::move(options), std::move(ex), std::move(done)}]() mutable {
                        l->accept(std::move(r));
                      });
  }

 private:
  struct request {
    tcp_options options;
    boost::asio::any_io_executor executor;
    connect_done done;
  };

  // The checks of the handshake's own side (identity and token), with its messages.
  static bool valid(const tcp_options& o, std::string& reason) {
    try {
      handshake check(handshake::role::initiator, o.identity, o.token);
      return true;
    } catch (const error& e) {
      reason = e.what();
      return false;
    }
  }

  static void log(const tcp_options& o, const std::string& what) {
    const std::string line = "dsgd transport: inproc: " + what;
    if (o.log) o.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  // On the listener's executor.
  void accept(request r) {
    if (closed_) return r.done->complete(true, boost::asio::error::connection_refused, nullptr);
    if (!started_) return backlog_.push_back(std::move(r));
    std::string reason;
    if (!valid(options_, reason)) {
      reason = "own options: " + reason;
    } else if (r.options.token != options_.token) {
      reason = "peer '" + r.options.identity + "' failed the challenge (wrong cluster token)";
    } else if (options_.accept_peer && !options_.accept_peer(r.options.identity)) {
      reason = "unknown peer identity '" + r.options.identity + "'";
    }
    if (!reason.empty()) {
      ++rejected_;
      log(options_, "handshake failed: " + reason);
      return r.done->complete(true, make_error_code(errc::handshake_failed), nullptr);
    }
    std::array<detail::inproc_side, 2> sides;
    sides[0].executor = std::move(r.executor);
    sides[0].options = std::move(r.options);
    sides[0].peer_identity = options_.identity;
    sides[1].executor = executor_;
    sides[1].options = options_;
    sides[1].peer_identity = sides[0].options.identity;
    auto link = std::make_shared<detail::inproc_link>(std::move(sides));
    detail::inproc_service::enroll(link, 0);
    detail::inproc_service::enroll(link, 1);
    auto theirs = inproc_connection::make(link, 0);
    auto mine = inproc_connection::make(link, 1);
    r.done->complete(true, {}, std::move(theirs));
    if (on_connection_) on_connection_(std::move(mine));
  }

  std::shared_ptr<inproc_hub> hub_;
  executor_type executor_;
  const tcp_options options_;
  cluster::task_address address_;
  bool bound_ = false, started_ = false, closed_ = false;
  std::atomic<std::size_t> rejected_{0};
  on_connection_type on_connection_;
  std::vector<request> backlog_;
};

/// The in-process Transport policy: a handle to the hub its cluster shares (copies share it).
/// Listen and connect by the task's cluster-spec address, as with asio_tcp; nothing is resolved.
/// @code
///   auto hub = transport::inproc_hub::create();
///   transport::inproc net{hub};  // give a copy to every task of the cluster
/// @endcode
class inproc {
 public:
  using connection_type = inproc_connection;  ///< one end of an in-process connection
  using listener_type = inproc_listener;      ///< a listener bound on the hub
  using options_type = tcp_options;           ///< the connection knobs (sockets' ones unused)

  /// @throws dsgd::error(errc::invalid_argument) for a null hub
  explicit inproc(std::shared_ptr<inproc_hub> hub) : hub_(std::move(hub)) {
    if (!hub_) throw error(errc::invalid_argument, "transport::inproc: the hub is null");
  }

  /// @returns the hub this value listens and connects on.
  const std::shared_ptr<inproc_hub>& hub() const noexcept { return hub_; }

  /// Binds @p at on the hub (port 0 picks a free port; see local_address()).
  /// @throws dsgd::error(boost::asio::error::address_in_use) when a listener is bound there
  std::shared_ptr<inproc_listener> listen(boost::asio::any_io_executor ex, const cluster::task_address& at,
                                          tcp_options options) const {
    return inproc_listener::create(hub_, std::move(ex), at, std::move(options));
  }
  /// Same, with @p at given as "host:port".
  std::shared_ptr<inproc_listener> listen(boost::asio::any_io_executor ex, std::string_view at,
                                          tcp_options options) const {
    return listen(std::move(ex), cluster::task_address::parse(at), std::move(options));
  }

  /// @returns the address @p l is bound to, with its real port.
  static cluster::task_address local_address(const inproc_listener& l) { return l.local_address(); }

  /// Connects to the listener bound at @p to. Completion signature:
  /// void(error_code, std::shared_ptr<inproc_connection>) on @p ex (null on failure):
  /// connection_refused at once when nobody listens there, errc::handshake_failed for a wrong
  /// token or a refused identity, errc::invalid_argument for an invalid own identity or token.
  template <class Token>
  auto async_connect(boost::asio::any_io_executor ex, const cluster::task_address& to, tcp_options options,
                     Token&& token) const {
    using signature = void(error_code, std::shared_ptr<inproc_connection>);
    return boost::asio::async_initiate<Token, signature>(
        [hub = hub_, ex, to](auto handler, tcp_options opts) {
          auto done = detail::make_completion<error_code, std::shared_ptr<inproc_connection>>(std::move(handler), ex);
          inproc_listener::connect(*hub, ex, to, std::move(opts), std::move(done));
        },
        token, std::move(options));
  }
  /// Same, with @p to given as "host:port".
  template <class Token>
  auto async_connect(boost::asio::any_io_executor ex, std::string_view to, tcp_options options, Token&& token) const {
    return async_connect(std::move(ex), cluster::task_address::parse(to), std::move(options),
                         std::forward<Token>(token));
  }

 private:
  std::shared_ptr<inproc_hub> hub_;
};

static_assert(Transport<inproc>);

}  // namespace dsgd::transport
