// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::worker: the worker role of a training cluster (a chief or worker task): it places the
/// variables, connects to the ps tasks, and pulls values and pushes gradients every step.
#pragma once

#include <dsgd/client/options.hpp>
#include <dsgd/client/ps_client.hpp>
#include <dsgd/client/residuals.hpp>
#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/detail/exchange.hpp>
#include <dsgd/train/detail/views.hpp>
#include <dsgd/train/overlap.hpp>
#include <dsgd/train/staging.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::train {

/// One worker (or chief) task of a cluster: what it needs to train, its ps client, placement,
/// step bookkeeping and one staging buffer off the host; no optimizer and no server.
///
/// A program whose tasks are all workers (its ps tasks run elsewhere) uses it directly
/// (dsgd::trainer holds one for a worker task):
/// @code
/// dsgd::train::worker<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average> w(
///     spec, {"worker", 0}, dsgd::trainer_options<dsgd::placement::round_robin, dsgd::update::sync_average,
///                                                dsgd::optim::sgd>{.connection = {.token = "secret"}});
/// w.create_variables(model.parameters(), model.names());  // the chief initialises, others wait
/// for (auto batch : batches) {
///   model.forward_backward(batch...);
///   w.push_pull(model.gradients(), model.parameters());
/// }
/// w.finish();
/// @endcode
/// Each call that takes tensors also takes a model's own buffers as one set of variable_views
/// (tensor/view.hpp; Eigen and libtorch in adapt/), each naming a variable's values and
/// gradients in host memory, pulled into and pushed from in place: `w.push_pull(views)`.
///
/// @tparam D the device the model computes on (host devices exchange the tensors in place)
/// @tparam P a Placement: which ps task holds which variable
/// @tparam U the UpdateRule the ps tasks run (which step a pull asks for; exactly-once pushes)
/// @tparam T the Transport it connects over (TCP; transport::inproc for tasks as threads)
template <Device D = device::cpu, Placement P = placement::round_robin, UpdateRule U = update::sync_average,
          Transport T = transport::asio_tcp>
class worker {
 public:
  using device_type = D;
  using placement_type = P;
  using update_rule_type = U;
  using transport_type = T;
  using client_type = client::basic_ps_client<T>;  ///< its connections to the ps tasks
  using overlap_type = train::overlap<worker>;
  using checkpoint_at = std::pair<std::filesystem::path, std::uint64_t>;  ///< a checkpoint: dir, step
  using view_overlap_type = train::overlap<worker, variable_views>;       ///< overlapped() of views

  /// Worker task @p task of @p spec, connecting with @p client over @p transport and placing by
  /// @p placement (nothing is connected before create_variables()).
  /// @throws dsgd::error errc::invalid_argument naming a bad option ("client_options...") or a
  ///         ps task, errc::bad_cluster_spec for a task the spec lacks or a spec without ps
  worker(cluster::cluster_spec spec, cluster::task_id task, client::client_options client, P placement = {},
         D device = {}, T transport = T{})
      : worker(std::move(spec), std::move(task), std::move(client), std::move(placement), std::move(device),
               "client_options", std::move(transport)) {}

  /// Worker task @p task of a cluster set up with @p o: its connection, request and placement
  /// settings (see client_options_of()); a bad option is named by its path in @p o.
  template <class O>
  worker(cluster::cluster_spec spec, cluster::task_id task, const trainer_options<P, U, O>& o, D device = {},
         T transport = T{})
      : worker(std::move(spec), std::move(task), (validate(o), client_options_of(o)), o.placement, std::move(device),
               nullptr, std::move(transport)) {}

  worker(worker&&) = default;

