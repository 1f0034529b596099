// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::parameter_server: a ps task over a Transport (TCP by default), the counterpart of
/// `tf.train.Server(cluster, job_name="ps", task_index=i).join()`. What it holds and how it
/// answers is server::shard_table; this file has the listener, the connections, the receive
/// loop, the sweep timer, the chief's liveness and shutdown: every call on the transport.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/update/concepts.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <concepts>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace dsgd::server {

/// A parameter-server task: holds the shards the placement gives it, applies the update rule
/// to the gradients workers push, and answers pulls. It listens (unless serving.listen says
/// otherwise: any address, an interface) on exactly the address the
/// cluster spec gives ps task @p task_index, authenticates every peer with the cluster token,
/// and serves until the chief sends shutdown; join() then returns.
///
/// One thread (the one calling join()) serves every connection, or serving_options::threads
/// of them (TCP): a pull that must wait is parked and answered when a push completes the step,
/// or with an error at its deadline. With several threads each connection runs on a strand of
/// its own (its reads, writes, checksums, TLS) and everything the table holds is behind one
/// lock, taken by every handler below and never held across a wait; a call on a connection
/// from another's handler is posted to its strand (docs/design.md, "Threads of a ps").
///
/// Sparse pulls and pushes (sparse_pull, sparse_push) name rows of dimension 0 of a variable of
/// rank 2 or more by their index in the whole variable; the ps checks every key against the
/// rows its shard holds and answers a bad request (unknown shard, rank 1, a row out of range,
/// a payload that is not whole rows, too many keys) with reply_error naming it, keeping the
/// connection. See docs/design.md, "Sparse rows".
///
/// @tparam U an UpdateRule; @tparam O an Optimizer; @tparam D where the shards live (host);
/// @tparam T the Transport it listens on: transport::asio_tcp (sockets), or transport::inproc
///         (tasks as threads of one process, passed in with its hub)
template <UpdateRule U, class O, Device D = device::cpu, Transport T = transport::asio_tcp>
class parameter_server {
  static_assert(D::is_host, "parameter_server keeps its shards in host memory: use device::cpu");

 public:
  using options = ps_options<U, O>;
  using shard_type = typename U::template shard<D, O>;
  using transport_type = T;
  using endpoint_type = boost::asio::ip::tcp::endpoint;

  /// Binds the address of ps task @p task_index in @p spec (port 0 there picks a free port) on
  /// @p transport.
  /// @throws dsgd::error for an unknown task or an address that cannot be bound
  parameter_server(cluster::cluster_spec spec, int task_index, options opts, D device = {}, T transport = T{})
      : spec_(std::move(spec)),
        self_{"ps", task_index},
        opts_(with_log(std::move(opts))),
        table_(self_, spec_.num_tasks("ps"), cluster::replicas::count(spec_), opts_, std::move(device)),
        transport_(std::move(transport)),
        sweep_(ioc_) {
    validate(opts_);
    if (threaded() && !transport::serves_threads<T>)
      throw error(errc::invalid_argument, self_.to_string() + ": serving.threads " +
                                              std::to_string(opts_.serving.threads) +
                                              " is for TCP (a transport that serves_threads); this transport is "
                                              "served by one thread");
    if (cluster::replicas::count(spec_) == 0)
      throw error(errc::bad_cluster_spec, "parameter_server: the cluster has no worker or chief task");
    const auto& addr = spec_.address("ps", task_index);
    if constexpr (transport::binds_elsewhere<T>) {
      // serving.listen: the spec's address, any address, or an interface (a pod dialled by a
      // Service's name listens on any); peers still dial the spec's address.
      listener_ = transport_.listen(ioc_.get_executor(), addr, opts_.serving.listen, connection_options());
    } else {
      if (!opts_.serving.listen.empty())
        throw error(errc::invalid_argument, self_.to_string() + ": serving.listen \"" + opts_.serving.listen +
                                                "\" is for TCP (a transport that binds_elsewhere); this transport "
                                                "listens on the task's name");
      listener_ = transport_.listen(ioc_.get_executor(), addr, connection_options());
    }
  }

