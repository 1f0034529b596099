// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::ps_client: a worker's connections to every ps task, and the blocking
/// register / initialise / pull / push calls a training loop makes.
#pragma once

#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/server/client_options.hpp>
#include <dsgd/server/protocol.hpp>
#include <dsgd/transport/asio_tcp.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace dsgd::server {

/// The answer to one request.
struct reply {
  message type = message::reply_ok;
  std::uint64_t step = 0;
};

/// A worker's side of the cluster: one authenticated connection per ps task. Its I/O runs on
/// the thread that calls it, inside the calls below, which block it, each with a deadline: a
/// reply wakes the waiting caller itself, with no thread in between (on two cores a hand-off
/// between threads costs about as much as a small round trip). Between calls nothing is read;
/// what was sent is in the socket or the shared ring already. One thread at a time may use a
/// ps_client.
class ps_client {
 public:
  /// @param me this task ("worker:1", "chief:0"); it must be a task of @p spec.
  ps_client(cluster::cluster_spec spec, cluster::task_id me, client_options opts)
      : spec_(std::move(spec)), me_(std::move(me)), opts_(std::move(opts)), work_(ioc_.get_executor()) {
    opts_.connection.log = dsgd::detail::or_stderr(std::move(opts_.connection.log));
    validate(opts_);
    if (!spec_.contains(me_))
      throw error(errc::bad_cluster_spec, "task " + me_.to_string() + " is not in the cluster spec");
    if (!spec_.has_job("ps") || spec_.num_tasks("ps") == 0)
      throw error(errc::bad_cluster_spec, "the cluster spec has no ps task");
    conns_.resize(spec_.num_tasks("ps"));
    pending_.resize(conns_.size());
  }

  ~ps_client() {
    for (auto& c : conns_)
      if (c) c->close();
    work_.reset();
  }

  ps_client(const ps_client&) = delete;
  ps_client& operator=(const ps_client&) = delete;

  /// @returns the number of ps tasks.
  std::size_t ps_tasks() const noexcept { return conns_.size(); }

  /// Connects to every ps task not connected now (all of them at first; after a failure, those
  /// whose connection broke), retrying with exponential backoff.
  /// @throws dsgd::error(errc::peer_unreachable) after startup_timeout, naming every ps task
  ///         (and address) not reached; errc::handshake_failed when a ps rejects the token
  void connect() {
    auto deadline = std::chrono::steady_clock::now() + opts_.requests.startup_timeout;
    std::vector<std::size_t> missing = disconnected();
    std::vector<int> handshake_failures(conns_.size(), 0);
    auto backoff = opts_.requests.initial_backoff;
    std::string last_error;
    while (true) {
      std::vector<std::size_t> still;
      for (auto i : missing) {
        auto ep = endpoint(i);
        std::promise<std::pair<error_code, std::shared_ptr<transport::tcp_connection>>> done;
        auto result = done.get_future();
        transport::async_connect(ioc_.get_executor(), ep, tcp(),
                                 [&done](error_code ec, std::shared_ptr<transport::tcp_connection> c) {
                                   done.set_value({ec, std::move(c)});
                                 });
        run_until_ready(result, std::chrono::steady_clock::time_point::max());  // bounded by handshake_timeout
        auto [ec, conn] = result.get();
        if (!ec) {
          conns_[i] = conn;
          receive(i);
          continue;
        }
        // A ps that rejects our token closes the handshake; so does one dying or just
        // restarting while we connect. Three in a row is a rejection; fewer is retried.
        if (ec == errc::handshake_failed && ++handshake_failures[i] >= 3)
          throw error(ec, me_.to_string() + ": ps:" + std::to_string(i) + " at " +
                              spec_.address("ps", int(i)).to_string() + " rejected the handshake " +
                              std::to_string(handshake_failures[i]) + " times: " + ec.message());
        last_error = ec.message();
        still.push_back(i);
      }
      missing = std::move(still);
      if (missing.empty()) return;
      if (std::chrono::steady_clock::now() + backoff > deadline) {
        std::string names;
        for (auto i : missing)
          names += (names.empty() ? "" : ", ") + ("ps:" + std::to_string(i)) + " (" +
                   spec_.address("ps", int(i)).to_string() + ")";
        throw error(errc::peer_unreachable, me_.to_string() + ": could not reach " + names + " within " +
                                                std::to_string(opts_.requests.startup_timeout.count()) +
                                                " ms (last error: " + last_error + ")");
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, opts_.requests.max_backoff);
    }
  }

