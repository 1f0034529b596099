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
/// trainer t = trainer::from_environment({.token = "..."});
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
#pragma once

#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/server/ps_client.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/update/sync_average.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsgd {

/// Settings of a trainer; the policies are values with defaults.
template <class P, class U, class O>
struct trainer_options {
  /// Every connection of this task: the cluster token (every task must use the same one), TLS,
  /// caps, chunk size, payload CRCs, the dead-peer deadline, shared memory, the log (stderr when
  /// empty).
  transport::tcp_options connection{};
  /// ps tasks: what they do with requests (deadlines, limits). A worker waits as long for the
  /// chief to initialise the variables (ready_timeout).
  server::serving_options serving{.step_timeout = std::chrono::milliseconds{120'000},
                                  .ready_timeout = std::chrono::milliseconds{300'000}};
  /// Workers: connect retries (startup_timeout: how long to keep retrying an unreachable ps at
  /// start) and request deadlines. A request_timeout of 0 (the default) is derived from the ps
  /// deadlines: max(serving.step_timeout, serving.ready_timeout) + 30 s, so that a slow step is
  /// reported by the ps with its reason before the worker gives up.
  server::request_options requests{.startup_timeout = std::chrono::milliseconds{120'000},
                                   .request_timeout = std::chrono::milliseconds{0}};
  O optimizer{};  ///< how a ps applies a combined gradient
  U rule{};       ///< how a ps combines gradients
  P placement{};  ///< which ps task holds which variable
};

/// Checks @p o, naming a bad field by its path ("trainer_options.serving.step_timeout").
/// @throws dsgd::error(errc::invalid_argument)
template <class P, class U, class O>
void validate(const trainer_options<P, U, O>& o, std::string_view path = "trainer_options") {
  transport::validate(o.connection, std::string(path) + ".connection");
  server::validate(o.serving, std::string(path) + ".serving");
  auto requests = o.requests;
  if (requests.request_timeout.count() == 0) requests.request_timeout = std::chrono::milliseconds{1};  // derived
  server::validate(requests, std::string(path) + ".requests");
}

/// One task of a training cluster.
///
/// @tparam D the device a worker computes on (the ps keeps its shards on the host)
/// @tparam P a Placement: which ps task holds which variable
/// @tparam U an UpdateRule: how the ps combines gradients
/// @tparam O an Optimizer: how a combined gradient changes a variable
template <Device D = device::cpu, Placement P = placement::round_robin, UpdateRule U = update::sync_average,
          class O = optim::sgd>
  requires Optimizer<O, device::cpu>
class trainer {
 public:
  using device_type = D;
  using placement_type = P;
  using update_rule_type = U;
  using optimizer_type = O;
  using options = trainer_options<P, U, O>;

  /// The task @p task of @p spec.
  /// @throws dsgd::error when the task is not in the spec or the spec has no ps or worker
  trainer(cluster::cluster_spec spec, cluster::task_id task, options opts, D device = {})
      : spec_(std::move(spec)), task_(std::move(task)), opts_(std::move(opts)), device_(std::move(device)) {
    opts_.connection.log = dsgd::detail::or_stderr(std::move(opts_.connection.log));
    validate(opts_);
    if (!spec_.contains(task_))
      throw error(errc::bad_cluster_spec, "task " + task_.to_string() + " is not in the cluster spec");
    if (!is_ps()) {
      replica_ = cluster::replicas::index_of(spec_, task_);
      server::client_options c{opts_.connection, opts_.requests};
      if (c.requests.request_timeout.count() == 0)
        c.requests.request_timeout = std::max(opts_.serving.step_timeout, opts_.serving.ready_timeout) + std::chrono::seconds(30);
      client_ = std::make_unique<server::ps_client>(spec_, task_, c);
    }
  }

  /// The task this process is, from TF_CONFIG, else Open MPI or Slurm (see
  /// cluster/environment.hpp; @p layout says how many ranks are ps tasks there).
  static trainer from_environment(options opts, cluster::rank_layout layout = {}, D device = {}) {
    auto role = cluster::resolve_from_environment(layout);
    return trainer(role.cluster, role.task, std::move(opts), std::move(device));
  }

  trainer(trainer&&) = default;

  bool is_ps() const noexcept { return task_.job == "ps"; }
  bool is_chief() const { return !is_ps() && cluster::replicas::is_chief(spec_, task_); }
  /// @returns this worker's index among the training replicas (0 is the chief).
  std::size_t replica() const noexcept { return replica_; }
  /// @returns how many replicas (workers, chief included) train.
  std::size_t replicas() const { return cluster::replicas::count(spec_); }
  const cluster::task_id& task() const noexcept { return task_; }
  const cluster::cluster_spec& cluster() const noexcept { return spec_; }
  /// @returns the placement computed by create_variables().
  const placement::plan& plan() const noexcept { return plan_; }
  /// @returns the step of the values last pulled.
  std::uint64_t step() const noexcept { return step_; }

  /// Marks variable @p v (creation order; rank 2 or more) as read and updated by rows:
  /// pull() and push() skip it from now on; use pull_rows() and push_rows().
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
    return client_->pull_rows(plan_, v, keys, out, pushes_ == 0 ? 0 : U::next_pull(pushed_at_, pushes_));
  }

  /// Sends gradient rows @p grads (host memory, keys.size() x row width) for rows @p keys of
  /// variable @p v, computed on the values of step(); push() then ends the step. Duplicate keys
  /// add up. See ps_client::push_rows. @returns how many shards dropped them.
  std::size_t push_rows(std::size_t v, std::span<const std::uint64_t> keys, std::span<const float> grads) {
    return client_->push_rows(plan_, v, keys, grads, step_, update::applies_each_push_v<U>);
  }

  /// ps only: serves until the chief shuts the cluster down, then returns.
  void join() {
    if (!is_ps()) throw error(errc::invalid_argument, "join(): " + task_.to_string() + " is not a ps task");
    server::ps_options<U, O> o{opts_.connection, opts_.serving, opts_.optimizer, opts_.rule};
    server::parameter_server<U, O> ps(spec_, task_.index, o);
    ps.join();
  }

  /// Places the variables (in creation order) over the ps tasks, connects to them, checks
  /// every worker placed alike, and (chief) creates them with their current values at step
  /// @p step (non-zero when they come from a checkpoint); the others wait until the chief
  /// has. Values are then pulled into @p variables.
  void create_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                        std::uint64_t step = 0) {
    place(variables, names);
    client_->connect();
    client_->register_worker(plan_, replica_, is_chief());
    if (is_chief()) {
      initialize(variables, step);
      auto report = plan_.load_report();
      report.pop_back();  // the final newline; log adds its own
      opts_.connection.log(task_.to_string() + ": variables placed\n" + report);
    }
    client_->wait_ready();
    resync(variables);
  }

  /// create_variables() from a checkpoint: the chief has every ps task read its shards (values,
  /// optimizer slots and counters) from checkpoint @p step in @p dir, a directory all of them
  /// reach; the others wait until it has. Values are then pulled into @p variables.
  /// @throws dsgd::error what a ps answers: errc::checkpoint_corrupt naming a damaged file,
  ///         errc::shape_mismatch naming a variable whose shape differs from the model's
  void restore_variables(std::vector<tensor<D>>& variables, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, std::uint64_t step) {
    place(variables, names);
    client_->connect();
    client_->register_worker(plan_, replica_, is_chief());
    if (is_chief()) {
      client_->restore(std::filesystem::absolute(dir), step);
      opts_.connection.log(task_.to_string() + ": restored checkpoint " + std::to_string(step) + " from " + dir.string());
    }
    client_->wait_ready();
    resync(variables);
  }

  /// Chief: every ps task writes its part of checkpoint step() into @p dir (values, optimizer
  /// slots and counters of its shards); checkpoint::saver::commit() then makes it a checkpoint.
  void save_shards(const std::filesystem::path& dir) { client_->save(std::filesystem::absolute(dir), step_); }

  /// Re-creates this task's session after a recoverable failure (a ps lost and restarted, a
  /// restore by the chief): reconnects to every ps task it lost (retrying until the startup
  /// timeout), registers again, and pulls the values it computes on next, counting pushes
  /// afresh. The chief first restores checkpoint @p checkpoint (dir, step) if given, else
  /// re-initialises every ps task from @p variables, its last pulled values, at step().
  /// @throws dsgd::error when a ps stays unreachable, or a non-recoverable error
  void recover(std::vector<tensor<D>>& variables,
               const std::optional<std::pair<std::filesystem::path, std::uint64_t>>& checkpoint = std::nullopt) {
    client_->connect();
    client_->register_worker(plan_, replica_, is_chief());
    if (is_chief()) {
      if (checkpoint) {
        client_->restore(std::filesystem::absolute(checkpoint->first), checkpoint->second);
      } else {
        initialize(variables, step_);
      }
    }
    client_->wait_ready();
    resync(variables);
  }

  /// @returns true for the errors recover() is for: a ps connection lost or unreachable, or a
  /// session aborted by a restore.
  static bool recoverable(const error_code& ec) noexcept {
    return ec == errc::peer_lost || ec == errc::peer_unreachable || ec == errc::aborted;
  }

  /// Reads the values this worker may compute on next into @p variables: for sync the next
  /// step (waiting for the slowest replica), for SSP within the staleness bound, for async the
  /// latest. @returns their step.
  std::uint64_t pull(std::vector<tensor<D>>& variables) {
    auto want = pushes_ == 0 ? 0 : U::next_pull(pushed_at_, pushes_);
    auto views = host_views(variables);
    step_ = client_->pull(plan_, want, views);
    copy_back(variables);
    return step_;
  }

  /// Sends @p gradients (those of variables not marked sparse), computed on the values of
  /// step(). @returns how many shards dropped them (a backup worker that came late).
  std::size_t push(const std::vector<tensor<D>>& gradients) {
    auto views = host_views(gradients);
    std::vector<std::span<const float>> values(views.begin(), views.end());
    const auto dropped = client_->push(plan_, step_, values, update::applies_each_push_v<U>);
    count_push();
    return dropped;
  }

  /// push(@p gradients), then pull(@p variables), in one exchange: the pull goes out right
  /// behind the push on every connection instead of after the push's answers, which saves a
  /// round trip per step. Each ps takes a connection's messages in order, so the pull still
  /// sees the push: the same values and steps as push() then pull(). @returns how many shards
  /// dropped the push, as push().
  std::size_t push_pull(const std::vector<tensor<D>>& gradients, std::vector<tensor<D>>& variables) {
    if constexpr (!D::is_host) {  // one staging area: the exchanges go one after the other
      const auto dropped = push(gradients);
      pull(variables);
      return dropped;
    } else {
      const auto grads = host_views(gradients);
      const std::vector<std::span<const float>> values(grads.begin(), grads.end());
      auto pushing = client_->start_push(plan_, step_, values, update::applies_each_push_v<U>);
      for (std::size_t v = 0; v < values.size(); ++v) client_->push_variable(pushing, v);
      auto pulling = client_->start_pull(plan_, pull_after_push(), host_views(variables));
      const auto dropped = finish_behind(pushing, pulling);
      step_ = client_->wait(pulling);
      return dropped;
    }
  }

  class overlap;

  /// Starts communication overlapped with the model's compute on @p variables and their
  /// @p gradients (see overlap); the values in @p variables are those of step() to begin with.
  overlap overlapped(std::vector<tensor<D>>& variables, const std::vector<tensor<D>>& gradients) {
    return overlap(*this, variables, gradients);
  }

  /// @returns how many of this replica's pushes the ps tasks had received when this worker last
  /// registered (create_variables(), recover()), counting those of earlier processes of the
  /// same task: each arrived exactly once. Under async and SSP a restarted worker resumes its
  /// data at this push (see ps_client::pushes_received()).
  std::uint64_t pushes_received() const noexcept { return client_->pushes_received(); }

  /// This worker has no more data. The chief then waits for every worker to finish and shuts
  /// the ps tasks down, which ends their join().
  void finish() {
    try {
      client_->finish();
    } catch (const dsgd::error& e) {
      if (e.code() != errc::aborted) throw;
      client_->register_worker(plan_, replica_, is_chief());  // a restore came first: finish anyway
      client_->finish();
    }
    if (is_chief()) client_->shutdown_cluster();
  }

  /// A step's communication overlapped with the model's compute, variable by variable, the way
  /// PyTorch DDP overlaps its all-reduce with the backward pass: each gradient is pushed as soon
  /// as the backward pass has finished it (the last layers' first), and the next step's values
  /// are pulled in the order the forward pass reads them, each waited for only when the forward
  /// pass first reads it. A model drives it through two hooks (model::feed_forward::
  /// forward_backward(images, labels, n, hooks) calls them):
  ///   - parameters_needed(v): before the step first reads variable v; waits for its values;
  ///   - gradient_ready(v): once the step's gradient of v is final; sends it.
  /// end_step() then sends any gradient not sent yet and, right behind it, the pull of the next
  /// step's values, and waits for the push's answers only. Every step computes on the values and pushes the
  /// gradients that push() then pull() would: only the waiting moves. The gradients must stay
  /// untouched from gradient_ready() to end_step(), the values unread from end_step() to
  /// parameters_needed().
  ///
  /// @code
  /// auto ex = t.overlapped(net.parameters(), net.gradients());
  /// for (std::size_t i = 0; i < steps; ++i) {
  ///   auto b = batches.next();                        // while the values arrive
  ///   net.forward_backward(b.images, b.labels, b.size, ex);
  ///   ex.end_step();
  /// }
  /// @endcode
  /// One overlap per trainer at a time; the trainer's own pull() and push() must not be called
  /// while it lives, and evaluating the model needs step() first (the values may still be
  /// arriving). Its destructor completes the pull in flight. A hook or end_step() throws what
  /// pull() and push() throw; then destroy the overlap, recover() the trainer if the error is
  /// recoverable(), and start a new one.
  class overlap {
   public:
    overlap(trainer& t, std::vector<tensor<D>>& variables, const std::vector<tensor<D>>& gradients)
        : t_(t), variables_(variables), gradients_(gradients), needed_(variables.size(), true) {
      if (gradients.size() != variables.size())
        throw error(errc::shape_mismatch, "trainer::overlapped: " + std::to_string(gradients.size()) +
                                              " gradients for " + std::to_string(variables.size()) + " variables");
      if constexpr (!D::is_host) {
        pull_staging_.resize(variables.size());
        push_staging_.resize(variables.size());
        for (std::size_t v = 0; v < variables.size(); ++v) {
          pull_staging_[v].resize(t_.is_sparse(v) ? 0 : variables[v].size());
          push_staging_[v].resize(t_.is_sparse(v) ? 0 : gradients[v].size());
        }
      }
    }
    overlap(const overlap&) = delete;
    overlap& operator=(const overlap&) = delete;
    /// Completes the pull in flight, so that no value lands after it; a failure is logged.
    ~overlap() {
      try {
        if (pull_.pending()) t_.client_->wait(pull_);
        if (push_.pending()) t_.client_->wait(push_);
      } catch (const std::exception& e) {
        t_.opts_.connection.log(std::string("trainer::overlap: the exchange in flight failed: ") + e.what());
      }
    }

    /// Waits until variable @p v holds the values of the step being computed.
    void parameters_needed(std::size_t v) {
      if (!pull_.pending() || v >= needed_.size() || !needed_[v]) return;
      t_.client_->wait(pull_, v);
      needed_[v] = false;
      if constexpr (!D::is_host)
        if (!t_.is_sparse(v)) variables_[v].assign(pull_staging_[v]);
      if (!pull_.pending()) t_.step_ = t_.client_->wait(pull_);
    }

    /// Sends the gradient of variable @p v (final for this step) now; once a step.
    void gradient_ready(std::size_t v) {
      if (v >= gradients_.size() || t_.is_sparse(v)) return;
      begin_push();
      if (push_.sent(v)) return;
      if constexpr (!D::is_host) {
        auto host = gradients_[v].to_host();
        std::copy(host.begin(), host.end(), push_staging_[v].begin());
      }
      t_.client_->push_variable(push_, v);
      t_.client_->flush();  // on its way while the backward pass goes on
    }

    /// Ends the step: sends the gradients not sent yet and, right behind them, the pull of the
    /// next step's values, then waits for the push's answers. @returns how many shards dropped
    /// the push (a backup worker that came late), as trainer::push().
    std::size_t end_step() {
      for (std::size_t v = 0; v < gradients_.size(); ++v) gradient_ready(v);
      begin_push();  // every variable is sparse: the push still counts the step
      // The pull goes out right behind the push, as in push_pull().
      auto pulling = t_.client_->start_pull(t_.plan_, t_.pull_after_push(), spans(variables_, pull_staging_));
      started_ = false;
      const auto dropped = t_.finish_behind(push_, pulling);
      push_ = {};
      pull_ = std::move(pulling);
      std::fill(needed_.begin(), needed_.end(), true);
      return dropped;
    }

    /// Waits for every value of the pull in flight. @returns the step they belong to (the
    /// trainer's step()).
    std::uint64_t step() {
      wait_values();
      return t_.step_;
    }

   private:
    // Opens the step's push, at the step of the values it was computed on.
    void begin_push() {
      if (started_) return;
      wait_values();  // a model that did not ask for every variable
      const auto views = spans(gradients_, push_staging_);
      const std::vector<std::span<const float>> grads(views.begin(), views.end());
      push_ = t_.client_->start_push(t_.plan_, t_.step_, grads, update::applies_each_push_v<U>);
      started_ = true;
    }
    void wait_values() {
      for (std::size_t v = 0; v < needed_.size(); ++v) parameters_needed(v);
    }
    // The host memory the client reads or writes for each tensor: the tensor's own on a host
    // device, its staging copy otherwise; none for a sparse variable.
    std::vector<std::span<float>> spans(const std::vector<tensor<D>>& tensors,
                                        std::vector<std::vector<float>>& staging) const {
      std::vector<std::span<float>> out(tensors.size());
      for (std::size_t v = 0; v < tensors.size(); ++v) {
        if (t_.is_sparse(v)) continue;
        if constexpr (D::is_host)
          out[v] = {const_cast<float*>(tensors[v].data()), tensors[v].size()};
        else
          out[v] = staging[v];
      }
      return out;
    }

    trainer& t_;
    std::vector<tensor<D>>& variables_;
    const std::vector<tensor<D>>& gradients_;
    server::pull_operation pull_;
    server::push_operation push_;
    bool started_ = false;
    std::vector<bool> needed_;  // variables whose values of this step are still to be waited for
    std::vector<std::vector<float>> pull_staging_, push_staging_;  // off-host devices only
  };

 private:
  // Waits for the answers to @p pushing, a push with the pull @p pulling sent right behind it,
  // and counts the push. If the push failed, first collects the pull (whose values must not
  // land later), then throws the push's error.
  std::size_t finish_behind(server::push_operation& pushing, server::pull_operation& pulling) {
    std::size_t dropped = 0;
    try {
      dropped = client_->finish_push(pushing);
    } catch (const dsgd::error&) {
      try {
        client_->wait(pulling);
      } catch (const dsgd::error&) {  // the push's error is the one to report
      }
      throw;
    }
    count_push();
    return dropped;
  }
  // A push of gradients computed at step() was answered.
  void count_push() {
    pushed_at_ = step_;
    ++pushes_;
  }
  // The step pull() asks for once the push of step() is counted (push_pull() asks it before).
  std::uint64_t pull_after_push() const { return U::next_pull(step_, pushes_ + 1); }

  void place(const std::vector<tensor<D>>& variables, const std::vector<std::string>& names) {
    std::vector<placement::variable_info> info;
    for (std::size_t i = 0; i < variables.size(); ++i)
      info.push_back({i < names.size() ? names[i] : "var" + std::to_string(i), variables[i].shape()});
    plan_ = opts_.placement.place(info, spec_.num_tasks("ps"));
  }
  void initialize(std::vector<tensor<D>>& variables, std::uint64_t step) {
    auto host = host_views(variables, true);
    std::vector<std::span<const float>> values(host.begin(), host.end());
    client_->initialize(plan_, values, step);
  }
  // Pulls whatever the ps tasks hold now and counts pushes afresh from there.
  void resync(std::vector<tensor<D>>& variables) {
    pushes_ = 0;
    pushed_at_ = 0;
    pull(variables);
  }

  // Host views of the tensors: the tensors' own memory on a host device (pulls land straight
  // in the model), staging copies otherwise; an empty view for a sparse variable.
  template <class Tensors>
  std::vector<std::span<float>> host_views(Tensors& tensors, bool with_sparse = false) {
    std::vector<std::span<float>> out;
    auto skip = [&](std::size_t i) { return !with_sparse && is_sparse(i); };
    if constexpr (D::is_host) {
      for (std::size_t i = 0; i < tensors.size(); ++i)
        out.emplace_back(skip(i) ? std::span<float>() : std::span<float>(const_cast<float*>(tensors[i].data()),
                                                                              tensors[i].size()));
    } else {
      staging_.resize(tensors.size());
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        staging_[i] = skip(i) ? std::vector<float>() : tensors[i].to_host();
        out.emplace_back(staging_[i]);
      }
    }
    return out;
  }
  void copy_back(std::vector<tensor<D>>& tensors) {
    if constexpr (!D::is_host)
      for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!is_sparse(i)) tensors[i].assign(staging_[i]);
  }

  cluster::cluster_spec spec_;
  cluster::task_id task_;
  options opts_;
  D device_;
  std::size_t replica_ = 0;
  std::unique_ptr<server::ps_client> client_;
  placement::plan plan_;
  std::uint64_t step_ = 0;
  std::uint64_t pushed_at_ = 0;
  std::uint64_t pushes_ = 0;
  std::vector<std::vector<float>> staging_;
  std::vector<bool> sparse_;
};

}  // namespace dsgd
