// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dsgd::trainer: one task of a training cluster, composed from the policies a program picks.
///
/// Every process of a cluster runs the same program; the trainer tells it what it is (from
/// TF_CONFIG, Slurm or Open MPI, or given explicitly) and does that part:
///
/// @code
/// using trainer = dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin,
///                               dsgd::update::sync_average, dsgd::optim::momentum>;
/// trainer t = trainer::from_environment({.connection = {.token = "..."}});
/// if (t.is_ps()) return t.join(), 0;              // tf.train.Server(...).join()
/// t.create_variables(model.parameters(), model.names());  // chief initialises, others wait
/// for (auto batch : batches) {
///   t.pull(model.parameters());                   // values for this step
///   model.forward_backward(batch...);
///   t.push(model.gradients());                    // the ps applies the rule
/// }
/// t.finish();                                     // the chief then shuts the cluster down
/// @endcode
///
/// An embedding table is read and updated by rows: mark it with set_sparse(), then per step
/// `t.pull(vars); t.pull_rows(i, keys, rows); ...; t.push_rows(i, keys, grad_rows); t.push(grads);`
/// (pull() and push() skip it and keep the step bookkeeping).
///
/// A model that keeps its own buffers (std::vector<float>, Eigen, libtorch) passes them as one
/// set of variable_views (tensor/view.hpp, adapt/; docs/models.md) wherever tensors go, and the
/// exchanges read and write that memory in place:
/// @code
/// std::vector<dsgd::variable_view> vars = dsgd::views(values, gradients, {"w", "b"});
/// t.create_variables(vars);
/// for (auto batch : batches) { model.forward_backward(batch...); t.push_pull(vars); }
/// @endcode
///
/// The trainer holds one of two role types and forwards to it: train::ps_task
/// (train/ps_task.hpp) for a ps task, train::worker (train/worker.hpp) for a chief or worker. A
/// program that knows its role uses that type directly:
/// @code
/// dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::momentum>(spec, {"ps", 0}, opts).join();
/// dsgd::train::worker<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average> w(
///     spec, {"worker", 0}, opts);         // the same trainer_options
/// @endcode
#pragma once

#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/overlap.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dsgd {

/// One task of a training cluster: a train::ps_task or a train::worker, chosen by its job.
/// Worker calls on a ps task, and join() on a worker, throw errc::invalid_argument naming the
/// call and the task ("join(): worker:0 is not a ps task").
///
/// @tparam D the device a worker computes on (the ps keeps its shards on the host)
/// @tparam P a Placement: which ps task holds which variable
/// @tparam U an UpdateRule: how the ps combines gradients
/// @tparam O an Optimizer: how a combined gradient changes a variable
/// @tparam T a Transport: how the tasks talk (TCP between processes and machines;
///         transport::inproc for tasks that are threads of one process, without a socket)
template <Device D = device::cpu, Placement P = placement::round_robin, UpdateRule U = update::sync_average,
          class O = optim::sgd, Transport T = transport::asio_tcp>
requires Optimizer<O, device::cpu>
class trainer {
 public:
  using device_type = D;
  using placement_type = P;
  using update_rule_type = U;
  using optimizer_type = O;
  using transport_type = T;
  using options = trainer_options<P, U, O>;
  using ps_task_type = train::ps_task<U, O, T>;
  using worker_type = train::worker<D, P, U, T>;
  using overlap = typename worker_type::overlap_type;
  using view_overlap = typename worker_type::view_overlap_type;  ///< overlapped() of views
  using checkpoint_at = typename worker_type::checkpoint_at;     ///< a checkpoint: dir, step

  /// The task @p task of @p spec, talking over @p transport.
  /// @throws dsgd::error when the task is not in the spec or the spec has no ps or worker
  trainer(cluster::cluster_spec spec, cluster::task_id task, options opts, D device = {}, T transport = T{})
      : role_(make_role(std::move(spec), std::move(task), std::move(opts), std::move(device), std::move(transport))) {}

  /// The task this process is, from TF_CONFIG, else Open MPI or Slurm (see
  /// cluster/environment.hpp; @p layout says how many ranks are ps tasks there). Where several
  /// tasks of the cluster share this host and OMP_NUM_THREADS is not set, the process takes its
  /// share of the cores for its kernels and says so (cluster::share_cores).
  static trainer from_environment(options opts, cluster::rank_layout layout = {}, D device = {}, T transport = T{}) {
    auto role = cluster::resolve_from_environment(layout);
    cluster::share_cores(role.cluster, role.task, dsgd::detail::or_stderr(opts.connection.log));
    return trainer(role.cluster, role.task, std::move(opts), std::move(device), std::move(transport));
  }

  trainer(trainer&&) = default;

