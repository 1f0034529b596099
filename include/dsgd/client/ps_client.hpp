// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::basic_ps_client: a worker's connections to every ps task over a Transport, and the
/// register / initialise / pull / push calls a training loop makes (client::ps_client: TCP).
#pragma once

#include <dsgd/client/detail/channel.hpp>
#include <dsgd/client/detail/push_counts.hpp>
#include <dsgd/client/detail/request_table.hpp>
#include <dsgd/client/detail/routing.hpp>
#include <dsgd/client/detail/session.hpp>
#include <dsgd/client/operations.hpp>
#include <dsgd/client/options.hpp>
#include <dsgd/client/residuals.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/detail/retry.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/placement/hash_keys.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/buffer.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::client {

/// A worker's side of the cluster: one authenticated connection per ps task. Its I/O runs on
/// the thread that calls it, inside the calls below, which block it, each with a deadline: a
/// reply wakes the waiting caller itself, with no thread in between (on two cores a hand-off
/// between threads costs about as much as a small round trip). Between calls nothing is read;
/// what was sent is in the socket or the shared ring already. One thread at a time may use it.
///
/// @tparam T the Transport it connects over (Asio's basic_socket idiom: client::ps_client is
///         basic_ps_client<transport::asio_tcp>; transport::inproc runs tasks as threads)
template <Transport T>
class basic_ps_client {
 public:
  using transport_type = T;  ///< what it connects over

  /// @param me this task ("worker:1", "chief:0"); it must be a task of @p spec.
  /// @param transport what it connects over (inproc: a value holding the cluster's hub)
  basic_ps_client(cluster::cluster_spec spec, cluster::task_id me, client_options opts, T transport = T{})
      : spec_(std::move(spec)),
        me_(std::move(me)),
        opts_(std::move(opts)),
        channel_(spec_, me_.to_string(), opts_, std::move(transport)) {
    opts_.connection.log = dsgd::detail::or_stderr(std::move(opts_.connection.log));
    validate(opts_);
    if (!spec_.contains(me_))
      throw error(errc::bad_cluster_spec, "task " + me_.to_string() + " is not in the cluster spec");
    if (!spec_.has_job("ps") || spec_.num_tasks("ps") == 0)
      throw error(errc::bad_cluster_spec, "the cluster spec has no ps task");
  }

  basic_ps_client(const basic_ps_client&) = delete;
  basic_ps_client& operator=(const basic_ps_client&) = delete;

  std::size_t ps_tasks() const noexcept { return channel_.size(); }  ///< the number of ps tasks
  /// @returns the payload bytes of every push so far, as encoded (compress/; headers not counted).
  std::uint64_t pushed_bytes() const noexcept { return encoder_.bytes(); }

  /// Until bound_by(max), connect() and every request end by @p until: a recovery's overall
  /// deadline (errc::peer_unreachable, errc::timed_out naming "the recovery deadline").
  void bound_by(std::chrono::steady_clock::time_point until) { channel_.bound_by(until); }

  /// Connects to every ps task not connected now (all of them at first; after a failure, those
  /// whose connection broke), retrying with exponential backoff.
  /// @throws dsgd::error(errc::peer_unreachable) after startup_timeout, naming every ps task
  ///         (and address) not reached; errc::handshake_failed when a ps rejects the token
  void connect() {
    const auto bound = channel_.bound();
    const auto deadline = std::min(std::chrono::steady_clock::now() + opts_.requests.startup_timeout, bound);
    std::vector<std::size_t> missing = channel_.disconnected();
    std::vector<int> handshake_failures(ps_tasks(), 0);
    std::string last_error;
    auto attempt = [&] {
      std::erase_if(missing, [&](std::size_t i) {
        const auto ec = channel_.connect(i);
        if (!ec) return true;
        // A ps that rejects our token closes the handshake; so does one dying or just
        // restarting while we connect. Three in a row is a rejection; fewer is retried.
        if (ec == errc::handshake_failed && ++handshake_failures[i] >= 3)
          throw error(ec, me_.to_string() + ": " + named(i) + " rejected the handshake " +
                              std::to_string(handshake_failures[i]) + " times: " + ec.message());
        last_error = ec.message();
        return false;
      });
      return missing.empty();
    };
    if (dsgd::detail::retry_until(deadline, opts_.requests.initial_backoff, opts_.requests.max_backoff, attempt))
      return;
    std::string names;
    for (auto i : missing) names += (names.empty() ? "" : ", ") + named(i);
    throw error(errc::peer_unreachable,
                me_.to_string() + ": could not reach " + names + " within " +
                    (deadline == bound ? std::string("the recovery deadline")
                                       : std::to_string(opts_.requests.startup_timeout.count()) + " ms") +
                    " (last error: " + last_error + ")");
  }