  /// Tells every ps task who this worker is and the placement it computed; a ps holding a
  /// different placement answers with errc::placement_mismatch naming both. Each ps answers
  /// with how many pushes of this replica it has received per shard (pushes_received()).
  void register_worker(const placement::plan& plan, std::size_t replica, bool chief) {
    std::vector<request> batch;
    std::vector<std::string> bodies(conns_.size());
    std::vector<std::vector<std::uint64_t>> counts(conns_.size());
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      auto mine = layouts(plan, i);
      counts[i].resize(mine.size());
      bodies[i] = encode_control(register_request{me_.to_string(), static_cast<std::uint32_t>(replica), chief,
                                                  plan.fingerprint(), plan.describe(),
                                                  static_cast<std::uint32_t>(mine.size()), std::move(mine)});
      request r{i, header(message::register_worker, 0, 0, 0), boost::asio::buffer(bodies[i]),
                boost::asio::buffer(counts[i])};
      r.h.flags = transport::frame_flags::control;
      batch.push_back(r);
    }
    run(batch);
    // The counts come in the order of each ps task's layouts: plan order, filtered by task.
    received_.assign(plan.shards().size(), 0);
    std::vector<std::size_t> next(conns_.size(), 0);
    for (std::size_t s = 0; s < plan.shards().size(); ++s) {
      const auto i = plan.shards()[s].ps_task;
      received_[s] = transport::detail::load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(&counts[i][next[i]++]));
    }
  }

  /// @returns how many pushes of this replica every shard had received when it last registered:
  /// pushes [0, pushes_received()) arrived exactly once, even those in flight when a previous
  /// process of this replica died, and none later. A restarted or reconnected worker resumes its
  /// data there. A push that reached only some shards (the worker died between them) is
  /// completed by the next push() made with `skip_received`, which sends it to the shards still
  /// missing it and skips those that have it.
  std::uint64_t pushes_received() const noexcept {
    return received_.empty() ? 0 : *std::min_element(received_.begin(), received_.end());
  }

  /// Chief only: creates every shard on its ps task with the initial values of its variable.
  /// @param values one host span per variable, in creation order
  /// @param step the step the values belong to (a restored checkpoint's; 0 for a fresh start)
  void initialize(const placement::plan& plan, std::span<const std::span<const float>> values,
                  std::uint64_t step = 0) {
    std::vector<request> batch;
    for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      batch.push_back({s.ps_task, header(message::init_shard, s.variable, index, step),
                       span_buffer(values[s.variable].subspan(s.offset, s.elements)), {}});
    });
    run(batch);
  }

  /// Waits until every ps task holds all its shards (the chief has initialised them).
  void wait_ready() {
    std::vector<request> batch;
    for (std::size_t i = 0; i < conns_.size(); ++i) batch.push_back({i, header(message::wait_ready, 0, 0, 0), {}, {}});
    run(batch);
  }

  /// Reads every variable at @p step (sync: the global step; SSP: this worker's clock) straight
  /// into @p dest, one host span per variable; an empty span skips its variable (one read by
  /// rows with pull_rows()). @returns the smallest step the shards reported.
  std::uint64_t pull(const placement::plan& plan, std::uint64_t step, std::span<const std::span<float>> dest) {
    auto f = start_pull(plan, step, dest);
    return wait(f);
  }

  /// Sends the gradient of every variable, computed at @p step, one host span per variable; an
  /// empty span skips its variable (one updated by rows with push_rows()).
  /// @returns how many shards dropped it (stale or duplicate).
  /// With @p skip_received (rules that apply each push on its own: async, SSP), shards that
  /// received one push more than the others (the last push of a process that died while sending
  /// it) are skipped, so every shard counts each of this replica's pushes exactly once; sync
  /// pushes are told apart by their step instead and go to every shard.
  std::size_t push(const placement::plan& plan, std::uint64_t step, std::span<const std::span<const float>> grads,
                   bool skip_received = false) {
    auto f = start_push(plan, step, grads, skip_received);
    return finish_push(f);
  }

 private:
  // What a request's reply or failure hands the waiting call: plain data, made into a
  // dsgd::error by the call that collects it.
  struct answer {
    reply r;
    error_code ec;
    std::string what;
  };
  static answer failed(const dsgd::error& e) { return {{}, e.code(), e.what()}; }
  // A request sent, and its answer to come.
  struct issued {
    std::size_t ps = 0;
    message type{};
    std::future<answer> future;
    reply result;  // once collected
  };

 public:
  /// A pull or a push whose requests go out in parts and whose answers are collected in parts,
  /// so that a worker overlaps them with its compute (trainer::overlap): see start_pull() and
  /// start_push(). Every answer is collected before the operation ends, by wait() or
  /// finish_push(), also when one of them fails, so that no late reply writes into a buffer the
  /// caller has moved on from. Single-use; move-only.
  class in_flight {
   public:
    in_flight() = default;
    in_flight(in_flight&&) noexcept = default;
    in_flight& operator=(in_flight&&) noexcept = default;
    /// @returns whether requests are sent and not all of their answers collected.
    bool pending() const noexcept {
      return std::any_of(parts_.begin(), parts_.end(), [](const part& p) { return !p.collected; });
    }
    /// @returns whether a push has sent variable @p v.
    bool sent(std::size_t v) const noexcept { return v < sent_.size() && sent_[v]; }

   private:
    friend class ps_client;
    struct part {
      std::size_t variable = 0;
      issued call;
      bool collected = false;
    };
    const placement::plan* plan_ = nullptr;
    std::vector<part> parts_;
    std::chrono::steady_clock::time_point deadline_;
    std::uint64_t step_ = 0;                    // pull: the step asked; then the lowest answered
    std::uint64_t lowest_answer_ = ~std::uint64_t{0};
    std::optional<dsgd::error> error_;          // the first failure
    std::vector<std::span<const float>> grads_;  // push: the gradients, one span per variable
    std::vector<bool> sent_;                     // push: variables sent
    std::vector<std::size_t> shards_;            // push: every shard it goes to (plan index)
    std::uint64_t lowest_received_ = 0;          // push: see send_push()
    bool skip_received_ = false;
    std::size_t dropped_ = 0;
  };

  /// pull() in two halves: sends every request now, in plan order (so the first variables'
  /// values arrive first); wait(f, v) then waits for variable @p v's values, wait(f) for all.
  /// @p plan and @p dest must stay valid until the values are waited for.
  in_flight start_pull(const placement::plan& plan, std::uint64_t step, std::span<const std::span<float>> dest) {
    in_flight f = open(&plan, step);
    for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      if (dest[s.variable].empty() && s.elements != 0) return;
      add(f, {s.ps_task, header(message::pull, s.variable, index, step), {},
              span_buffer(dest[s.variable].subspan(s.offset, s.elements))});
    });
    flush();
    return f;
  }

  /// Starts writing every request queued so far (push_variable()'s, say) without waiting for
  /// anything; start_pull() and every wait do this themselves.
  void flush() { ioc_.poll(); }

  /// Waits until variable @p v's values (every shard of it) have arrived.
  /// @throws dsgd::error as pull() does, once every other answer of @p f has been collected too
  void wait(in_flight& f, std::size_t v) {
    for (auto& p : f.parts_)
      if (p.variable == v) collect(f, p);
    if (f.error_) fail(f);
  }

  /// Waits for every answer of @p f. @returns the smallest step the shards reported (a pull's;
  /// the step asked when nothing was pulled).
  std::uint64_t wait(in_flight& f) {
    for (auto& p : f.parts_) collect(f, p);
    if (f.error_) fail(f);
    return f.parts_.empty() ? f.step_ : f.lowest_answer_;
  }

  /// push() in parts: opens a push of @p grads (one host span per variable; an empty span skips
  /// its variable) computed at @p step, and sends nothing yet; push_variable() sends a variable
  /// as soon as its gradient is final, finish_push() sends the rest and waits for the answers.
  /// @p plan and the spans must stay valid, and the spans hold the final gradients once sent,
  /// until finish_push().
  in_flight start_push(const placement::plan& plan, std::uint64_t step, std::span<const std::span<const float>> grads,
                       bool skip_received = false) {
    track(plan);
    in_flight f = open(&plan, step);
    f.grads_.assign(grads.begin(), grads.end());
    f.sent_.assign(grads.size(), false);
    f.skip_received_ = skip_received;
    std::size_t at = 0;
    for_each_shard(plan, [&](const placement::shard& s, std::uint32_t) {
      const std::size_t plan_index = at++;
      if (!grads[s.variable].empty() || s.elements == 0) f.shards_.push_back(plan_index);
    });
    f.lowest_received_ = lowest_received(f.shards_);
    return f;
  }

  /// Sends variable @p v's gradient (every shard of it) now; a second call, or one for a skipped
  /// variable, sends nothing.
  void push_variable(in_flight& f, std::size_t v) {
    if (v >= f.sent_.size() || f.sent_[v]) return;
    f.sent_[v] = true;
    std::size_t at = 0;
    for_each_shard(*f.plan_, [&](const placement::shard& s, std::uint32_t index) {
      const std::size_t plan_index = at++;
      if (s.variable != v || (f.grads_[v].empty() && s.elements != 0)) return;
      if (f.skip_received_ && received_[plan_index] != f.lowest_received_) return;  // it has this push
      add(f, {s.ps_task, header(message::push, v, index, f.step_),
              span_buffer(f.grads_[v].subspan(s.offset, s.elements)), {}});
    });
  }

  /// Sends every variable not sent yet, waits for every answer and counts the push on each
  /// shard. @returns how many shards dropped it (stale or duplicate).
  /// @throws dsgd::error as push() does
  std::size_t finish_push(in_flight& f) {
    for (std::size_t v = 0; v < f.sent_.size(); ++v) push_variable(f, v);
    wait(f);
    count_received(f.shards_, f.skip_received_, f.lowest_received_);
    return f.dropped_;
  }

  /// Reads rows @p keys of variable @p variable (indices along dimension 0 of the whole
  /// variable, which must have rank 2 or more; any order, duplicates allowed) into @p out:
  /// keys.size() x dim floats, row i of @p out being row keys[i], dim the product of the other
  /// extents. Waits as pull() does for @p step on every shard of the variable: each gets its
  /// own keys, unchanged (none at all for a shard holding none of the rows, which still makes
  /// the step a barrier there, as for a dense pull), and its rows come back in key order
  /// straight into @p out when that shard's keys are one run of @p keys, through a staging
  /// copy otherwise. @returns the smallest step the shards reported
  /// @throws dsgd::error errc::invalid_argument for a variable the plan lacks,
  ///         errc::shape_mismatch when out.size() != keys.size() x dim, and what a ps answers:
  ///         errc::invalid_argument for a row out of range or a variable of rank 1 (naming
  ///         them), errc::not_found for a shard it does not hold. @p out is then unspecified.
  std::uint64_t pull_rows(const placement::plan& plan, std::size_t variable, std::span<const std::uint64_t> keys,
                          std::span<float> out, std::uint64_t step) {
    auto groups = route(plan, variable, keys, out.size(), "pull_rows");
    std::size_t dim = row_width(plan, variable);
    std::vector<request> batch;
    for (auto& g : groups) {
      std::size_t m = g.at.size();
      boost::asio::mutable_buffer into;
      if (m == 0) {
        into = {};
      } else if (g.direct()) {
        into = span_buffer(out.subspan(g.at.front() * dim, m * dim));
      } else {
        g.rows.resize(m * dim);
        into = span_buffer(std::span<float>(g.rows));
      }
      batch.push_back({g.ps, header(message::sparse_pull, variable, g.index, step), key_buffer(g, keys), into});
    }
    auto replies = run(batch);
    for (auto& g : groups)
      if (!g.at.empty() && !g.direct())
        for (std::size_t j = 0; j < g.at.size(); ++j)
          std::copy_n(g.rows.begin() + j * dim, dim, out.begin() + g.at[j] * dim);
    std::uint64_t lowest = ~std::uint64_t{0};
    for (const auto& r : replies) lowest = std::min(lowest, r.step);
    return lowest;
  }

  /// Sends the gradient rows @p grads (keys.size() x dim floats, row i for row keys[i] of
  /// variable @p variable), computed at @p step, as one sparse push per shard of the variable:
  /// keys and rows in one message, sent from @p keys and @p grads without a copy when that
  /// shard's keys are one run of @p keys. Every shard gets a push, an empty one when none of
  /// its rows is given, so that each counts this worker's gradient for the step (sync) or its
  /// clock (SSP). Duplicate keys add up. @returns how many shards dropped it.
  /// @throws dsgd::error as pull_rows(), and errc::invalid_argument from a ps whose update rule
  ///         needs a sparse apply the optimizer lacks (async or SSP with adam, adagrad)
  std::size_t push_rows(const placement::plan& plan, std::size_t variable, std::span<const std::uint64_t> keys,
                        std::span<const float> grads, std::uint64_t step, bool skip_received = false) {
    auto groups = route(plan, variable, keys, grads.size(), "push_rows");
    track(plan);
    std::size_t dim = row_width(plan, variable);
    std::vector<request> batch;
    std::vector<std::size_t> shards;  // plan index of each request's shard
    for (auto& g : groups) {
      std::size_t m = g.at.size();
      boost::asio::const_buffer rows;
      if (m == 0 || g.direct()) {
        rows = span_buffer(m == 0 ? std::span<const float>() : grads.subspan(g.at.front() * dim, m * dim));
      } else {
        g.rows.resize(m * dim);
        for (std::size_t j = 0; j < m; ++j)
          std::copy_n(grads.begin() + g.at[j] * dim, dim, g.rows.begin() + j * dim);
        rows = span_buffer(std::span<const float>(g.rows));
      }
      request r{g.ps, header(message::sparse_push, variable, g.index, step), key_buffer(g, keys), {}};
      r.payload_rows = rows;
      batch.push_back(r);
      shards.push_back(g.plan_index);
    }
    return count_dropped(send_push(batch, shards, skip_received));
  }

  /// Chief only: every ps task writes its part of checkpoint @p step (values, optimizer slots
  /// and counters of the shards it holds) into @p dir, which all of them must reach; then
  /// checkpoint::saver::commit() makes it a checkpoint.
  void save(const std::filesystem::path& dir, std::uint64_t step) { broadcast(message::save, step, dir); }

  /// Chief only: every ps task replaces its shards with checkpoint @p step in @p dir (read by
  /// name and range, so the checkpoint may come from another number of ps tasks). This
  /// re-creates the session: other workers' requests fail with errc::aborted until they
  /// register again.
  /// @throws dsgd::error what a ps answers: errc::checkpoint_corrupt naming a damaged file,
  ///         errc::not_found or errc::shape_mismatch naming a variable
  void restore(const std::filesystem::path& dir, std::uint64_t step) { broadcast(message::restore, step, dir); }

  /// Tells every ps task this worker has no more data (uneven data ends cleanly).
  void finish() { broadcast(message::finish); }

  /// Chief only: shuts every ps task down; their join() returns.
  void shutdown_cluster() { broadcast(message::shutdown); }

 private:
  struct request {
    std::size_t ps = 0;
    transport::frame_header h;
    boost::asio::const_buffer payload;
    boost::asio::mutable_buffer reply_into;  // where a pull_reply's payload goes
    boost::asio::const_buffer payload_rows;  // a sparse push's rows, after its keys
  };
  // The keys of a sparse request that go to one shard, and where they came from.
  struct row_group {
    std::size_t ps = 0;
    std::uint32_t index = 0;         // of the shard within its variable
    std::size_t plan_index = 0;      // of the shard in plan.shards()
    std::uint64_t first_row = 0;     // rows [first_row, first_row + rows) of the variable
    std::vector<std::size_t> at;     // positions in the caller's keys, increasing
    std::vector<std::uint64_t> keys; // staged keys, when they are not sent from the caller's
    std::vector<float> rows;         // staged rows, likewise
    // The keys are one run of the caller's: sent from, and received into, its buffers.
    bool direct() const noexcept { return !at.empty() && at.back() - at.front() + 1 == at.size(); }
  };
  struct pending_request {
    boost::asio::mutable_buffer reply_into;
    std::vector<std::byte> control;
    std::promise<answer> done;
  };

  // The connection settings as given, with this task's identity; only ps tasks are accepted
  // as peers, and a reply's payload may take as long as its request (requests.request_timeout).
  transport::tcp_options tcp() const {
    transport::tcp_options t = opts_.connection;
    t.identity = me_.to_string();
    t.accept_peer = [](std::string_view who) { return who.starts_with("ps:"); };
    t.frame_timeout = opts_.requests.request_timeout;
    return t;
  }

  boost::asio::ip::tcp::endpoint endpoint(std::size_t ps) const {
    return cluster::endpoint_of(spec_.address("ps", int(ps)), "ps:" + std::to_string(ps));
  }

  static boost::asio::const_buffer span_buffer(std::span<const float> s) {
    return boost::asio::buffer(s.data(), s.size_bytes());
  }
  static boost::asio::mutable_buffer span_buffer(std::span<float> s) {
    return boost::asio::buffer(s.data(), s.size_bytes());
  }

  static transport::frame_header header(message type, std::size_t variable, std::uint32_t shard, std::uint64_t step) {
    transport::frame_header h;
    h.type = static_cast<std::uint16_t>(type);
    h.variable = static_cast<std::uint32_t>(variable);
    h.shard = shard;
    h.step = step;
    return h;
  }

  // Floats per row of dimension 0 of variable v (1 for a scalar or a vector).
  static std::size_t row_width(const placement::plan& plan, std::size_t v) {
    const auto& shape = plan.variables()[v].shape;
    std::size_t rows = shape.rank() == 0 ? 1 : shape.extents()[0];
    return rows == 0 ? 0 : shape.elements() / rows;
  }

  // What ps task `ps` must know of its shards to serve sparse requests.
  static std::vector<shard_layout> layouts(const placement::plan& plan, std::size_t ps) {
    std::vector<shard_layout> out;
    for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      if (s.ps_task != ps) return;
      const auto& v = plan.variables()[s.variable];
      std::size_t dim = row_width(plan, s.variable);
      shard_layout l;
      l.variable = static_cast<std::uint32_t>(s.variable);
      l.shard = index;
      l.name = v.name;
      l.extents.assign(v.shape.extents().begin(), v.shape.extents().end());
      l.first_row = dim == 0 ? 0 : s.offset / dim;
      l.rows = dim == 0 ? 0 : s.elements / dim;
      out.push_back(std::move(l));
    });
    return out;
  }

  // Splits @p keys by the shard of @p variable holding each row. A key past the last row goes
  // to the shard holding the last rows, whose ps answers with an error naming it: the ps is
  // the one place where keys are checked.
  static std::vector<row_group> route(const placement::plan& plan, std::size_t variable,
                                      std::span<const std::uint64_t> keys, std::size_t floats, const char* what) {
    if (variable >= plan.variables().size())
      throw error(errc::invalid_argument, std::string(what) + ": variable " + std::to_string(variable) +
                                              " is not in the placement (" +
                                              std::to_string(plan.variables().size()) + " variables)");
    const auto& v = plan.variables()[variable];
    std::size_t dim = row_width(plan, variable);
    if (floats != keys.size() * dim)
      throw error(errc::shape_mismatch, std::string(what) + " of " + v.name + v.shape.to_string() + ": " +
                                            std::to_string(keys.size()) + " keys need " +
                                            std::to_string(keys.size() * dim) + " floats (rows of " +
                                            std::to_string(dim) + "), the buffer holds " + std::to_string(floats));
    std::vector<row_group> groups;
    std::size_t at = 0;
    for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      const std::size_t plan_index = at++;
      if (s.variable != variable) return;
      row_group g;
      g.ps = s.ps_task;
      g.index = index;
      g.plan_index = plan_index;
      g.first_row = dim == 0 ? 0 : s.offset / dim;
      groups.push_back(std::move(g));
    });
    std::vector<std::size_t> by_row(groups.size());  // group indices in first_row order
    for (std::size_t i = 0; i < by_row.size(); ++i) by_row[i] = i;
    std::sort(by_row.begin(), by_row.end(),
              [&](std::size_t a, std::size_t b) { return groups[a].first_row < groups[b].first_row; });
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto it = std::upper_bound(by_row.begin(), by_row.end(), keys[i],
                                 [&](std::uint64_t k, std::size_t g) { return k < groups[g].first_row; });
      groups[it == by_row.begin() ? by_row.front() : *std::prev(it)].at.push_back(i);
    }
    return groups;
  }

  // The keys of group @p g as little-endian bytes: a view of the caller's when they are one
  // run of them (and the host is little-endian), else staged in g.keys.
  static boost::asio::const_buffer key_buffer(row_group& g, std::span<const std::uint64_t> keys) {
    if (g.at.empty()) return {};
    if (g.direct() && std::endian::native == std::endian::little)
      return boost::asio::buffer(keys.data() + g.at.front(), g.at.size() * sizeof(std::uint64_t));
    g.keys.resize(g.at.size());
    for (std::size_t j = 0; j < g.at.size(); ++j) {
      std::uint64_t k = keys[g.at[j]];
      transport::detail::store_le(reinterpret_cast<std::byte*>(&g.keys[j]), k);
    }
    return boost::asio::buffer(g.keys.data(), g.keys.size() * sizeof(std::uint64_t));
  }

  // Calls f(shard, index of the shard within its variable) for every shard of the plan.
  template <class F>
  static void for_each_shard(const placement::plan& plan, F&& f) {
    std::vector<std::uint32_t> next(plan.variables().size(), 0);
    for (const auto& s : plan.shards()) f(s, next[s.variable]++);
  }

  void broadcast(message type, std::uint64_t step = 0, const std::filesystem::path& dir = {}) {
    const std::string body = dir.empty() ? std::string() : encode_control(checkpoint_request{dir.string()});
    std::vector<request> batch;
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      request r{i, header(type, 0, 0, step), boost::asio::buffer(body), {}};
      if (!body.empty()) r.h.flags = transport::frame_flags::control;
      batch.push_back(r);
    }
    run(batch);
  }

  // Sends a push (one request per shard, shards[k] the plan index of batch[k]'s) and counts it
  // on each shard once answered. With @p skip_received, only to the shards that lack it: one
  // whose count of received pushes is ahead of the others' already has it (it arrived there
  // before the previous process of this replica died).
  std::vector<reply> send_push(std::vector<request>& batch, const std::vector<std::size_t>& shards,
                               bool skip_received) {
    const std::uint64_t lowest = lowest_received(shards);
    std::vector<request> missing;
    for (std::size_t k = 0; k < batch.size(); ++k)
      if (!skip_received || received_[shards[k]] == lowest) missing.push_back(batch[k]);
    auto replies = run(missing);
    count_received(shards, skip_received, lowest);
    return replies;
  }
  std::uint64_t lowest_received(const std::vector<std::size_t>& shards) const {
    std::uint64_t lowest = ~std::uint64_t{0};
    for (auto s : shards) lowest = std::min(lowest, received_[s]);
    return lowest;
  }
  void count_received(const std::vector<std::size_t>& shards, bool skip_received, std::uint64_t lowest) {
    for (auto s : shards) received_[s] = skip_received ? lowest + 1 : received_[s] + 1;
  }

  static std::size_t count_dropped(const std::vector<reply>& replies) {
    return static_cast<std::size_t>(std::count_if(replies.begin(), replies.end(), [](const reply& r) {
      return r.type == message::push_dropped;
    }));
  }

  // The ps tasks without an open connection.
  std::vector<std::size_t> disconnected() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < conns_.size(); ++i)
      if (!conns_[i] || !conns_[i]->is_open()) out.push_back(i);
    return out;
  }

  // Runs this client's I/O on the calling thread until @p f is ready; false once @p deadline
  // has passed without it.
  template <class T>
  bool run_until_ready(std::future<T>& f, std::chrono::steady_clock::time_point deadline) {
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      if (ioc_.stopped()) ioc_.restart();
      if (ioc_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    }
    return true;
  }

  // Sends every request (pipelined on each connection) and waits for all the answers.
  std::vector<reply> run(std::vector<request>& batch) {
    in_flight f = open(nullptr, 0);
    for (const auto& r : batch) add(f, r);
    std::vector<reply> out;
    for (auto& p : f.parts_) {
      collect(f, p);
      if (!f.error_) out.push_back(p.call.result);
    }
    if (f.error_) throw *f.error_;
    return out;
  }

  // An operation on @p plan (none for a control message) at @p step, its deadline from now.
  in_flight open(const placement::plan* plan, std::uint64_t step) {
    in_flight f;
    f.plan_ = plan;
    f.step_ = step;
    f.deadline_ = std::chrono::steady_clock::now() + opts_.requests.request_timeout;
    return f;
  }
  // Pushes are counted per shard of @p plan (a fresh count for a plan of another size).
  void track(const placement::plan& plan) {
    if (received_.size() != plan.shards().size()) received_.assign(plan.shards().size(), 0);
  }

  // Sends @p r as a part of @p f.
  void add(in_flight& f, const request& r) { f.parts_.push_back({r.h.variable, issue(r), false}); }

  // Queues @p r on its connection (pipelined there; written when this client next runs its
  // I/O) and returns its answer to come, which the reply, or the failure, fulfils.
  issued issue(const request& r) {
    auto p = std::make_shared<pending_request>();
    p->reply_into = r.reply_into;
    issued out{r.ps, static_cast<message>(r.h.type), p->done.get_future(), {}};
    auto& conn = conns_[r.ps];
    if (!conn || !conn->is_open()) {
      p->done.set_value(failed(lost(r.ps)));
      return out;
    }
    auto h = r.h;
    h.request_id = ++next_id_;
    pending_[r.ps][h.request_id] = p;
    std::array<boost::asio::const_buffer, 2> payload{r.payload, r.payload_rows};
    // A send the transport refuses (a cap, a full queue) fails its request at once; a broken
    // connection also fails every pending request through the receive loop.
    conn->async_send(h, payload, [this, ps = r.ps, id = h.request_id](error_code ec) {
      if (!ec) return;
      auto node = pending_[ps].extract(id);
      if (!node.empty())
        node.mapped()->done.set_value(failed(
            error(ec, me_.to_string() + ": sending to ps:" + std::to_string(ps) + " failed: " + ec.message())));
    });
    return out;
  }

  // Waits for part @p p's answer, by f's deadline; keeps the first failure in f. A part that
  // times out abandons every connection (no late reply may be written) and throws at once.
  void collect(in_flight& f, typename in_flight::part& p) {
    if (p.collected) return;
    auto& s = p.call;
    if (!run_until_ready(s.future, f.deadline_)) {
      abandon();
      for (auto& q : f.parts_) q.collected = true;  // nothing of f lands any more
      throw error(errc::timed_out, me_.to_string() + ": no answer from ps:" + std::to_string(s.ps) + " to " +
                                       to_string(s.type) + " within " +
                                       std::to_string(opts_.requests.request_timeout.count()) + " ms");
    }
    p.collected = true;
    auto a = s.future.get();
    if (a.ec) {
      if (!f.error_) f.error_.emplace(a.ec, a.what);
      return;
    }
    s.result = a.r;
    f.lowest_answer_ = std::min(f.lowest_answer_, a.r.step);
    if (a.r.type == message::push_dropped) ++f.dropped_;
  }

  // A part of @p f failed: collects the rest, so that no reply lands later, then throws.
  [[noreturn]] void fail(in_flight& f) {
    for (auto& p : f.parts_) {
      try {
        collect(f, p);
      } catch (const dsgd::error&) {  // timed out: the connections are closed, nothing lands
        break;
      }
    }
    throw *f.error_;
  }

  dsgd::error lost(std::size_t ps) const {
    auto c = conns_[ps];
    return error(errc::peer_lost, me_.to_string() + ": connection to ps:" + std::to_string(ps) + " lost" +
                                      (c ? " (" + c->close_reason() + ")" : std::string()));
  }

  // A request timed out: its buffers may be gone, so no late reply may be written anywhere.
  void abandon() {
    for (auto& c : conns_)
      if (c) c->close();
  }

  void receive(std::size_t ps) {
    auto conn = conns_[ps];
    conn->async_receive(
        [this, ps](const transport::frame_header& h, error_code& ec) -> boost::asio::mutable_buffer {
          auto it = pending_[ps].find(h.request_id);
          if (it == pending_[ps].end()) {
            ec = make_error_code(errc::bad_frame);  // a reply to nothing we asked
            return {};
          }
          auto type = static_cast<message>(h.type);
          // A pull's values, or the push counts answering register_worker (none for other oks).
          if (type == message::pull_reply || type == message::reply_ok)
            return transport::chunk_destination(it->second->reply_into, h, ec);
          if (type == message::reply_error) {
            it->second->control.resize(h.payload_length);
            return boost::asio::buffer(it->second->control);
          }
          if (h.payload_length != 0) ec = make_error_code(errc::bad_frame);
          return {};
        },
        [this, ps, conn](error_code ec, transport::frame_header h) {
          if (ec) {
            for (auto& [id, p] : pending_[ps]) p->done.set_value(failed(lost(ps)));
            pending_[ps].clear();
            return;
          }
          if (h.last_chunk()) {
            auto node = pending_[ps].extract(h.request_id);
            auto& p = node.mapped();
            auto type = static_cast<message>(h.type);
            if (type == message::reply_error) {
              auto e = decode_control<error_reply>(
                  std::string_view(reinterpret_cast<const char*>(p->control.data()), p->control.size()), "reply_error");
              p->done.set_value(failed(
                  error(error_code(e.code, dsgd::category()), "ps:" + std::to_string(ps) + ": " + e.message)));
            } else {
              p->done.set_value({{type, h.step}, {}, {}});
            }
          }
          receive(ps);
        });
  }

  cluster::cluster_spec spec_;
  cluster::task_id me_;
  client_options opts_;
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::shared_ptr<transport::tcp_connection>> conns_;
  std::vector<std::map<std::uint64_t, std::shared_ptr<pending_request>>> pending_;
  std::uint64_t next_id_ = 0;
  std::vector<std::uint64_t> received_;  // per plan shard: this replica's pushes it has received
};

}  // namespace dsgd::server