  bool is_ps() const noexcept { return std::holds_alternative<ps_task_type>(role_); }
  bool is_chief() const noexcept { return !is_ps() && std::get<worker_type>(role_).is_chief(); }
  /// @returns this worker's index among the training replicas (0 is the chief; 0 on a ps task).
  std::size_t replica() const noexcept { return is_ps() ? 0 : std::get<worker_type>(role_).replica(); }
  /// @returns how many replicas (workers, chief included) train.
  std::size_t replicas() const { return cluster::replicas::count(cluster()); }
  const cluster::task_id& task() const noexcept {
    return std::visit([](const auto& r) -> const cluster::task_id& { return r.task(); }, role_);
  }
  const cluster::cluster_spec& cluster() const noexcept {
    return std::visit([](const auto& r) -> const cluster::cluster_spec& { return r.cluster(); }, role_);
  }
  /// @returns the placement computed by create_variables() (empty on a ps task).
  const placement::plan& plan() const noexcept {
    static const placement::plan none;
    return is_ps() ? none : std::get<worker_type>(role_).plan();
  }
  /// @returns the step of the values last pulled (0 on a ps task).
  std::uint64_t step() const noexcept { return is_ps() ? 0 : std::get<worker_type>(role_).step(); }

  /// @returns the ps role. @throws dsgd::error(errc::invalid_argument) on a worker
  ps_task_type& as_ps(const char* call = "as_ps()") {
    if (auto* p = std::get_if<ps_task_type>(&role_)) return *p;
    throw error(errc::invalid_argument, std::string(call) + ": " + task().to_string() + " is not a ps task");
  }
  /// @returns the worker role. @throws dsgd::error(errc::invalid_argument) on a ps task
  worker_type& as_worker(const char* call = "as_worker()") {
    if (auto* w = std::get_if<worker_type>(&role_)) return *w;
    throw error(errc::invalid_argument, std::string(call) + ": " + task().to_string() + " is not a worker task");
  }

  /// ps only: serves until the chief shuts the cluster down, then returns.
  void join() { as_ps("join()").join(); }

  // Worker calls: see train::worker.