  /// Tells every ps task who this worker is and the placement it computed; a ps holding a
  /// different placement answers with errc::placement_mismatch naming both. Each ps answers
  /// with how many pushes of this replica it has received per shard (pushes_received()).
  void register_worker(const placement::plan& plan, std::size_t replica, bool chief) {
    std::vector<detail::request> batch;
    std::vector<std::string> bodies(ps_tasks());
    std::vector<std::vector<std::uint64_t>> counts(ps_tasks());
    for (std::size_t i = 0; i < ps_tasks(); ++i) {
      bodies[i] = detail::registration_body(me_.to_string(), replica, chief, plan, i, opts_.compression,
                                            opts_.pull_compression, opts_.rule, counts[i]);
      detail::request r{i, detail::header(protocol::message::register_worker, 0, 0, 0), boost::asio::buffer(bodies[i]),
                        boost::asio::buffer(counts[i])};
      r.h.flags = transport::frame_flags::control;
      batch.push_back(r);
    }
    channel_.run(batch);
    received_.assign(plan, counts);
  }

  /// @returns this worker's error-feedback residuals per shard of @p plan, to save with a
  /// checkpoint or take back from one (client::residuals).
  client::residuals residuals(const placement::plan& plan) {
    track(plan);
    return client::residuals(encoder_, plan, me_.to_string());
  }

  /// @returns how many pushes of this replica every shard had received when it last registered:
  /// pushes [0, pushes_received()) arrived exactly once, even those in flight when a previous
  /// process of this replica died, and none later. A restarted or reconnected worker resumes its
  /// data there. A push that reached only some shards (the worker died between them) is
  /// completed by the next push() made with `skip_received`, which sends it to the shards still
  /// missing it and skips those that have it. After a restore they are the checkpoint's, where a
  /// shard may be several pushes ahead: it is skipped until the others reach it.
  std::uint64_t pushes_received() const noexcept { return received_.lowest(); }

