// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::parameter_server: a ps task over TCP, the counterpart of
/// `tf.train.Server(cluster, job_name="ps", task_index=i).join()`.
#pragma once

#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/server/detail/shard_checkpoint.hpp>
#include <dsgd/server/protocol.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/update/concepts.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server {

/// A shard that can lend its current values for a pull reply without a copy (try_pin(), as
/// the shards of the built-in rules do); other rules' pulls go through a snapshot copy.
template <class S>
concept pins_values = requires(S& s) {
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->values->data() } -> std::convertible_to<const float*>;
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->step } -> std::convertible_to<std::uint64_t>;
};

/// A shard that applies a push chunk by chunk as it arrives (push_chunk, then push_streamed
/// with the whole gradient), as the async and bounded-staleness shards do for optimizers with
/// an update::chunked_apply; other shards apply a push once it is complete.
template <class S>
concept streams_pushes = requires(S& s, const float* g, update::clock_type::time_point t) {
  { s.push_chunk(std::size_t{0}, std::size_t{0}, std::size_t{0}, g) } -> std::same_as<bool>;
  { s.push_streamed(std::size_t{0}, std::uint64_t{0}, g, t) } -> std::same_as<update::push_outcome>;
};

/// A shard that is told when a worker's connection is lost and when it registers again
/// (update::sync_average, whose backups then stand in for a dead worker).
template <class S>
concept tracks_departures = requires(S& s) {
  s.depart(std::size_t{0});
  s.rejoin(std::size_t{0});
};

/// A parameter-server task: holds the shards the placement gives it, applies the update rule
/// to the gradients workers push, and answers pulls. It listens on exactly the address the
/// cluster spec gives ps task @p task_index, authenticates every peer with the cluster token,
/// and serves until the chief sends shutdown; join() then returns.
///
/// One thread (the one calling join()) serves every connection: a pull that must wait is
/// parked and answered when a push completes the step, or with an error at its deadline.
///
/// Sparse pulls and pushes (sparse_pull, sparse_push) name rows of dimension 0 of a variable of
/// rank 2 or more by their index in the whole variable; the ps checks every key against the
/// rows its shard holds and answers a bad request (unknown shard, rank 1, a row out of range,
/// a payload that is not whole rows, too many keys) with reply_error naming it, keeping the
/// connection. See docs/design.md, "Sparse rows".
///
/// @tparam U an UpdateRule; @tparam O an Optimizer; @tparam D where the shards live (host).
template <UpdateRule U, class O, Device D = device::cpu>
class parameter_server {
  static_assert(D::is_host, "parameter_server keeps its shards in host memory: use device::cpu");

 public:
  using options = ps_options<U, O>;
  using shard_type = typename U::template shard<D, O>;
  using endpoint_type = boost::asio::ip::tcp::endpoint;

  /// Binds the address of ps task @p task_index in @p spec (port 0 there picks a free port).
  /// @throws dsgd::error for an unknown task or an address that cannot be bound
  parameter_server(cluster::cluster_spec spec, int task_index, options opts, D device = {})
      : spec_(std::move(spec)),
        self_{"ps", task_index},
        opts_(std::move(opts)),
        device_(std::move(device)),
        replicas_(cluster::replicas::count(spec_)),
        sweep_(ioc_) {
    opts_.connection.log = dsgd::detail::or_stderr(std::move(opts_.connection.log));
    validate(opts_);
    if (replicas_ == 0)
      throw error(errc::bad_cluster_spec, "parameter_server: the cluster has no worker or chief task");
    const auto& addr = spec_.address("ps", task_index);
    listener_ = transport::tcp_listener::create(ioc_.get_executor(), cluster::endpoint_of(addr, self_.to_string()), tcp());
  }

  parameter_server(const parameter_server&) = delete;
  parameter_server& operator=(const parameter_server&) = delete;

  /// @returns the bound address (with the real port when the spec said port 0).
  endpoint_type local_endpoint() const { return listener_->local_endpoint(); }

  /// Serves until the chief shuts the cluster down (or stop() is called), then returns.
  /// @throws dsgd::error(errc::peer_lost) when the chief was gone for options::chief_timeout
  void join() {
    listener_->start([this](std::shared_ptr<transport::tcp_connection> c) { on_connection(std::move(c)); });
    arm_sweep();
    log(self_.to_string() + " serving on " + transport::detail::to_string(local_endpoint()));
    ioc_.run();
    if (failure_) throw *failure_;
  }