  /// Marks variable @p v as read and updated by rows (train::worker::set_sparse).
  void set_sparse(std::size_t v) { as_worker("set_sparse()").set_sparse(v); }
  /// @returns whether variable @p v was marked with set_sparse() (false on a ps task).
  bool is_sparse(std::size_t v) const noexcept { return !is_ps() && std::get<worker_type>(role_).is_sparse(v); }
  /// Reads rows @p keys of variable @p v into @p out (train::worker::pull_rows).
  std::uint64_t pull_rows(std::size_t v, std::span<const std::uint64_t> keys, std::span<float> out) {
    return as_worker("pull_rows()").pull_rows(v, keys, out);
  }
  /// Sends gradient rows for rows @p keys of variable @p v (train::worker::push_rows).
  std::size_t push_rows(std::size_t v, std::span<const std::uint64_t> keys, std::span<const float> grads) {
    return as_worker("push_rows()").push_rows(v, keys, grads);
  }
  /// Makes dynamic embedding table @p id on every ps task (train::worker::create_table).
  void create_table(std::uint32_t id, const embedding::table_spec& spec) {
    as_worker("create_table()").create_table(id, spec);
  }
  /// Reads the rows of @p keys of table @p id for this step (train::worker::pull_table).
  std::uint64_t pull_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<float> out) {
    return as_worker("pull_table()").pull_table(id, keys, out);
  }
  /// pull_table() of several tables in one round trip (train::worker::pull_tables).
  std::uint64_t pull_tables(std::initializer_list<typename worker_type::table_lookup> lookups) {
    return as_worker("pull_tables()").pull_tables(lookups);
  }
  /// push_table() of several tables in one round trip (train::worker::push_tables).
  std::uint64_t push_tables(std::initializer_list<typename worker_type::table_update> updates) {
    return as_worker("push_tables()").push_tables(updates);
  }
  /// Reads rows of table @p id for an evaluation, admitting none (train::worker::read_table).
  std::uint64_t read_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<float> out) {
    return as_worker("read_table()").read_table(id, keys, out);
  }
  /// Table @p id's counts over the ps tasks (train::worker::table_stats).
  embedding::table_counts table_stats(std::uint32_t id) { return as_worker("table_stats()").table_stats(id); }
  /// Sends gradient rows of table @p id (train::worker::push_table). @returns the keys dropped.
  std::uint64_t push_table(std::uint32_t id, std::span<const std::uint64_t> keys, std::span<const float> grads) {
    return as_worker("push_table()").push_table(id, keys, grads);
  }
  /// Places, connects, and creates or waits for the variables (train::worker::create_variables).
  void create_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                        std::uint64_t step = 0) {
    as_worker("create_variables()").create_variables(variables, names, step);
  }
  /// create_variables() of a model's own buffers (train::worker::create_variables(variable_views)).
  void create_variables(variable_views variables, std::uint64_t step = 0) {
    as_worker("create_variables()").create_variables(variables, step);
  }
  /// create_variables() from checkpoint @p step in @p dir (train::worker::restore_variables).
  void restore_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, std::uint64_t step) {
    as_worker("restore_variables()").restore_variables(variables, names, dir, step);
  }
  /// restore_variables() into a model's own buffers (train::worker::restore_variables).
  void restore_variables(variable_views variables, const std::filesystem::path& dir, std::uint64_t step) {
    as_worker("restore_variables()").restore_variables(variables, dir, step);
  }
  /// Chief: every ps task writes its part of checkpoint step() (train::worker::save_shards).
  /// With @p tables_delta_of, an incremental checkpoint (tables: the rows changed since it).
  void save_shards(const std::filesystem::path& dir, std::optional<std::uint64_t> tables_delta_of = std::nullopt) {
    as_worker("save_shards()").save_shards(dir, tables_delta_of);
  }
  /// @returns this worker's error-feedback residuals (train::worker::residuals).
  client::residuals residuals() { return as_worker("residuals()").residuals(); }
  /// Re-creates this task's session after a recoverable failure (train::worker::recover).
  void recover(std::vector<tensor<D>>& variables,
               const std::optional<std::pair<std::filesystem::path, std::uint64_t>>& checkpoint = std::nullopt,
               std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max()) {
    as_worker("recover()").recover(variables, checkpoint, until);
  }
  /// recover() into a model's own buffers (train::worker::recover).
  void recover(variable_views variables, const std::optional<checkpoint_at>& checkpoint = std::nullopt,
               std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max()) {
    as_worker("recover()").recover(variables, checkpoint, until);
  }
  /// @returns true for the errors recover() is for (train::worker::recoverable).
  static bool recoverable(const error_code& ec) noexcept { return worker_type::recoverable(ec); }
  /// Reads the values to compute on next into @p variables (train::worker::pull). @returns their step
  std::uint64_t pull(std::vector<tensor<D>>& variables) { return as_worker("pull()").pull(variables); }
  /// pull() into the values of a model's own buffers (train::worker::pull).
  std::uint64_t pull(variable_views variables) { return as_worker("pull()").pull(variables); }
  /// Sends @p gradients computed on the values of step() (train::worker::push).
  std::size_t push(const std::vector<tensor<D>>& gradients) { return as_worker("push()").push(gradients); }
  /// push() of the gradients of a model's own buffers (train::worker::push).
  std::size_t push(variable_views variables) { return as_worker("push()").push(variables); }
  /// push(@p gradients), then pull(@p variables), in one exchange (train::worker::push_pull).
  std::size_t push_pull(const std::vector<tensor<D>>& gradients, std::vector<tensor<D>>& variables) {
    return as_worker("push_pull()").push_pull(gradients, variables);
  }
  /// push_pull() of a model's own buffers, gradients pushed and values pulled (train::worker::push_pull).
  std::size_t push_pull(variable_views variables) { return as_worker("push_pull()").push_pull(variables); }
  /// Starts communication overlapped with the model's compute (train::overlap).
  overlap overlapped(std::vector<tensor<D>>& variables, const std::vector<tensor<D>>& gradients) {
    return as_worker("overlapped()").overlapped(variables, gradients);
  }
  /// overlapped() on a model's own buffers (train::overlap of variable_views).
  view_overlap overlapped(variable_views variables) { return as_worker("overlapped()").overlapped(variables); }
  /// @returns how many of this replica's pushes the ps tasks had received when it last
  /// registered (train::worker::pushes_received; 0 on a ps task).
  std::uint64_t pushes_received() const noexcept {
    return is_ps() ? 0 : std::get<worker_type>(role_).pushes_received();
  }
  /// This worker has no more data; the chief then shuts the cluster down (train::worker::finish).
  void finish() { as_worker("finish()").finish(); }

 private:
  static std::variant<ps_task_type, worker_type> make_role(cluster::cluster_spec spec, cluster::task_id task,
                                                           options opts, D device, T transport) {
    opts.connection.log = dsgd::detail::or_stderr(std::move(opts.connection.log));
    validate(opts);
    if (!spec.contains(task))
      throw error(errc::bad_cluster_spec, "task " + task.to_string() + " is not in the cluster spec");
    if (task.job == "ps")
      return std::variant<ps_task_type, worker_type>(std::in_place_type<ps_task_type>, std::move(spec), std::move(task),
                                                     opts, std::move(transport));
    return std::variant<ps_task_type, worker_type>(std::in_place_type<worker_type>, std::move(spec), std::move(task),
                                                   opts, std::move(device), std::move(transport));
  }

  std::variant<ps_task_type, worker_type> role_;
};

}  // namespace dsgd