  /// Chief only: creates every shard on its ps task with the initial values of its variable.
  /// @param values one host span per variable, in creation order
  /// @param step the step the values belong to (a restored checkpoint's; 0 for a fresh start)
  void initialize(const placement::plan& plan, std::span<const std::span<const float>> values, std::uint64_t step = 0) {
    std::vector<detail::request> batch;
    detail::for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      batch.push_back({s.ps_task,
                       detail::header(protocol::message::init_shard, s.variable, index, step),
                       detail::span_buffer(values[s.variable].subspan(s.offset, s.elements)),
                       {}});
    });
    channel_.run(batch);
    broadcast(protocol::message::open_session, detail::new_session_stamp());
  }

  /// Waits until every ps task answers wait_ready with the same session stamp (protocol/messages.hpp,
  /// "Sessions"; detail::await_one_session). @throws dsgd::error errc::timed_out naming each
  /// stamp past startup_timeout (or the recovery bound); what a ps answers past ready_timeout
  void wait_ready() {
    detail::await_one_session(
        [this] { return broadcast(protocol::message::wait_ready); }, [this](std::size_t i) { return named(i); },
        me_.to_string(), std::min(channel_.bound(), std::chrono::steady_clock::now() + opts_.requests.startup_timeout),
        opts_.requests.initial_backoff, opts_.requests.max_backoff);
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

  /// pull() in two halves: sends every request now, in plan order (so the first variables'
  /// values arrive first); wait(f, v) then waits for variable @p v's values, wait(f) for all.
  /// @p plan and @p dest must stay valid until the values are waited for.
  pull_operation start_pull(const placement::plan& plan, std::uint64_t step, std::span<const std::span<float>> dest) {
    pull_operation f;
    f.parts_ = channel_.open_parts();
    f.step_ = step;
    detail::for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
      if (dest[s.variable].empty() && s.elements != 0) return;
      channel_.add(f.parts_, detail::pull_request(plan, s, index, step, dest[s.variable], opts_.pull_compression));
    });
    flush();
    return f;
  }

  /// Starts writing every request queued so far (push_variable()'s, say) without waiting for
  /// anything; start_pull() and every wait do this themselves.
  void flush() { channel_.flush(); }

  /// Waits until variable @p v's values (every shard of it) have arrived.
  /// @throws dsgd::error as pull() does, once every other answer of @p f has been collected too
  void wait(pull_operation& f, std::size_t v) {
    for (auto& p : f.parts_.parts)
      if (p.variable == v) channel_.collect(f.parts_, p);
    if (f.parts_.first_error) channel_.fail(f.parts_);
  }

  /// Waits for every answer of @p f. @returns the smallest step the shards reported (the step
  /// asked when nothing was pulled).
  std::uint64_t wait(pull_operation& f) {
    channel_.collect_all(f.parts_);
    return f.parts_.parts.empty() ? f.step_ : f.parts_.lowest_step;
  }

  /// push() in parts: opens a push of @p grads (one host span per variable; an empty span skips
  /// its variable) computed at @p step, and sends nothing yet; push_variable() sends a variable
  /// as soon as its gradient is final, finish_push() sends the rest and waits for the answers.
  /// @p plan and the spans must stay valid, and the spans hold the final gradients once sent,
  /// until finish_push().
  push_operation start_push(const placement::plan& plan, std::uint64_t step,
                            std::span<const std::span<const float>> grads, bool skip_received = false) {
    track(plan);
    push_operation f;
    f.parts_ = channel_.open_parts();
    f.plan_ = &plan;
    f.step_ = step;
    f.grads_.assign(grads.begin(), grads.end());
    f.sent_.assign(grads.size(), false);
    f.skip_received_ = skip_received;
    std::size_t at = 0;
    detail::for_each_shard(plan, [&](const placement::shard& s, std::uint32_t) {
      const std::size_t plan_index = at++;
      if (!grads[s.variable].empty() || s.elements == 0) f.shards_.push_back(plan_index);
    });
    f.lowest_received_ = received_.lowest(f.shards_);
    return f;
  }

  /// Sends variable @p v's gradient (every shard of it) now; a second call, or one for a skipped
  /// variable, sends nothing.
  void push_variable(push_operation& f, std::size_t v) {
    if (v >= f.sent_.size() || f.sent_[v]) return;
    f.sent_[v] = true;
    std::size_t at = 0;
    detail::for_each_shard(*f.plan_, [&](const placement::shard& s, std::uint32_t index) {
      const std::size_t plan_index = at++;
      if (s.variable != v || (f.grads_[v].empty() && s.elements != 0)) return;
      if (f.skip_received_ && !received_.lacks(plan_index, f.lowest_received_)) return;  // it has this push
      // Encoded as the variable's codec says (compress/), or sent in place.
      channel_.add(f.parts_,
                   encoder_.push(plan_index, s.ps_task, v, index, f.step_, f.grads_[v].subspan(s.offset, s.elements)));
    });
  }

  /// Sends every variable not sent yet, waits for every answer and counts the push on each
  /// shard. @returns how many shards dropped it (stale or duplicate).
  /// @throws dsgd::error as push() does
  std::size_t finish_push(push_operation& f) {
    for (std::size_t v = 0; v < f.sent_.size(); ++v) push_variable(f, v);
    channel_.collect_all(f.parts_);
    received_.count(f.shards_, f.skip_received_, f.lowest_received_);
    return f.parts_.dropped;
  }

  /// Waits for every answer of the variables of push @p f sent so far, sending no more and not
  /// counting the push (a push given up, so that no late reply lands after it; finish_push()
  /// completes one). @returns the smallest step the shards reported (the push's step when none)
  std::uint64_t wait(push_operation& f) {
    channel_.collect_all(f.parts_);
    return f.parts_.parts.empty() ? f.step_ : f.parts_.lowest_step;
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
    auto groups = detail::route(plan, variable, keys, out.size(), "pull_rows");
    const std::size_t dim = detail::row_width(plan, variable);
    std::vector<detail::request> batch;
    for (auto& g : groups)
      batch.push_back({g.ps, detail::header(protocol::message::sparse_pull, variable, g.index, step),
                       detail::key_buffer(g, keys), detail::rows_destination(g, out, dim)});
    auto replies = channel_.run(batch);  // one per shard of the variable: never none
    detail::scatter_rows(groups, out, dim);
    return std::ranges::min(replies, {}, &reply::step).step;
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
    auto groups = detail::route(plan, variable, keys, grads.size(), "push_rows");
    track(plan);
    const std::size_t dim = detail::row_width(plan, variable);
    std::vector<detail::request> batch;
    std::vector<std::size_t> shards;  // plan index of each request's shard
    for (auto& g : groups) {
      detail::request r{g.ps,
                        detail::header(protocol::message::sparse_push, variable, g.index, step),
                        detail::key_buffer(g, keys),
                        {}};
      r.payload_rows = detail::rows_source(g, grads, dim);
      batch.push_back(r);
      shards.push_back(g.plan_index);
    }
    return send_push(batch, shards, skip_received);
  }

  /// Chief only: every ps task writes its part of checkpoint @p step (values, optimizer slots
  /// and counters of the shards it holds) into @p dir, which all of them must reach; then
  /// checkpoint::saver::commit() makes it a checkpoint.
  void save(const std::filesystem::path& dir, std::uint64_t step) { broadcast(protocol::message::save, step, dir); }

  /// Chief only: an incremental checkpoint @p step: every ps task writes its data file as save()
  /// does, and of its embedding tables only the rows changed since checkpoint @p tables_delta_of
  /// and the keys removed since (checkpoint/table_file.hpp); checkpoint::saver::commit() then
  /// makes it a checkpoint whose restore reads its chain (the full base, each delta). @p
  /// tables_delta_of must be a committed checkpoint, full or incremental, that every ps task
  /// wrote or restored since its last full one (checkpoint::incremental_schedule keeps track).
  /// @throws dsgd::error what a ps answers: errc::invalid_argument when one cannot build on
  ///         @p tables_delta_of (save a full checkpoint then)
  void save_incremental(const std::filesystem::path& dir, std::uint64_t step, std::uint64_t tables_delta_of) {
    broadcast(protocol::message::save, step, dir, {.incremental = true, .tables_delta_of = tables_delta_of});
  }

  /// Chief only: every ps task replaces its shards with checkpoint @p step in @p dir (read by name
  /// and range: it may come from another number of ps tasks), then a new session opens on all;
  /// other workers' requests fail with errc::aborted until they register again.
  /// @throws dsgd::error what a ps answers: errc::checkpoint_corrupt naming a damaged file,
  ///         errc::not_found or errc::shape_mismatch naming a variable
  void restore(const std::filesystem::path& dir, std::uint64_t step) {
    broadcast(protocol::message::restore, step, dir);
    broadcast(protocol::message::open_session, detail::new_session_stamp());
  }

  /// Tells every ps task this worker has no more data (uneven data ends cleanly).
  void finish() { broadcast(protocol::message::finish); }

  /// Chief only: shuts every ps task down; their join() returns.
  void shutdown_cluster() { broadcast(protocol::message::shutdown); }

  /// @returns how many pushes the shards of every ps task have dropped so far: stale (beyond
  /// the SSP bound, or behind the sync step) or duplicate. The staleness a job pays, for a log.
  std::uint64_t dropped_pushes() {
    std::uint64_t n = 0;
    for (const auto& r : broadcast(protocol::message::dropped_count)) n += r.step;
    return n;
  }

  // --- embedding tables ------------------------------------------------------------------
  // A dynamic table (docs/embeddings.md) lives on every ps task, each holding the keys a
  // KeyPlacement routes to it. Every call below goes to every ps task, with no keys where none
  // of the caller's goes to it, so that a sync table's step counts this worker on each.

  /// Asks every ps task to hold its part of table @p id, made from @p spec (its rule, optimizer,
  /// initializer, admission, eviction and caps). Every worker may ask: the same spec again is
  /// nothing new, another is an error naming both.
  /// @throws dsgd::error what a ps answers: errc::invalid_argument for a bad spec or another one
  void create_table(std::uint32_t id, const embedding::table_spec& spec) {
    spec.validate();
    const std::string body = protocol::encode_control(spec);
    std::vector<detail::request> batch;
    for (std::size_t i = 0; i < ps_tasks(); ++i) {
      detail::request r{i, detail::header(protocol::message::create_table, id, 0, 0), boost::asio::buffer(body), {}};
      r.h.flags = transport::frame_flags::control;
      batch.push_back(r);
    }
    channel_.run(batch);
  }

  /// The lookup of a training step in table @p id (rows of @p dim floats): the rows of @p keys
  /// (unique, as embedding::deduplicator leaves them; a key given twice is looked up twice) into
  /// @p out, keys.size() x dim, once the table's rule lets this worker read at @p step (sync:
  /// the table's step; SSP: this worker's clock, its pushes so far; async: any). Under async and
  /// SSP the lookup admits keys (embedding::table_spec's admission); a key without a row reads
  /// its initial row. @returns the smallest step (sync), clock (SSP) or update count the ps
  /// tasks reported.
  /// @throws dsgd::error errc::shape_mismatch when out.size() != keys.size() x dim, and what a ps
  ///         answers (no such table, too many keys, errc::timed_out past its step deadline)
  template <KeyPlacement P = placement::hash_keys>
  std::uint64_t pull_table(std::uint32_t id, std::size_t dim, std::span<const std::uint64_t> keys, std::span<float> out,
                           std::uint64_t step, const P& placement = {}) {
    const table_lookup one{id, dim, keys, out, step};
    return lookups(std::span(&one, 1), 0, placement, "pull_table");
  }

  /// The lookup of an evaluation in table @p id: as pull_table(), but at once, and it never
  /// admits, creates or touches a row. @returns the smallest step (sync) or update count
  /// (async, SSP: pushes applied) of the table on the ps tasks: with no keys, how far the table
  /// is (an evaluation after training waits for it).
  template <KeyPlacement P = placement::hash_keys>
  std::uint64_t read_table(std::uint32_t id, std::size_t dim, std::span<const std::uint64_t> keys, std::span<float> out,
                           const P& placement = {}) {
    const table_lookup one{id, dim, keys, out, 0};
    return lookups(std::span(&one, 1), 1, placement, "read_table");
  }

  /// Sends the gradient rows @p grads (keys.size() x dim, row i for keys[i]) of table @p id,
  /// computed on rows pulled at @p step, to the ps tasks holding the keys: summed into the step
  /// (sync) or applied at once (async, SSP). @returns how many keys had their gradient dropped
  /// because they have no row (not admitted, or evicted since their pull).
  /// @throws dsgd::error as pull_table(), and errc::invalid_argument from a ps for a NaN or
  ///         infinite gradient (naming the table and key; nothing of that push applied there)
  template <KeyPlacement P = placement::hash_keys>
  std::uint64_t push_table(std::uint32_t id, std::size_t dim, std::span<const std::uint64_t> keys,
                           std::span<const float> grads, std::uint64_t step, const P& placement = {}) {
    const table_update one{id, dim, keys, grads, step};
    return send_table_pushes(std::span(&one, 1), placement, "push_table");
  }

  /// One table's part of pull_tables(): pull_table()'s arguments.
  struct table_lookup {
    std::uint32_t id = 0;
    std::size_t dim = 0;
    std::span<const std::uint64_t> keys;
    std::span<float> out;
    std::uint64_t step = 0;
  };
  /// pull_table() of several tables at once: every table's requests go out together, so a step
  /// that looks up a wide and a deep table waits one round trip, not two. @returns the smallest
  /// step any ps reported for any of them.
  /// @throws dsgd::error as pull_table(), naming the table's call
  template <KeyPlacement P = placement::hash_keys>
  std::uint64_t pull_tables(std::span<const table_lookup> tables, const P& placement = {}) {
    return lookups(tables, 0, placement, "pull_tables");
  }

  /// One table's part of push_tables(): push_table()'s arguments.
  struct table_update {
    std::uint32_t id = 0;
    std::size_t dim = 0;
    std::span<const std::uint64_t> keys;
    std::span<const float> grads;
    std::uint64_t step = 0;
  };
  /// push_table() of several tables at once, their requests sent together. @returns the keys
  /// dropped over all of them.
  /// @throws dsgd::error as push_table()
  template <KeyPlacement P = placement::hash_keys>
  std::uint64_t push_tables(std::span<const table_update> updates, const P& placement = {}) {
    return send_table_pushes(updates, placement, "push_tables");
  }

  /// @returns table @p id's counts summed over the ps tasks (embedding::table_counts: rows,
  /// bytes, admitted, rejected, evicted, erased, gradient rows dropped) and its smallest step.
  /// @throws dsgd::error what a ps answers (no such table)
  embedding::table_counts table_stats(std::uint32_t id) {
    std::vector<std::array<std::uint64_t, 7>> parts(ps_tasks());
    std::vector<detail::request> batch;
    for (std::size_t i = 0; i < ps_tasks(); ++i)
      batch.push_back({i,
                       detail::header(protocol::message::table_stats, id, 0, 0),
                       {},
                       boost::asio::buffer(parts[i].data(), sizeof(parts[i]))});
    auto replies = channel_.run(batch);
    embedding::table_counts c;
    for (const auto& p : parts) {
      c.rows += p[0];
      c.bytes += p[1];
      c.admitted += p[2];
      c.rejected += p[3];
      c.evicted += p[4];
      c.erased += p[5];
      c.dropped += p[6];
    }
    c.step = std::ranges::min(replies, {}, &reply::step).step;
    return c;
  }

 private:
  // The lookups of @p tables (training, @p mode 0, or evaluation, 1), every table's requests in
  // one batch: pull_table, read_table and pull_tables. @returns the smallest step reported.
  template <KeyPlacement P>
  std::uint64_t lookups(std::span<const table_lookup> tables, std::uint32_t mode, const P& placement,
                        const char* what) {
    std::vector<std::vector<detail::row_group>> groups;
    groups.reserve(tables.size());
    std::vector<detail::request> batch;
    for (const auto& t : tables) {
      groups.push_back(detail::route_keys(placement, ps_tasks(), t.keys, t.dim, t.out.size(), what));
      for (auto& g : groups.back())
        batch.push_back({g.ps, detail::header(protocol::message::table_pull, t.id, mode, t.step),
                         detail::key_buffer(g, t.keys), detail::rows_destination(g, t.out, t.dim)});
    }
    if (batch.empty()) return 0;  // no table
    auto replies = channel_.run(batch);
    for (std::size_t t = 0; t < tables.size(); ++t) detail::scatter_rows(groups[t], tables[t].out, tables[t].dim);
    return std::ranges::min(replies, {}, &reply::step).step;
  }

  // The pushes of @p updates, every table's requests in one batch: push_table and push_tables.
  // @returns the keys dropped over all of them.
  template <KeyPlacement P>
  std::uint64_t send_table_pushes(std::span<const table_update> updates, const P& placement, const char* what) {
    std::vector<std::vector<detail::row_group>> groups;
    groups.reserve(updates.size());
    std::size_t parts = 0;
    for (const auto& u : updates) {
      groups.push_back(detail::route_keys(placement, ps_tasks(), u.keys, u.dim, u.grads.size(), what));
      parts += groups.back().size();
    }
    std::vector<std::uint64_t> dropped(parts, 0);
    std::vector<detail::request> batch;
    for (std::size_t t = 0, k = 0; t < updates.size(); ++t)
      for (auto& g : groups[t]) {
        const auto& u = updates[t];
        detail::request r{g.ps, detail::header(protocol::message::table_push, u.id, 0, u.step),
                          detail::key_buffer(g, u.keys), boost::asio::buffer(&dropped[k++], sizeof(std::uint64_t))};
        r.payload_rows = detail::rows_source(g, u.grads, u.dim);
        batch.push_back(r);
      }
    if (!batch.empty()) channel_.run(batch);
    std::uint64_t n = 0;
    for (auto d : dropped) n += d;
    return n;
  }

  // "ps:1 (10.0.0.2:2222)": how errors name a ps task.
  std::string named(std::size_t i) const {
    return "ps:" + std::to_string(i) + " (" + spec_.address("ps", int(i)).to_string() + ")";
  }

  // Sends @p type to every ps task (with @p dir: a checkpoint_request, @p request's other
  // fields). @returns the answers.
  std::vector<reply> broadcast(protocol::message type, std::uint64_t step = 0, const std::filesystem::path& dir = {},
                               protocol::checkpoint_request request = {}) {
    request.directory = dir.string();
    const std::string body = dir.empty() ? std::string() : protocol::encode_control(request);
    std::vector<detail::request> batch;
    for (std::size_t i = 0; i < ps_tasks(); ++i) {
      detail::request r{i, detail::header(type, 0, 0, step), boost::asio::buffer(body), {}};
      if (!body.empty()) r.h.flags = transport::frame_flags::control;
      batch.push_back(r);
    }
    return channel_.run(batch);
  }

  // Exactly-once counting. Sends a push (one request per shard, shards[k] the plan index of
  // batch[k]'s), counts it on each shard once answered; @returns how many dropped it. With
  // @p skip_received, only to the shards that lack it: one whose count is ahead of the others'
  // already has it (it arrived before the previous process of this replica died).
  std::size_t send_push(std::vector<detail::request>& batch, const std::vector<std::size_t>& shards,
                        bool skip_received) {
    const std::uint64_t lowest = received_.lowest(shards);
    std::vector<detail::request> missing;
    for (std::size_t k = 0; k < batch.size(); ++k)
      if (!skip_received || received_.lacks(shards[k], lowest)) missing.push_back(batch[k]);
    auto replies = channel_.run(missing);
    received_.count(shards, skip_received, lowest);
    return static_cast<std::size_t>(std::ranges::count(replies, protocol::message::push_dropped, &reply::type));
  }
  // Pushes are counted, and encoded, per shard of @p plan (afresh for a plan of another size).
  void track(const placement::plan& plan) {
    received_.track(plan);
    encoder_.track(plan, opts_.compression);
  }

  cluster::cluster_spec spec_;
  cluster::task_id me_;
  client_options opts_;
  detail::client_channel<T> channel_;  // after spec_ and opts_, which it refers to
  detail::push_counts received_;       // per plan shard: this replica's pushes it has received
  detail::push_encoder encoder_;       // per plan shard: codec, residual, payload buffer
};

/// The worker's client over TCP (transport::asio_tcp).
using ps_client = basic_ps_client<transport::asio_tcp>;

}  // namespace dsgd::client