  /// Stops serving from any thread; join() returns soon after.
  void stop() {
    boost::asio::post(ioc_, [this] { close_all("stopped"); });
  }

  /// @returns the shard (variable, shard) or nullptr; for tests and checkpoints, after join().
  const shard_type* find(std::uint32_t variable, std::uint32_t shard) const {
    auto it = shards_.find(key(variable, shard));
    return it == shards_.end() ? nullptr : it->second.get();
  }

 private:
  struct peer {
    std::shared_ptr<transport::tcp_connection> conn;
    std::size_t replica = 0;
    bool registered = false;
    bool chief = false;
    std::uint64_t generation = 0;  // the ps's generation when this peer registered
    std::vector<std::byte> control;
    std::vector<float> incoming;  // init_shard values or a pushed gradient, received in place
    bool streaming = false;       // the push arriving in `incoming` is being applied chunk by chunk
    std::vector<std::uint64_t> keys_in;  // a sparse_pull's keys, received in place
    std::vector<float> sparse_in;        // a sparse_push's keys then rows, received in place
    std::size_t sparse_keys = 0;         // keys in sparse_in
    std::vector<std::byte> discard;      // a chunk of a rejected sparse request
    std::optional<std::pair<error_code, std::string>> rejected;  // why, answered at its last chunk
  };
  struct parked_request {
    std::shared_ptr<peer> from;
    transport::frame_header request;
    update::clock_type::time_point deadline;
    std::vector<std::uint64_t> rows;  // a sparse_pull's rows, local to the shard
  };

  static std::uint64_t key(std::uint32_t v, std::uint32_t s) { return (std::uint64_t{v} << 32) | s; }

  // The connection settings as given, with this task's identity and the peers it accepts.
  transport::tcp_options tcp() const {
    transport::tcp_options t = opts_.connection;
    t.identity = self_.to_string();
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
    return t;
  }

  void log(const std::string& s) const { opts_.connection.log(s); }

  void on_connection(std::shared_ptr<transport::tcp_connection> conn) {
    auto p = std::make_shared<peer>();
    p->conn = std::move(conn);
    peers_.push_back(p);
    receive(p);
  }

  void receive(const std::shared_ptr<peer>& p) {
    p->conn->async_receive(
        [this, p](const transport::frame_header& h, error_code& ec) { return destination(*p, h, ec); },
        [this, p](error_code ec, transport::frame_header h) {
          if (ec) return drop(p, ec);
          if (h.last_chunk()) {
            try {
              dispatch(p, h);
            } catch (const dsgd::error& e) {
              reply_error(p, h, e.code(), e.what());
            }
          } else if (static_cast<message>(h.type) == message::push) {
            on_push_chunk(*p, h);
          }
          if (!closed_) receive(p);
        });
  }

  // Where a frame's payload goes: straight into the buffer that will use it.
  boost::asio::mutable_buffer destination(peer& p, const transport::frame_header& h, error_code& ec) {
    auto type = static_cast<message>(h.type);
    if (type == message::register_worker || type == message::save || type == message::restore) {
      p.control.resize(h.payload_length);
      return boost::asio::buffer(p.control);
    }
    if (type == message::init_shard || type == message::push) {
      std::size_t floats = h.total_length / sizeof(float);
      if (h.total_length % sizeof(float) != 0) {
        ec = make_error_code(errc::bad_frame);
        return {};
      }
      if (type == message::push) {
        auto it = shards_.find(key(h.variable, h.shard));
        if (it == shards_.end() || it->second->size() != floats) {
          ec = make_error_code(errc::bad_frame);  // a push for a shard this ps does not hold
          return {};
        }
      } else {
        // Only a shard of the registered placement, at its size: the only allocation a
        // peer can ask for is one the placement accounts for.
        auto it = layouts_.find(key(h.variable, h.shard));
        if (it == layouts_.end() || it->second.rows * it->second.row_elements() != floats) {
          ec = make_error_code(errc::bad_frame);
          return {};
        }
      }
      if (h.chunk_offset == 0) {
        p.incoming.resize(floats);
        p.streaming = false;
      }
      return transport::chunk_destination(boost::asio::buffer(p.incoming), h, ec);
    }
    if (type == message::sparse_pull || type == message::sparse_push) return sparse_destination(p, h, ec);
    if (h.payload_length != 0) ec = make_error_code(errc::bad_frame);
    return {};
  }