  bool is_chief() const noexcept { return chief_; }
  /// @returns this worker's index among the training replicas (0 is the chief).
  std::size_t replica() const noexcept { return replica_; }
  /// @returns how many replicas (workers, chief included) train.
  std::size_t replicas() const { return cluster::replicas::count(spec_); }
  const cluster::task_id& task() const noexcept { return task_; }
  const cluster::cluster_spec& cluster() const noexcept { return spec_; }
  const D& device() const noexcept { return device_; }
  /// @returns the placement computed by create_variables().
  const placement::plan& plan() const noexcept { return plan_; }
  /// @returns the step of the values last pulled.
  std::uint64_t step() const noexcept { return step_; }
  /// @returns the host staging of the exchanges (none on a host device; see train/staging.hpp).
  const staging<D>& staged() const noexcept { return buffers_.staged(); }
  /// @returns the payload bytes of this worker's dense pushes so far, as trainer_options::
  /// compression encoded them (frame headers not counted).
  std::uint64_t pushed_bytes() const noexcept { return client_->pushed_bytes(); }

  /// Marks variable @p v (creation order; rank 2 or more) as read and updated by rows:
  /// pull() and push() skip it from now on; use pull_rows() and push_rows(). Marked before
  /// create_variables(), it takes no room in the staging buffer.
  void set_sparse(std::size_t v) {
    if (sparse_.size() <= v) sparse_.resize(v + 1, false);
    sparse_[v] = true;
  }
  /// @returns whether variable @p v was marked with set_sparse().
  bool is_sparse(std::size_t v) const noexcept { return v < sparse_.size() && sparse_[v]; }

  /// Reads rows @p keys of variable @p v into @p out (host memory, keys.size() x row width),
  /// at the same step as pull() (call pull() first in a step). See ps_client::pull_rows.
  /// @returns the rows' step
  std::uint64_t pull_rows(std::size_t v, std::span<const std::uint64_t> keys, std::span<float> out) {
    return client_->pull_rows(plan_, v, keys, out, want());
  }

  /// Sends gradient rows @p grads (host memory, keys.size() x row width) for rows @p keys of
  /// variable @p v, computed on the values of step(); push() then ends the step. Duplicate keys
  /// add up. See ps_client::push_rows. @returns how many shards dropped them.
  std::size_t push_rows(std::size_t v, std::span<const std::uint64_t> keys, std::span<const float> grads) {
    return client_->push_rows(plan_, v, keys, grads, step_, update::applies_each_push_v<U>);
  }

  // --- dynamic embedding tables (docs/embeddings.md) -----------------------------------------