  parameter_server(const parameter_server&) = delete;
  parameter_server& operator=(const parameter_server&) = delete;

  /// @returns the bound address (with the real port when the spec said port 0).
  cluster::task_address local_address() const { return T::local_address(*listener_); }

  /// @returns the bound TCP endpoint (with the real port when the spec said port 0).
  endpoint_type local_endpoint() const requires requires(const typename T::listener_type& l) {
    { l.local_endpoint() } -> std::convertible_to<endpoint_type>;
  }
  { return listener_->local_endpoint(); }

  /// Serves until the chief shuts the cluster down (or stop() is called), then returns.
  /// @throws dsgd::error(errc::peer_lost) when the chief was gone for options::chief_timeout
  void join() {
    listener_->start([this](connection c) { on_connection(std::move(c)); });
    arm_sweep();
    log(self_.to_string() + " serving on " + local_address().to_string() +
        (threaded() ? " with " + std::to_string(opts_.serving.threads) + " threads" : ""));
    std::exception_ptr thrown;
    std::mutex thrown_mutex;
    auto serve = [&] {
      try {
        ioc_.run();
      } catch (...) {
        const std::lock_guard l(thrown_mutex);
        if (!thrown) thrown = std::current_exception();
        ioc_.stop();
      }
    };
    std::vector<std::thread> helpers;
    for (std::size_t i = 1; i < opts_.serving.threads; ++i) helpers.emplace_back(serve);
    serve();
    for (auto& t : helpers) t.join();
    if (thrown) std::rethrow_exception(thrown);
    // A transport may still hold work on this context from another thread (inproc completes
    // this task's sends from the peer's thread), and closes posted to the connections' strands
    // are still to run: let them end, so that the context outlives them.
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(1));
    if (failure_) throw *failure_;
  }

  /// Stops serving from any thread; join() returns soon after.
  void stop() {
    boost::asio::post(ioc_, [this] {
      const auto l = lock();
      close_all("stopped");
    });
  }

  /// @returns the shard (variable, shard) or nullptr; for tests and checkpoints, after join().
  const shard_type* find(std::uint32_t variable, std::uint32_t shard) const { return table_.find(variable, shard); }

 private:
  using connection = std::shared_ptr<typename T::connection_type>;

  // The table's replies go to the connections (a reply_sink).
  struct replies {
    parameter_server& ps;
    void send(peer_id p, outgoing_reply r) {
      ps.send(p, std::move(r), [](error_code) {});
    }
    bool is_open(peer_id p) const {
      auto it = ps.peers_.find(p);
      // Threaded, a connection's own state is its strand's: the ps's map says whether it is kept.
      return it != ps.peers_.end() && (ps.threaded() || it->second->is_open());
    }
    void supersede(peer_id p) { ps.drop(p, boost::asio::error::operation_aborted, false); }
    void shut_down(peer_id p, outgoing_reply ok) { ps.shutdown_now(p, std::move(ok)); }
  };

  // The log, stderr by default; threaded, one line at a time (the connections log from their
  // strands).
  static options with_log(options o) {
    o.connection.log = dsgd::detail::or_stderr(std::move(o.connection.log));
    if (o.serving.threads > 1)
      o.connection.log = [m = std::make_shared<std::mutex>(),
                          log = std::move(o.connection.log)](std::string_view line) {
        const std::lock_guard l(*m);
        log(line);
      };
    return o;
  }

  bool threaded() const noexcept { return opts_.serving.threads > 1; }
  // Every handler holds it while it touches the table, the peers or the ps's own state. It is
  // recursive because a transport may complete a call inline, into another handler.
  std::unique_lock<std::recursive_mutex> lock() { return std::unique_lock(mutex_); }
  // Runs @p f on @p conn's strand (threaded), or here.
  template <class F>
  void on_strand_of(const connection& conn, F f) {
    if (threaded()) boost::asio::post(conn->get_executor(), std::move(f));
    else f();
  }

  // The connection settings as given, with this task's identity and the peers it accepts.
  typename T::options_type connection_options() {
    typename T::options_type t = opts_.connection;
    t.identity = self_.to_string();
    t.strand_per_connection = threaded();
    auto spec = spec_;
    t.accept_peer = [spec](std::string_view who) {
      auto colon = who.find(':');
      if (colon == std::string_view::npos) return false;
      std::string job(who.substr(0, colon));
      if (job != "worker" && job != "chief") return false;
      try {
        return spec.contains({job, std::stoi(std::string(who.substr(colon + 1)))});
      } catch (...) {
        return false;
      }
    };
    if constexpr (requires { t.on_refused; })
      t.on_refused = [this](std::string_view who, std::string_view why) { on_refused(who, why); };
    return t;
  }

  // A peer claiming @p who failed the handshake: a replica of the spec is named to the table.
  void on_refused(std::string_view who, std::string_view why) {
    const auto l = lock();
    const auto colon = who.find(':');
    if (closed_ || colon == std::string_view::npos) return;
    try {
      const cluster::task_id task{std::string(who.substr(0, colon)), std::stoi(std::string(who.substr(colon + 1)))};
      if (!spec_.contains(task)) return;
      replies out{*this};
      table_.refused(cluster::replicas::index_of(spec_, task), task.to_string(), std::string(why), out);
    } catch (const std::exception&) {
      // Not a training replica of this cluster: the transport logged the refusal.
    }
  }

  void log(const std::string& s) const { opts_.connection.log(s); }

  // --- the transport: every call on a connection or the listener is below -----------------

  void on_connection(connection conn) {
    const auto l = lock();
    if (closed_) return conn->close();  // it completed its handshake after the ps closed
    const peer_id id = next_peer_++;
    table_.connect(id, conn->peer_identity(), transport::receives_through_shared_memory(*conn));
    peers_.emplace(id, conn);
    receive(id, conn);
  }

  // Each frame's payload goes where the table says; the table then acts on it.
  void receive(peer_id id, const connection& conn) {
    conn->async_receive(
        [this, id](const transport::frame_header& h, error_code& ec) {
          const auto l = lock();
          auto bytes = table_.destination(id, h, ec);
          return boost::asio::mutable_buffer(bytes.data(), bytes.size());
        },
        [this, id, conn](error_code ec, transport::frame_header h) {
          const auto l = lock();
          if (ec) return drop(id, ec);
          if (closed_) return;  // threaded: its close is posted behind this
          replies out{*this};
          table_.received(id, h, out);
          if (!closed_ && peers_.contains(id)) receive(id, conn);
        });
  }

  // Writes @p r to peer @p p, then calls @p done; the payload's owner is let go under the lock,
  // so that a push that finds a pulled buffer no longer shared sees its write finished.
  template <class Handler>
  void send(peer_id p, outgoing_reply r, Handler&& done) {
    auto it = peers_.find(p);
    if (it == peers_.end() || (!threaded() && !it->second->is_open())) return;
    ++sending_;
    on_strand_of(it->second, [this, conn = it->second, r = std::move(r), done = std::forward<Handler>(done)]() mutable {
      auto written = [this, keep = std::move(r.keep_alive), done = std::move(done)](error_code ec, bool sent) mutable {
        const auto l = lock();
        keep.reset();
        --sending_;
        if (sent) done(ec);
        if (draining_ && sending_ == 0) close_all("cluster shut down");
      };
      if (!conn->is_open()) return written({}, false);  // it closed before its turn came (threaded)
      conn->async_send(r.header, boost::asio::buffer(r.payload.data(), r.payload.size()),
                       [written = std::move(written)](error_code ec) mutable { written(ec, true); });
    });
  }

  // Shuts down once every replica has finished (or the step timeout passed), so a chief that
  // is done first does not cut off workers still training on uneven data.
  void shutdown_now(peer_id p, outgoing_reply ok) {
    shutting_down_ = true;
    listener_->close();
    // Close once every reply queued so far is written (the chief's last), so that each peer
    // sees its answer before the connection goes: a transport whose send completes only when
    // the peer has read the message (inproc) would otherwise lose a finish's reply. A peer not
    // reading for drain_grace does not hold the shutdown up (the sweep closes then).
    drain_deadline_ = update::clock_type::now() + drain_grace;
    send(p, std::move(ok), [this](error_code) { draining_ = true; });
  }

  // Closes @p id's connection. With @p departs, the table counts a replica without another
  // connection as gone (update::tracks_departures) until it registers again.
  void drop(peer_id id, error_code ec, bool departs = true) {
    auto it = peers_.find(id);
    if (it == peers_.end()) return;
    auto conn = it->second;
    if (!closed_ && !shutting_down_ && ec != boost::asio::error::operation_aborted) {
      std::string who = conn->peer_identity().empty() ? "a peer" : conn->peer_identity();
      bool clean = ec == boost::asio::error::eof && table_.finished(id);
      if (!clean) log(self_.to_string() + ": lost " + who + " (" + ec.message() + ")");
    }
    peers_.erase(it);
    replies out{*this};
    if (!threaded()) {
      conn->close();
      table_.disconnect(id, departs && !closed_, out);
      return;
    }
    // The connection's read may be under way on another thread, into the buffers of its state:
    // they are let go once it is closed, on its strand.
    auto state = std::make_shared<decltype(table_.disconnect(id, departs, out))>(
        table_.disconnect(id, departs && !closed_, out));
    on_strand_of(conn, [this, conn, state]() mutable {
      conn->close();
      const auto l = lock();
      state.reset();
    });
  }

  void close_all(const std::string& why) {
    if (!closed_ && shutting_down_) log(self_.to_string() + ": " + why);
    if (closed_) return;
    closed_ = true;
    listener_->close();
    sweep_.cancel();
    for (auto& [id, conn] : peers_) on_strand_of(conn, [c = conn] { c->close(); });
    peers_.clear();
    ioc_.stop();
  }

  // --- timers -------------------------------------------------------------------------------

  // Every 50 ms: answer parked requests whose deadline passed with the reason they waited.
  void arm_sweep() {
    sweep_.expires_after(std::chrono::milliseconds(50));
    sweep_.async_wait([this](error_code ec) {
      const auto l = lock();
      if (ec || closed_) return;
      auto now = update::clock_type::now();
      if (shutting_down_ && now >= drain_deadline_) return close_all("cluster shut down");
      replies out{*this};
      if (table_.sweep(now, out)) return;
      if (chief_gone_too_long(now)) return;
      arm_sweep();
    });
  }

  // Called every sweep: true (and the ps stopped with a named error) once the chief that
  // registered has had no open connection for options::chief_timeout.
  bool chief_gone_too_long(update::clock_type::time_point now) {
    if (!table_.chief_registered() || opts_.serving.chief_timeout.count() == 0) return false;
    if (table_.chief_connected()) {
      chief_gone_since_.reset();
      return false;
    }
    if (!chief_gone_since_) chief_gone_since_ = now;
    if (now - *chief_gone_since_ < opts_.serving.chief_timeout) return false;
    failure_.emplace(errc::peer_lost, self_.to_string() + ": the chief has been gone for " +
                                          std::to_string(opts_.serving.chief_timeout.count()) +
                                          " ms and only it can shut the cluster down; stopping");
    log(failure_->what());
    close_all("chief gone");
    return true;
  }

  cluster::cluster_spec spec_;
  cluster::task_id self_;
  options opts_;
  shard_table<U, O, D> table_;
  boost::asio::io_context ioc_;
  T transport_;
  std::shared_ptr<typename T::listener_type> listener_;
  boost::asio::steady_timer sweep_;
  std::map<peer_id, connection> peers_;
  peer_id next_peer_ = 0;
  std::optional<update::clock_type::time_point> chief_gone_since_;
  std::optional<dsgd::error> failure_;  // why join() fails
  // How long a shutdown waits for replies still being written.
  static constexpr std::chrono::seconds drain_grace{5};
  update::clock_type::time_point drain_deadline_{};
  std::recursive_mutex mutex_;  // see lock()
  std::size_t sending_ = 0;     // replies being written
  bool draining_ = false;       // the chief's shutdown reply is written: close once sending_ is 0
  bool shutting_down_ = false;
  bool closed_ = false;
};

}  // namespace dsgd::server