  void dispatch(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto type = static_cast<message>(h.type);
    if (type != message::register_worker && !p->registered)
      throw error(errc::invalid_argument, std::string(to_string(type)) + " before register_worker");
    if (type != message::register_worker && p->generation != generation_) throw aborted(*p);
    switch (type) {
      case message::register_worker: return on_register(p, h);
      case message::init_shard: return on_init(p, h);
      case message::wait_ready:
      case message::pull: return park_or_answer(p, h);
      case message::push: return on_push(p, h);
      case message::sparse_pull: return on_sparse_pull(p, h);
      case message::sparse_push: return on_sparse_push(p, h);
      case message::finish:
        for (auto& [k, s] : shards_) s->finish(p->replica);
        finished_.insert(p->replica);
        reply(p, h, message::reply_ok);
        return retry_parked();
      case message::shutdown: return park_or_answer(p, h);
      case message::save: return on_save(p, h);
      case message::restore: return on_restore(p, h);
      default:
        throw error(errc::bad_frame, "unknown message type " + std::to_string(h.type));
    }
  }

  void on_register(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto r = decode_control<register_request>(
        std::string_view(reinterpret_cast<const char*>(p->control.data()), p->control.size()), "register_worker");
    if (r.task != p->conn->peer_identity())
      throw error(errc::handshake_failed, "register_worker claims " + r.task + " but the handshake proved " +
                                              p->conn->peer_identity());
    if (r.replica >= replicas_)
      throw error(errc::invalid_argument, r.task + " claims replica " + std::to_string(r.replica) +
                                              " of " + std::to_string(replicas_));
    if (placement_.empty()) {
      placement_ = r.placement;
      fingerprint_ = r.fingerprint;
      expected_shards_ = r.shards;
      for (auto& l : r.layouts) layouts_[key(l.variable, l.shard)] = l;
    } else if (r.fingerprint != fingerprint_ || r.placement != placement_) {
      throw error(errc::placement_mismatch,
                  "placement of " + r.task + " differs from the one " + self_.to_string() +
                      " holds (were variables created in another order or with other shapes?)\n  " +
                      self_.to_string() + ": " + placement_ + "\n  " + r.task + ": " + r.placement);
    }
    // A replica registering on a new connection supersedes its older ones (a restarted or
    // reconnected worker): closed now, nothing they still carry is applied after the counts
    // below are read, so those counts are final.
    for (auto& other : std::vector<std::shared_ptr<peer>>(peers_))
      if (other != p && other->registered && other->replica == r.replica) {
        log(self_.to_string() + ": " + r.task + " registered again; closing its older connection");
        drop(other, boost::asio::error::operation_aborted, false);
      }
    p->replica = r.replica;
    p->registered = true;
    if constexpr (tracks_departures<shard_type>)
      for (auto& [k, s] : shards_) s->rejoin(r.replica);
    p->chief = r.chief;
    if (r.chief) chief_seen_ = true;
    p->generation = generation_;
    auto counts = std::make_shared<std::vector<std::uint64_t>>();
    for (const auto& l : r.layouts) counts->push_back(to_le(pushes_received(key(l.variable, l.shard), r.replica)));
    send(p, reply_header(h, message::reply_ok), boost::asio::buffer(*counts), [counts](error_code) {});
  }

  // Pushes of @p replica received for shard @p k (every outcome counts: the push was taken).
  std::uint64_t& pushes_received(std::uint64_t k, std::size_t replica) {
    auto& per_replica = received_[k];
    per_replica.resize(replicas_);
    return per_replica[replica];
  }

  void on_init(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto k = key(h.variable, h.shard);
    if (!shards_.contains(k)) {
      auto shard = opts_.rule.template make_shard<D, O>(device_, p->incoming, opts_.optimizer, replicas_);
      if (h.step != 0) shard->assign(p->incoming, h.step);  // restored from a checkpoint at that step
      shards_.emplace(k, std::move(shard));
      if (shards_.size() == expected_shards_)
        log(self_.to_string() + " ready: " + std::to_string(shards_.size()) + " shards");
    }
    reply(p, h, message::reply_ok);
    retry_parked();
  }