  /// Asks every ps task to hold its part of table @p id, made from @p spec; every worker calls
  /// it (the same spec again is nothing new) after create_variables(). A table keeps its own
  /// rule (spec.rule): a sync table's steps are this worker's pushes to it, whatever rule the
  /// dense variables follow. See ps_client::create_table.
  void create_table(std::uint32_t id, const embedding::table_spec& spec) {
    client_->create_table(id, spec);
    if (tables_.size() <= id) tables_.resize(id + 1);
    tables_[id] = {spec, 0, true};
    tables_[id].pushes = table_step(id);
  }
  /// The lookup of this step in table @p id: the rows of @p keys (unique: deduplicate a batch
  /// first, embedding::deduplicator) into @p out, keys.size() x dim, as the table's rule lets
  /// this worker read after its pushes to the table so far. See ps_client::pull_table.
  std::uint64_t pull_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<float> out) {
    const auto& t = table(id, "pull_table()");
    return client_->pull_table(id, t.spec.dim, keys, out, t.pushes);
  }
  /// One table's part of pull_tables(): its id, the keys and where their rows go.
  struct table_lookup {
    std::uint32_t id = 0;
    std::span<const std::uint64_t> keys;
    std::span<float> out;
  };
  /// pull_table() of several tables (each at most once) in one round trip
  /// (ps_client::pull_tables): a step that reads a wide and a deep table waits once.
  std::uint64_t pull_tables(std::initializer_list<table_lookup> lookups) {
    std::vector<typename client_type::table_lookup> parts;
    for (const auto& l : lookups) {
      const auto& t = table(l.id, "pull_tables()");
      parts.push_back({l.id, t.spec.dim, l.keys, l.out, t.pushes});
    }
    return client_->pull_tables(std::span<const typename client_type::table_lookup>(parts));
  }
  /// One table's part of push_tables(): its id, the keys and their gradient rows.
  struct table_update {
    std::uint32_t id = 0;
    std::span<const std::uint64_t> keys;
    std::span<const float> grads;
  };
  /// push_table() of several tables (each at most once) in one round trip
  /// (ps_client::push_tables). @returns the keys dropped over all of them.
  std::uint64_t push_tables(std::initializer_list<table_update> updates) {
    std::vector<typename client_type::table_update> parts;
    for (const auto& u : updates) {
      const auto& t = table(u.id, "push_tables()");
      parts.push_back({u.id, t.spec.dim, u.keys, u.grads, t.pushes});
    }
    const auto dropped = client_->push_tables(std::span<const typename client_type::table_update>(parts));
    for (const auto& u : updates) ++tables_[u.id].pushes;
    return dropped;
  }
  /// An evaluation lookup in table @p id: never admits or creates a row. @returns the table's
  /// step (sync) or update count (async, SSP). See ps_client::read_table.
  std::uint64_t read_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<float> out) {
    return client_->read_table(id, table(id, "read_table()").spec.dim, keys, out);
  }
  /// @returns table @p id's counts over the ps tasks (rows, bytes, admitted, rejected, evicted,
  /// erased, gradient rows dropped): what a summary hook's scalars function can return
  /// (embedding::table_counts::scalars). See ps_client::table_stats.
  embedding::table_counts table_stats(std::uint32_t id) {
    (void)table(id, "table_stats()");
    return client_->table_stats(id);
  }
  /// Sends the gradient rows @p grads of @p keys (keys.size() x dim) for table @p id, computed on
  /// the rows of the last pull_table(). @returns how many keys had their gradient dropped (no
  /// row: not admitted, or evicted since the pull). See ps_client::push_table.
  std::uint64_t push_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<const float> grads) {
    auto& t = table(id, "push_table()");
    const auto dropped = client_->push_table(id, t.spec.dim, keys, grads, t.pushes);
    ++t.pushes;
    return dropped;
  }

  /// Places the variables (in creation order) over the ps tasks, connects to them, checks
  /// every worker placed alike, and (chief) creates them with their current values at step
  /// @p step (non-zero when they come from a checkpoint); the others wait until the chief
  /// has. Values are then pulled into @p variables.
  void create_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                        std::uint64_t step = 0) {
    place(variables, names);
    open(variables, std::nullopt, step);
  }
  /// create_variables() of a model's own buffers, named and shaped by their views; every later
  /// call with views must pass the same variables (count, names, sizes).
  /// @throws dsgd::error errc::invalid_argument naming a variable without values,
  ///         errc::shape_mismatch one whose sizes disagree
  void create_variables(variable_views variables, std::uint64_t step = 0) {
    place(variables, "train::worker::create_variables");
    open(variables, std::nullopt, step);
  }

  /// create_variables() from a checkpoint: the chief has every ps task read its shards (values,
  /// optimizer slots and counters) from checkpoint @p step in @p dir, a directory all of them
  /// reach; the others wait until it has. Values are then pulled into @p variables.
  /// @throws dsgd::error what a ps answers: errc::checkpoint_corrupt naming a damaged file,
  ///         errc::shape_mismatch naming a variable whose shape differs from the model's
  void restore_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, std::uint64_t step) {
    place(variables, names);
    open(variables, checkpoint_at{dir, step}, step);
  }
  /// restore_variables() into a model's own buffers (as create_variables(variable_views)).
  void restore_variables(variable_views variables, const std::filesystem::path& dir, std::uint64_t step) {
    place(variables, "train::worker::restore_variables");
    open(variables, checkpoint_at{dir, step}, step);
  }

  /// Chief: every ps task writes its part of checkpoint step() into @p dir (values, optimizer
  /// slots and counters of its shards, and its embedding tables); checkpoint::saver::commit()
  /// then makes it a checkpoint. With @p tables_delta_of, an incremental checkpoint: of the
  /// tables only the rows changed since that checkpoint, which the ps tasks must have written
  /// or restored since their last full one (ps_client::save_incremental).
  void save_shards(const std::filesystem::path& dir, std::optional<std::uint64_t> tables_delta_of = std::nullopt) {
    if (tables_delta_of) client_->save_incremental(std::filesystem::absolute(dir), step_, *tables_delta_of);
    else client_->save(std::filesystem::absolute(dir), step_);
  }
  /// @returns this worker's error-feedback residuals (top_k, two_bit) per shard of its plan,
  /// to save with a checkpoint or take back from one (client::residuals).
  client::residuals residuals() { return client_->residuals(plan_); }

  /// Re-creates this task's session after a recoverable failure (a ps lost and restarted, a
  /// restore by the chief): reconnects to every ps task it lost (retrying until the startup
  /// timeout), registers again, and pulls the values it computes on next, counting pushes
  /// afresh. The chief first restores checkpoint @p checkpoint (dir, step) if given, else
  /// re-initialises every ps task from @p variables, its last pulled values, at step(). Every
  /// wait in it (connecting, each request) ends by @p until: a recovery's overall deadline.
  /// @throws dsgd::error when a ps stays unreachable, or a non-recoverable error
  void recover(std::vector<tensor<D>>& variables, const std::optional<checkpoint_at>& checkpoint = std::nullopt,
               std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max()) {
    bounded_by(until, [&] { open(variables, checkpoint, step_, false); });
  }
  /// recover() into a model's own buffers. @throws dsgd::error as pull(variable_views) too
  void recover(variable_views variables, const std::optional<checkpoint_at>& checkpoint = std::nullopt,
               std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max()) {
    bounded_by(until, [&] { open(checked(variables, "train::worker::recover", false), checkpoint, step_, false); });
  }

  /// @returns true for the errors recover() is for: a ps connection lost or unreachable, or a
  /// session aborted by a restore.
  static bool recoverable(const error_code& ec) noexcept {
    return ec == errc::peer_lost || ec == errc::peer_unreachable || ec == errc::aborted;
  }

  /// Reads the values this worker may compute on next into @p variables: for sync the next
  /// step (waiting for the slowest replica), for SSP within the staleness bound, for async the
  /// latest. @returns their step.
  std::uint64_t pull(std::vector<tensor<D>>& variables) { return pull_into(variables); }
  /// pull() into the values of a model's own buffers, in place.
  /// @throws dsgd::error errc::shape_mismatch naming a variable when @p variables are not those
  ///         placed (count, names, sizes), errc::invalid_argument one without values
  std::uint64_t pull(variable_views variables) { return pull_into(checked(variables, "train::worker::pull", false)); }

  /// Sends @p gradients (those of variables not marked sparse), computed on the values of
  /// step(). @returns how many shards dropped them (a backup worker that came late).
  std::size_t push(const std::vector<tensor<D>>& gradients) { return push_from(gradients); }
  /// push() of the gradients of a model's own buffers, read in place.
  /// @throws dsgd::error as pull(variable_views), and errc::invalid_argument naming a variable
  ///         without gradients
  std::size_t push(variable_views variables) { return push_from(checked(variables, "train::worker::push", true)); }

  /// push(@p gradients), then pull(@p variables), in one exchange: the pull goes out right
  /// behind the push on every connection instead of after the push's answers, which saves a
  /// round trip per step. Each ps takes a connection's messages in order, so the pull still
  /// sees the push: the same values and steps as push() then pull(). @returns how many shards
  /// dropped the push, as push().
  std::size_t push_pull(const std::vector<tensor<D>>& gradients, std::vector<tensor<D>>& variables) {
    return push_pull_of(gradients, variables);
  }
  /// push_pull() of a model's own buffers: their gradients pushed and values pulled, in place.
  /// @throws dsgd::error as push(variable_views)
  std::size_t push_pull(variable_views variables) {
    auto& v = checked(variables, "train::worker::push_pull", true);
    return push_pull_of(v, v);
  }

  /// Starts communication overlapped with the model's compute on @p variables and their
  /// @p gradients (see train::overlap); the values in @p variables are those of step() to begin
  /// with.
  overlap_type overlapped(std::vector<tensor<D>>& variables, const std::vector<tensor<D>>& gradients) {
    return overlap_type(*this, variables, gradients);
  }
  /// overlapped() on a model's own buffers, whose gradients are read where they are: their
  /// views must name them from the start. @throws dsgd::error as push(variable_views)
  view_overlap_type overlapped(variable_views variables) { return view_overlap_type(*this, variables); }

  /// @returns how many of this replica's pushes the ps tasks had received when this worker last
  /// registered (create_variables(), recover()), counting those of earlier processes of the
  /// same task: each arrived exactly once. Under async and SSP a restarted worker resumes its
  /// data at this push (see ps_client::pushes_received()).
  std::uint64_t pushes_received() const noexcept { return client_->pushes_received(); }

  /// This worker has no more data. The chief then waits for every worker to finish and shuts
  /// the ps tasks down, which ends their join().
  void finish();

 private:
  template <class W, class V>
  friend class train::overlap;

  // The public constructors' common part; @p path names client options in errors (none: the
  // trainer_options constructor validated them).
  worker(cluster::cluster_spec spec, cluster::task_id task, client::client_options client, P placement, D device,
         const char* path, T transport);

  // The variables pull() and push() skip: those read and written by rows.
  auto skip_sparse() const {
    return [this](std::size_t v) { return is_sparse(v); };
  }
  // The step a pull asks for now.
  std::uint64_t want() const { return pushes_ == 0 ? 0 : U::next_pull(pushed_at_, pushes_); }
  // The step pull() asks for once the push of step() is counted (push_pull() asks it before).
  std::uint64_t pull_after_push() const { return U::next_pull(step_, pushes_ + 1); }

  // The exchanges, of tensors or of views (Values, Grads: std::vector<tensor<D>> or variable_views).
  template <class Values>
  std::uint64_t pull_into(Values& variables) {
    step_ = client_->pull(plan_, want(), value_spans(variables));
    land(variables);
    return step_;
  }
  template <class Grads>
  std::size_t push_from(const Grads& gradients) {
    const auto grads = staged_gradients(gradients);
    const auto dropped = client_->push(plan_, step_, grads, update::applies_each_push_v<U>);
    count_push();
    return dropped;
  }
  template <class Grads, class Values>
  std::size_t push_pull_of(const Grads& gradients, Values& variables) {
    const auto grads = staged_gradients(gradients);
    auto pushing = client_->start_push(plan_, step_, grads, update::applies_each_push_v<U>);
    for (std::size_t v = 0; v < grads.size(); ++v) client_->push_variable(pushing, v);
    // Off the host the values land in the staging buffer's values area, apart from the gradients.
    auto pulling = client_->start_pull(plan_, pull_after_push(), value_spans(variables));
    const auto dropped = finish_behind(pushing, pulling);
    step_ = client_->wait(pulling);
    land(variables);
    return dropped;
  }
  // The spans a push of @p gradients reads: off the host, each copied into the staging buffer once.
  template <class Grads>
  std::span<const std::span<const float>> staged_gradients(const Grads& gradients) {
    const auto grads = gradient_spans(gradients);
    for (std::size_t v = 0; v < gradients.size(); ++v) buffers_.stage(gradients, v);
    return grads;
  }
  // Off the host, copies the values pulled into the staging buffer to the device.
  template <class Values>
  void land(Values& variables) {
    for (std::size_t v = 0; v < variables.size(); ++v) buffers_.land(variables, v);
  }

  // Where an exchange reads and writes (detail::exchange_buffers).
  void reserve_for(std::vector<tensor<D>>& t) { buffers_.reserve(t, skip_sparse()); }
  void reserve_for(variable_views v) { checked(v, "train::worker::overlapped", true); }
  template <class Values>
  auto value_spans(Values& variables) {
    return buffers_.values(variables, skip_sparse());
  }
  template <class Grads>
  auto gradient_spans(const Grads& gradients) {
    return buffers_.gradients(gradients, skip_sparse());
  }
  // @p views, checked against the placement for @p call (detail::check_placed).
  variable_views& checked(variable_views& views, std::string_view call, bool need_gradients) const {
    detail::check_placed(plan_.variables(), views, call, need_gradients, skip_sparse());
    return views;
  }

  // Waits for the answers to @p pushing, a push with the pull @p pulling sent right behind it,
  // and counts the push. If the push failed, first collects the pull (whose values must not
  // land later), then throws the push's error.
  template <class Push, class Pull>
  std::size_t finish_behind(Push& pushing, Pull& pulling);
  // A push of gradients computed at step() was answered.
  void count_push() {
    pushed_at_ = step_;
    ++pushes_;
  }

  // Computes the plan of @p variables (named @p names, "var<i>" where none) and reserves the
  // one staging buffer, before the first exchange.
  void place(const std::vector<tensor<D>>& variables, const std::vector<std::string>& names);
  void place(variable_views variables, std::string_view call);  // the plan of views, for @p call
  template <class Values>
  void initialize(Values& variables, std::uint64_t step) {
    client_->initialize(plan_, buffers_.initial(variables), step);
  }
  // Connects, registers, and (chief) restores @p from or else initialises the ps tasks from
  // @p variables at @p step, saying so if @p say; the others wait until it has. Then pulls
  // into @p variables.
  template <class Values>
  void open(Values& variables, const std::optional<checkpoint_at>& from, std::uint64_t step, bool say = true);
  // Runs @p f with every wait of the client ending by @p until.
  template <class F>
  void bounded_by(std::chrono::steady_clock::time_point until, F f) {
    client_->bound_by(until);
    struct unbound {
      client_type& c;
      ~unbound() { c.bound_by(std::chrono::steady_clock::time_point::max()); }
    } reset{*client_};
    f();
  }
  // Pulls whatever the ps tasks hold now and counts pushes afresh from there; asks for this
  // worker's tables again (a ps task that restarted without a checkpoint lost them) and takes
  // up each sync table's step.
  template <class Values>
  void resync(Values& variables) {
    pushes_ = 0;
    pushed_at_ = 0;
    pull_into(variables);
    for (std::uint32_t id = 0; id < tables_.size(); ++id) {
      if (!tables_[id].created) continue;
      client_->create_table(id, tables_[id].spec);
      tables_[id].pushes = table_step(id);
    }
  }
  // A sync table's pushes count its steps: a worker starts from the table's step, which after a
  // restore is its checkpoint's (a push for an earlier step would be dropped as stale). An
  // async or SSP table's counts start at 0 (an SSP clock behind the restored ones only waits less).
  std::uint64_t table_step(std::uint32_t id) {
    const auto& t = tables_[id];
    if (t.spec.rule.rule != embedding::table_rule::kind::sync) return 0;
    return client_->read_table(id, t.spec.dim, {}, {});
  }

  cluster::cluster_spec spec_;
  cluster::task_id task_;
  P placement_;
  [[no_unique_address]] D device_;
  std::function<void(std::string_view)> log_;
  std::size_t replica_ = 0;
  bool chief_ = false;
  std::unique_ptr<client_type> client_;
  placement::plan plan_;
  std::uint64_t step_ = 0;
  std::uint64_t pushed_at_ = 0;
  std::uint64_t pushes_ = 0;
  detail::exchange_buffers<D> buffers_;
  std::vector<bool> sparse_;
  // Per table id: its spec and this worker's pushes to it (a sync table's step, an SSP table's
  // clock).
  struct table_state {
    embedding::table_spec spec;
    std::uint64_t pushes = 0;
    bool created = false;
  };
  std::vector<table_state> tables_;
  table_state& table(std::uint32_t id, const char* call) {
    if (id >= tables_.size() || !tables_[id].created)
      throw error(errc::invalid_argument, std::string(call) + ": table " + std::to_string(id) +
                                              " was not created by this worker (create_table first)");
    return tables_[id];
  }
};

}  // namespace dsgd::train

#include <dsgd/train/impl/worker.hpp>