  void on_push(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto& s = *shards_.at(key(h.variable, h.shard));
    const auto deadline = update::clock_type::now() + opts_.serving.step_timeout;
    update::push_outcome outcome;
    if constexpr (streams_pushes<shard_type>) {
      outcome = std::exchange(p->streaming, false) ? s.push_streamed(p->replica, h.step, p->incoming.data(), deadline)
                                                   : s.push(p->replica, h.step, p->incoming.data(), deadline);
    } else {
      outcome = s.push(p->replica, h.step, p->incoming.data(), deadline);
    }
    ++pushes_received(key(h.variable, h.shard), p->replica);
    reply_push(p, h, outcome, s.step());
  }

  // A chunk of a push other than its last: applied now, out of place, where the shard can (see
  // streams_pushes), so that the apply overlaps the rest of the push arriving. The push is
  // published, or applied whole, at its last chunk (on_push). Not for a worker on this host:
  // through shared memory a chunk arrives in the time of a copy, nothing is left to overlap,
  // and applying in place once is cheaper than streaming out of place.
  void on_push_chunk(peer& p, const transport::frame_header& h) {
    if constexpr (streams_pushes<shard_type>) {
      if (h.chunk_offset == 0)
        p.streaming = opts_.serving.apply_in_chunks && p.registered && p.generation == generation_ &&
                      !p.conn->receives_through_shared_memory();
      if (!p.streaming) return;
      if (h.chunk_offset % sizeof(float) != 0 || h.payload_length % sizeof(float) != 0) {
        p.streaming = false;
        return;
      }
      auto it = shards_.find(key(h.variable, h.shard));
      p.streaming = it != shards_.end() && it->second->push_chunk(p.replica, h.chunk_offset / sizeof(float),
                                                                  h.payload_length / sizeof(float),
                                                                  p.incoming.data());
    }
  }

  void reply_push(const std::shared_ptr<peer>& p, const transport::frame_header& h, update::push_outcome outcome,
                  std::uint64_t step) {
    auto type = outcome == update::push_outcome::applied       ? message::push_applied
                : outcome == update::push_outcome::accumulated ? message::push_accumulated
                                                               : message::push_dropped;
    reply(p, h, type, step);
    if (outcome == update::push_outcome::applied) retry_parked();
  }

  // --- checkpoints ------------------------------------------------------------------------

  std::filesystem::path checkpoint_directory(const peer& p, const char* what) const {
    auto r = decode_control<checkpoint_request>(
        std::string_view(reinterpret_cast<const char*>(p.control.data()), p.control.size()), what);
    if (r.directory.empty()) throw error(errc::invalid_argument, std::string(what) + ": no checkpoint directory");
    return r.directory;
  }

  // Writes this task's data file of checkpoint h.step: every shard's values, slots, counters.
  void on_save(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto dir = checkpoint_directory(*p, "save");
    std::vector<std::pair<shard_layout, typename shard_type::saved_state>> held;
    for (auto& [k, shard] : shards_) held.emplace_back(layouts_.at(k), shard->save());
    detail::write_shard_checkpoint(dir, h.step, static_cast<std::size_t>(self_.index), spec_.num_tasks("ps"), held);
    reply(p, h, message::reply_ok);
  }

  // Overwrites (or creates) every shard this task holds from checkpoint h.step. Over existing
  // shards it then starts a new generation: requests of workers registered before it are
  // answered errc::aborted.
  void on_restore(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    auto dir = checkpoint_directory(*p, "restore");
    checkpoint::checkpoint_reader reader(dir, h.step);  // verifies every file and checksum
    typename O::template state<D> probe(device_, 0);
    std::vector<std::pair<std::uint64_t, typename shard_type::saved_state>> states;
    for (const auto& [k, layout] : layouts_) {
      std::size_t elements = layout.rows * layout.row_elements();
      states.emplace_back(k, detail::read_shard_checkpoint<typename shard_type::saved_state>(reader, layout, probe,
                                                                                          elements));
    }
    // Over shards that existed, a restore re-creates the session; into a fresh ps task (first
    // start, or restarted after a crash) nobody has read anything yet, so nobody is aborted.
    const bool recreated = !shards_.empty();
    for (auto& [k, state] : states) {
      auto it = shards_.find(k);
      if (it == shards_.end())
        it = shards_.emplace(k, opts_.rule.template make_shard<D, O>(device_, state.values, opts_.optimizer, replicas_))
                 .first;
      it->second->restore(state);
    }
    log(self_.to_string() + " restored checkpoint " + std::to_string(h.step) + " from " + dir.string() + " (" +
        std::to_string(states.size()) + " shards)" + (recreated ? "; workers register again" : ""));
    reply(p, h, message::reply_ok);
    if (!recreated) return retry_parked();
    ++generation_;
    restored_step_ = h.step;
    p->generation = generation_;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->from->generation == generation_) {
        ++it;
        continue;
      }
      auto e = aborted(*it->from);
      reply_error(it->from, it->request, e.code(), e.what());
      it = parked_.erase(it);
    }
    retry_parked();
  }

  dsgd::error aborted(const peer& p) const {
    return error(errc::aborted, self_.to_string() + " restored checkpoint " + std::to_string(restored_step_) +
                                    " after " + p.conn->peer_identity() +
                                    " registered: register again and read the variables anew");
  }

  // --- sparse rows -------------------------------------------------------------------------

  // A key as it came off the wire (little-endian), on any host.
  static std::uint64_t from_le(const std::uint64_t& v) noexcept {
    return transport::detail::load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(&v));
  }
  // A number as it goes on the wire (little-endian), on any host.
  static std::uint64_t to_le(std::uint64_t v) noexcept {
    std::uint64_t out;
    transport::detail::store_le(reinterpret_cast<std::byte*>(&out), v);
    return out;
  }

  // The layout of the shard a sparse request names, with every check that needs only the
  // header. @throws dsgd::error naming the request, the variable and this ps
  const shard_layout& sparse_layout(const peer& p, const transport::frame_header& h) const {
    const char* what = to_string(static_cast<message>(h.type));
    if (!p.registered) throw error(errc::invalid_argument, std::string(what) + " before register_worker");
    auto l = layouts_.find(key(h.variable, h.shard));
    auto s = shards_.find(key(h.variable, h.shard));
    if (l == layouts_.end() || s == shards_.end())
      throw error(errc::not_found, std::string(what) + " of variable " + std::to_string(h.variable) + " shard " +
                                       std::to_string(h.shard) + ", which " + self_.to_string() +
                                       (l == layouts_.end() ? " does not hold" : " holds but was not initialised"));
    const auto& layout = l->second;
    if (layout.extents.size() < 2)
      throw error(errc::invalid_argument, std::string(what) + " of " + layout.describe() + " on " + self_.to_string() +
                                              ": sparse rows need a variable of rank 2 or more (dimension 0 "
                                              "indexes the rows), this one has rank " +
                                              std::to_string(layout.extents.size()));
    if (layout.row_elements() == 0 || layout.rows * layout.row_elements() != s->second->size())
      throw error(errc::shape_mismatch, std::string(what) + " of " + layout.describe() + " on " + self_.to_string() +
                                            ": the shard holds " + std::to_string(s->second->size()) +
                                            " floats, not " + std::to_string(layout.rows) + " rows of " +
                                            std::to_string(layout.row_elements()));
    return layout;
  }

  // Checks a sparse request from its first header and sizes its buffer, or marks it rejected:
  // its payload is then read into a scratch chunk and the error answered at its last chunk.
  boost::asio::mutable_buffer sparse_destination(peer& p, const transport::frame_header& h, error_code& ec) {
    bool pull = static_cast<message>(h.type) == message::sparse_pull;
    if (h.chunk_offset == 0) {
      p.rejected.reset();
      try {
        const auto& l = sparse_layout(p, h);
        std::uint64_t dim = l.row_elements();
        std::uint64_t record = pull ? sizeof(std::uint64_t) : sizeof(std::uint64_t) + dim * sizeof(float);
        if (h.total_length % record != 0)
          throw error(errc::shape_mismatch,
                      std::string(to_string(static_cast<message>(h.type))) + " of " + l.describe() + " on " +
                          self_.to_string() + ": " + std::to_string(h.total_length) + " payload bytes are not a "
                          "whole number of " + (pull ? std::string("8-byte keys")
                                                     : "keys with their rows (8 + " + std::to_string(dim) +
                                                           " x 4 bytes each)"));
        std::uint64_t n = h.total_length / record;
        if (n > opts_.serving.max_rows_per_request)
          throw error(errc::invalid_argument,
                      std::string(to_string(static_cast<message>(h.type))) + " of " + l.describe() + " on " +
                          self_.to_string() + ": " + std::to_string(n) + " keys exceed the cap of " +
                          std::to_string(opts_.serving.max_rows_per_request) + " per request (max_rows_per_request)");
        if (pull) {
          p.keys_in.resize(n);
        } else {
          p.sparse_keys = n;
          p.sparse_in.resize(h.total_length / sizeof(float));
        }
      } catch (const dsgd::error& e) {
        p.rejected.emplace(e.code(), e.what());
      }
    }
    if (p.rejected) {
      p.discard.resize(h.payload_length);
      return boost::asio::buffer(p.discard);
    }
    return transport::chunk_destination(pull ? boost::asio::buffer(p.keys_in) : boost::asio::buffer(p.sparse_in), h,
                                        ec);
  }

  void throw_if_rejected(peer& p) {
    if (!p.rejected) return;
    auto r = std::move(*p.rejected);
    p.rejected.reset();
    throw error(r.first, r.second);
  }

  // The keys (rows of the whole variable) as rows of the shard, each checked against them.
  std::vector<std::uint64_t> local_rows(const shard_layout& l, const std::uint64_t* keys, std::size_t n,
                                        const char* what) const {
    std::vector<std::uint64_t> rows(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t k = from_le(keys[i]);
      if (k < l.first_row || k - l.first_row >= l.rows)
        throw error(errc::invalid_argument,
                    std::string(what) + ": row " + std::to_string(k) + " (key " + std::to_string(i) + " of " +
                        std::to_string(n) + ") out of range for " + l.describe() + " on " + self_.to_string() +
                        " (holds rows " + std::to_string(l.first_row) + "-" +
                        std::to_string(l.first_row + l.rows - 1) + ")");
      rows[i] = k - l.first_row;
    }
    return rows;
  }

  void on_sparse_pull(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    throw_if_rejected(*p);
    const auto& l = sparse_layout(*p, h);
    park_or_answer(p, h, local_rows(l, p->keys_in.data(), p->keys_in.size(), "sparse_pull"));
  }

  void on_sparse_push(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    throw_if_rejected(*p);
    const auto& l = sparse_layout(*p, h);
    std::size_t n = p->sparse_keys;
    std::vector<std::uint64_t> keys(n);
    if (n) std::memcpy(keys.data(), p->sparse_in.data(), n * sizeof(std::uint64_t));
    auto rows = local_rows(l, keys.data(), n, "sparse_push");
    const float* grads = p->sparse_in.data() + n * (sizeof(std::uint64_t) / sizeof(float));
    auto& s = *shards_.at(key(h.variable, h.shard));
    auto outcome = s.push_rows(p->replica, h.step, rows, l.row_elements(), grads,
                               update::clock_type::now() + opts_.serving.step_timeout);
    ++pushes_received(key(h.variable, h.shard), p->replica);
    reply_push(p, h, outcome, s.step());
  }

  // Shuts down once every replica has finished (or the step timeout passed), so a chief that
  // is done first does not cut off workers still training on uneven data.
  void shutdown_now(const std::shared_ptr<peer>& p, const transport::frame_header& h) {
    log(self_.to_string() + ": shutdown requested by " + p->conn->peer_identity());
    shutting_down_ = true;
    listener_->close();
    // Close once the reply is written, so the chief sees it before the socket goes.
    send(p, reply_header(h, message::reply_ok), {}, [this](error_code) { close_all("cluster shut down"); });
  }

  std::string unfinished() const {
    std::string out;
    for (std::size_t r = 0; r < replicas_; ++r)
      if (!finished_.contains(r)) out += (out.empty() ? "replica " : ", replica ") + std::to_string(r);
    return out;
  }

  bool ready() const { return expected_shards_ > 0 && shards_.size() >= expected_shards_; }

  // Answers a wait_ready or pull now if allowed, else parks it until a push or the deadline.
  void park_or_answer(const std::shared_ptr<peer>& p, const transport::frame_header& h,
                      std::vector<std::uint64_t> rows = {}) {
    if (try_answer(p, h, rows)) return;
    auto timeout = static_cast<message>(h.type) == message::wait_ready ? opts_.serving.ready_timeout : opts_.serving.step_timeout;
    parked_.push_back({p, h, update::clock_type::now() + timeout, std::move(rows)});
  }

  bool try_answer(const std::shared_ptr<peer>& p, const transport::frame_header& h,
                  const std::vector<std::uint64_t>& rows) {
    if (static_cast<message>(h.type) == message::shutdown) {
      if (finished_.size() < replicas_) return false;
      shutdown_now(p, h);
      return true;
    }
    if (static_cast<message>(h.type) == message::wait_ready) {
      if (!ready()) return false;
      reply(p, h, message::reply_ok);
      return true;
    }
    auto it = shards_.find(key(h.variable, h.shard));
    if (it == shards_.end())
      throw error(errc::not_found, "pull of variable " + std::to_string(h.variable) + " shard " +
                                       std::to_string(h.shard) + ", which " + self_.to_string() + " does not hold");
    if (static_cast<message>(h.type) == message::sparse_pull) {
      if (!it->second->wait_reason(p->replica, h.step).empty()) return false;
      std::size_t dim = layouts_.at(key(h.variable, h.shard)).row_elements();
      auto rows_out = std::make_shared<std::vector<float>>(rows.size() * dim);
      auto step = it->second->try_pull_rows(p->replica, h.step, rows, dim, rows_out->data());
      if (!step) return false;
      auto header = reply_header(h, message::pull_reply);
      header.step = *step;
      send(p, header, boost::asio::buffer(*rows_out), [rows_out](error_code) {});
      return true;
    }
    auto header = reply_header(h, message::pull_reply);
    if constexpr (pins_values<shard_type>) {
      // Written straight from the shard's values; the pin keeps this version unchanged until
      // the write completes (a push landing meanwhile updates a copy).
      auto pinned = it->second->try_pin(p->replica, h.step);
      if (!pinned) return false;
      header.step = pinned->step;
      const auto& values = *pinned->values;
      send(p, header, boost::asio::buffer(values.data(), values.size() * sizeof(float)),
           [pin = std::move(pinned->values)](error_code) {});
    } else {
      auto snapshot = std::make_shared<std::vector<float>>(it->second->size());
      auto step = it->second->try_pull(p->replica, h.step, snapshot->data());
      if (!step) return false;
      header.step = *step;
      send(p, header, boost::asio::buffer(*snapshot), [snapshot](error_code) {});
    }
    return true;
  }

  void retry_parked() {
    for (auto it = parked_.begin(); it != parked_.end();) {
      bool done = false;
      try {
        done = !it->from->conn->is_open() || try_answer(it->from, it->request, it->rows);
      } catch (const dsgd::error& e) {
        reply_error(it->from, it->request, e.code(), e.what());
        done = true;
      }
      it = done ? parked_.erase(it) : std::next(it);
    }
  }

  // Every 50 ms: answer parked requests whose deadline passed with the reason they waited.
  void arm_sweep() {
    sweep_.expires_after(std::chrono::milliseconds(50));
    sweep_.async_wait([this](error_code ec) {
      if (ec || closed_) return;
      auto now = update::clock_type::now();
      for (auto it = parked_.begin(); it != parked_.end();) {
        if (it->deadline > now) { ++it; continue; }
        if (static_cast<message>(it->request.type) == message::shutdown) {
          log(self_.to_string() + ": shutting down without " + unfinished() + " having finished");
          auto from = it->from;
          auto request = it->request;
          parked_.erase(it);
          shutdown_now(from, request);
          return;
        }
        reply_error(it->from, it->request, make_error_code(errc::timed_out), why_waiting(*it));
        it = parked_.erase(it);
      }
      if (chief_gone_too_long(now)) return;
      arm_sweep();
    });
  }

  // Called every sweep: true (and the ps stopped with a named error) once the chief that
  // registered has had no open connection for options::chief_timeout.
  bool chief_gone_too_long(update::clock_type::time_point now) {
    if (!chief_seen_ || opts_.serving.chief_timeout.count() == 0) return false;
    bool connected = std::any_of(peers_.begin(), peers_.end(), [](const auto& p) { return p->chief && p->conn->is_open(); });
    if (connected) {
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

  std::string why_waiting(const parked_request& r) const {
    if (static_cast<message>(r.request.type) == message::wait_ready)
      return self_.to_string() + ": variables not initialised before the deadline (" +
             std::to_string(shards_.size()) + " of " +
             (expected_shards_ ? std::to_string(expected_shards_) : std::string("?")) +
             " shards created; is the chief running?)";
    auto it = shards_.find(key(r.request.variable, r.request.shard));
    return self_.to_string() + ": " + (it == shards_.end() ? std::string("no such shard")
                                                           : it->second->wait_reason(r.from->replica, r.request.step));
  }

  static transport::frame_header reply_header(const transport::frame_header& request, message type) {
    transport::frame_header h;
    h.type = static_cast<std::uint16_t>(type);
    h.request_id = request.request_id;
    h.variable = request.variable;
    h.shard = request.shard;
    h.step = request.step;
    return h;
  }

  void reply(const std::shared_ptr<peer>& p, const transport::frame_header& request, message type) {
    send(p, reply_header(request, type), {}, [](error_code) {});
  }
  void reply(const std::shared_ptr<peer>& p, const transport::frame_header& request, message type,
             std::uint64_t step) {
    auto h = reply_header(request, type);
    h.step = step;
    send(p, h, {}, [](error_code) {});
  }

  void reply_error(const std::shared_ptr<peer>& p, const transport::frame_header& request, error_code ec,
                   const std::string& what) {
    auto body = std::make_shared<std::string>(encode_control(error_reply{ec.value(), what}));
    auto h = reply_header(request, message::reply_error);
    h.flags = transport::frame_flags::control;
    send(p, h, boost::asio::buffer(*body), [body](error_code) {});
  }

  template <class Handler>
  void send(const std::shared_ptr<peer>& p, const transport::frame_header& h, boost::asio::const_buffer payload,
            Handler&& done) {
    if (!p->conn->is_open()) return;
    p->conn->async_send(h, payload, std::forward<Handler>(done));
  }

  // Closes @p p's connection. With @p departs, a registered worker that has not finished and
  // has no other connection counts as gone for the rule (tracks_departures) until it registers
  // again.
  void drop(const std::shared_ptr<peer>& p, error_code ec, bool departs = true) {
    if (!closed_ && !shutting_down_ && ec != boost::asio::error::operation_aborted) {
      std::string who = p->conn->peer_identity().empty() ? "a peer" : p->conn->peer_identity();
      bool clean = ec == boost::asio::error::eof && finished_.contains(p->replica);
      if (!clean) log(self_.to_string() + ": lost " + who + " (" + ec.message() + ")");
    }
    p->conn->close();
    std::erase(peers_, p);
    std::erase_if(parked_, [&](const parked_request& r) { return r.from == p; });
    if constexpr (tracks_departures<shard_type>) {
      const bool still_here = std::any_of(peers_.begin(), peers_.end(), [&](const auto& q) {
        return q->registered && q->replica == p->replica && q->conn->is_open();
      });
      if (departs && p->registered && !closed_ && !finished_.contains(p->replica) && !still_here) {
        for (auto& [k, s] : shards_) s->depart(p->replica);
        retry_parked();
      }
    }
  }

  void close_all(const std::string& why) {
    if (!closed_ && shutting_down_) log(self_.to_string() + ": " + why);
    if (closed_) return;
    closed_ = true;
    listener_->close();
    sweep_.cancel();
    parked_.clear();
    for (auto& p : peers_) p->conn->close();
    peers_.clear();
    ioc_.stop();
  }

  cluster::cluster_spec spec_;
  cluster::task_id self_;
  bool chief_seen_ = false;  // a chief has registered
  std::optional<update::clock_type::time_point> chief_gone_since_;
  std::optional<dsgd::error> failure_;  // why join() fails
  std::uint64_t generation_ = 0;     // restores so far
  std::uint64_t restored_step_ = 0;  // the checkpoint step of the last restore
  options opts_;
  D device_;
  std::size_t replicas_;
  boost::asio::io_context ioc_;
  std::shared_ptr<transport::tcp_listener> listener_;
  boost::asio::steady_timer sweep_;
  std::vector<std::shared_ptr<peer>> peers_;
  std::list<parked_request> parked_;
  std::map<std::uint64_t, std::unique_ptr<shard_type>> shards_;
  std::map<std::uint64_t, shard_layout> layouts_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> received_;  // shard -> pushes per replica
  std::set<std::size_t> finished_;
  std::string placement_;
  std::uint64_t fingerprint_ = 0;
  std::size_t expected_shards_ = 0;
  bool shutting_down_ = false;
  bool closed_ = false;
};

}  // namespace dsgd::server
