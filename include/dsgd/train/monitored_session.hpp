// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::monitored_session: TensorFlow's MonitoredTrainingSession for a dsgd trainer, over
/// dsgd::tensor variables or a model's own buffers (variable_views). The chief restores the
/// latest checkpoint (or initialises), the others wait until the variables are ready; every
/// step is one push_pull exchange (gradients clipped by their global norm first, if asked) and
/// runs the hooks (train/session_hooks.hpp: stop at step, logging, TensorBoard summaries with
/// weight histograms, a NaN guard) and the chief's checkpoint schedule (with embedding tables,
/// full and incremental: session_options::table_deltas_per_full); close() runs the final
/// hooks and shuts the cluster down from the chief. A worker whose pushes keep an error-feedback
/// residual (top_k, two_bit) writes it beside each checkpoint and takes it back on a restore.
#pragma once

#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/clip.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/saver.hpp>
#include <dsgd/train/session_hooks.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace dsgd::train {

/// Settings of a monitored session (the arguments of MonitoredTrainingSession).
struct session_options {
  /// Empty: no checkpoints, no restore. Give it to every worker, not only the chief, when pushes
  /// keep a residual (compress::top_k, two_bit): each worker then writes its residuals into the
  /// checkpoints, the chief with each one and the others on the steps schedule and at close(),
  /// so under sync with save_checkpoint_steps every checkpoint holds them (docs/compression.md).
  std::filesystem::path checkpoint_dir;
  std::uint64_t save_checkpoint_steps = 0;       ///< chief saves every N steps (0: not by steps)
  std::chrono::seconds save_checkpoint_secs{0};  ///< and/or every N seconds (0: not by time)
  std::size_t keep_checkpoints = 5;
  /// A job with embedding tables (docs/embeddings.md): N > 0 makes the chief's checkpoints
  /// incremental: after a full one, each of the next N holds of the tables only the rows
  /// changed since the checkpoint before it and the keys removed since (a delta; the dense
  /// variables are in every checkpoint in full), then a full one again. A restore reads the
  /// chain from its full base. The first checkpoint, the first after a save failed and the
  /// first after a recovery that restored no checkpoint are full. 0: every checkpoint is full.
  std::size_t table_deltas_per_full = 0;
  /// A recoverable failure (a ps lost or unreachable, a restore by the chief) re-creates the
  /// session, retrying for up to this long overall (an attempt in progress ends there too)
  /// before the error is thrown; 0: thrown at once. A ps not reached while the session is
  /// first made is no such failure (a session that never existed cannot be lost): the
  /// constructor throws errc::peer_unreachable at the trainer's startup deadline.
  std::chrono::seconds recovery_timeout{300};
  /// > 0: every step's gradients are clipped by their global norm to at most this before they
  /// are pushed (optim::clip_by_global_norm over all of this worker's gradients, as
  /// `tf.clip_by_global_norm`); the clipped copy is made only on the steps that clip. 0: off.
  float clip_norm = 0;
  /// Where the session reports a failure it recovers from; stderr by default.
  std::function<void(std::string_view)> log;
};

/// A monitored training session over a dsgd trainer (chief or worker; not a ps task).
///
/// @code
/// dsgd::train::monitored_session session(t, net.parameters(), net.names(), std::move(hooks),
///                                        {.checkpoint_dir = "ckpt", .save_checkpoint_steps = 500});
/// while (!session.should_stop()) {
///   float loss = net.forward_backward(batch...);
///   session.run(loss, net.gradients());
/// }
/// session.close();
/// @endcode
/// A session of a model's own buffers takes their views instead (tensor/view.hpp, adapt/), and
/// run() pushes the gradients they point at: `monitored_session s(t, dsgd::views(values,
/// gradients, names), std::move(hooks)); ... s.run(loss);`. Where the gradients' storage moves
/// between steps (a libtorch module's .grad()), each step hands the session that step's views:
/// `monitored_session s(t, params.values(), ...); ... s.run(loss, params.with_gradients());`.
template <class Trainer>
class monitored_session {
 public:
  using device_type = typename Trainer::device_type;
  using hook_type = session_hook<device_type>;

  /// Creates the session: the chief has the ps tasks restore the latest checkpoint in
  /// options.checkpoint_dir (values, optimizer slots and counters; if there is one) or
  /// initialises them with @p variables; every task then pulls the values it starts from.
  monitored_session(Trainer& trainer, std::vector<tensor<device_type>>& variables, std::vector<std::string> names,
                    std::vector<std::unique_ptr<hook_type>> hooks, session_options options = {})
      : trainer_(trainer),
        tensors_(&variables),
        names_(std::move(names)),
        hooks_(std::move(hooks)),
        options_(std::move(options)) {
    open();
  }
  /// A session of a model's own buffers (their names, values and gradients: tensor/view.hpp,
  /// adapt/): pulls land in the values in place, and run(loss) pushes the gradients. The
  /// buffers must stay where they are for the session's life.
  monitored_session(Trainer& trainer, variable_views variables, std::vector<std::unique_ptr<hook_type>> hooks,
                    session_options options = {})
      : trainer_(trainer),
        views_(variables.begin(), variables.end()),
        hooks_(std::move(hooks)),
        options_(std::move(options)) {
    for (const auto& v : views_) names_.push_back(v.name);
    open();
  }

  monitored_session(const monitored_session&) = delete;
  monitored_session& operator=(const monitored_session&) = delete;

  /// @returns the checkpoint step the chief restored, if it restored one.
  std::optional<std::uint64_t> restored_step() const noexcept { return restored_; }
  /// @returns the step of the values held now.
  std::uint64_t step() const noexcept { return trainer_.step(); }
  /// @returns true once a hook asked to stop.
  bool should_stop() const noexcept { return stop_; }
  /// @returns how many times the session was re-created after a recoverable failure.
  std::size_t recoveries() const noexcept { return recoveries_; }

  /// Pushes @p gradients (computed on the values of step()) and pulls the next values into the
  /// variables in one exchange (trainer::push_pull, the fast path: the same values as a push
  /// then a pull, one round trip less), then runs the hooks and the chief's checkpoint
  /// schedule. After a recoverable failure (see trainer::recoverable) the session is re-created
  /// instead, from the latest checkpoint where the chief has one: the variables then hold its
  /// values, this step's gradients are dropped and the hooks do not run for it.
  /// @returns how many shards dropped the push as stale (a backup worker that came late; 0
  ///          after a recovery)
  /// @throws dsgd::error a non-recoverable error, or a recoverable one that lasted longer than
  ///         session_options::recovery_timeout; errc::invalid_argument in a session of views
  std::size_t run(float loss, const std::vector<tensor<device_type>>& gradients) {
    if (!tensors_)
      throw error(errc::invalid_argument,
                  "monitored_session::run(loss, gradients): this session was created "
                  "with views; call run(loss), which pushes their gradients");
    const auto& pushed = clipped(gradients);
    return run_step(
        loss, [&] { return trainer_.push_pull(pushed, *tensors_); }, run_values_of(pushed));
  }
  /// run() of a session of views: pushes the gradients the views hold and pulls into their values.
  /// @throws dsgd::error as run(loss, gradients); errc::invalid_argument in a session of tensors
  std::size_t run(float loss) {
    if (tensors_)
      throw error(errc::invalid_argument,
                  "monitored_session::run(loss): this session was created with tensors; "
                  "call run(loss, gradients)");
    variable_views pushed = clipped_views();
    return run_step(
        loss, [&] { return trainer_.push_pull(pushed); }, run_values_of(pushed));
  }
  /// run() of a session of views whose buffers move between steps: @p current holds this step's
  /// views of the session's variables, in its order, with their gradients (a libtorch module's
  /// module_views::with_gradients(): zero_grad() may free a .grad() that backward() then makes
  /// anew). The session keeps their values for its restores, recoveries and hooks; their
  /// gradients only for this step's hooks (close()'s final hooks see none of them).
  /// @throws dsgd::error errc::shape_mismatch naming the variable when @p current holds other
  ///         variables (count, name or shape) than the session was created with; as run(loss)
  std::size_t run(float loss, variable_views current) {
    if (tensors_)
      throw error(errc::invalid_argument,
                  "monitored_session::run(loss, views): this session was created with "
                  "tensors; call run(loss, gradients)");
    constexpr std::string_view where = "monitored_session::run(loss, views)";
    if (current.size() != views_.size())
      throw error(errc::shape_mismatch, std::string(where) + ": " + std::to_string(current.size()) +
                                            " views; the session was created with " + std::to_string(views_.size()) +
                                            " variables");
    for (std::size_t i = 0; i < current.size(); ++i)
      if (current[i].name != views_[i].name || current[i].shape != views_[i].shape)
        throw error(errc::shape_mismatch, std::string(where) + ": view " + std::to_string(i) + " is '" +
                                              current[i].name + "' of shape " + current[i].shape.to_string() +
                                              "; the session's variable " + std::to_string(i) + " is '" +
                                              views_[i].name + "' of shape " + views_[i].shape.to_string());
    std::copy(current.begin(), current.end(), views_.begin());
    // The gradients' storage is the caller's to free once the step is done.
    struct forget_gradients {
      std::vector<variable_view>& views;
      ~forget_gradients() {
        for (auto& v : views) v.gradients = {};
      }
    } forget{views_};
    return run(loss);
  }

  /// Runs @p work, a step's requests the session does not make itself (an embedding table's
  /// lookups and pushes, say), and after a recoverable failure in it re-creates the session as
  /// run() does. @returns false after a recovery: the step's values are gone (the variables
  /// hold the restored ones), so its work is to be dropped and the step begun again.
  /// @throws dsgd::error as run()
  template <class Work>
  bool guard(Work&& work) {
    try {
      std::forward<Work>(work)();
      return true;
    } catch (const dsgd::error& e) {
      if (!Trainer::recoverable(e.code()) || options_.recovery_timeout.count() == 0) throw;
      recover(e);
      return false;
    }
  }

  /// Runs the final hooks, saves a last checkpoint (chief) and finishes this worker; the chief
  /// then shuts the cluster down once every worker has finished.
  void close() {
    if (closed_) return;
    closed_ = true;
    if (saver_ && trainer_.step() != last_save_step_) save();
    save_residuals_of_worker(true);
    last_.step = trainer_.step();
    if (tensors_) {
      last_.variables = tensors_;
      last_.names = &names_;
    } else if (last_.views.empty()) {
      last_.views = views_;
    }
    for (auto& h : hooks_) h->end(last_);
    trainer_.finish();
  }

 private:
  // The constructors' common part: restore or initialise, then the hooks' begin().
  void open() {
    options_.log = dsgd::detail::or_stderr(std::move(options_.log));
    if (!(options_.clip_norm >= 0.f) || !std::isfinite(options_.clip_norm))
      throw error(errc::invalid_argument, "session_options.clip_norm is " + std::to_string(options_.clip_norm) +
                                              "; expected 0 (off) or a finite number > 0");
    if (trainer_.is_chief() && !options_.checkpoint_dir.empty()) {
      saver_.emplace(options_.checkpoint_dir, options_.keep_checkpoints);
      restored_ = saver_->latest();
      if (restored_) based_on(*restored_);
    }
    // A ps lost while the session is being made is recovered from as in run(): the variables
    // are placed by then, and recover() opens the session anew. A ps never reached is not: a
    // session that never existed cannot be lost, so the task fails at its startup deadline,
    // naming the ps tasks and addresses it could not reach, instead of waiting out the
    // recovery deadline.
    try {
      if (tensors_) {
        if (restored_) trainer_.restore_variables(*tensors_, names_, options_.checkpoint_dir, *restored_);
        else trainer_.create_variables(*tensors_, names_);
      } else {
        if (restored_) trainer_.restore_variables(variable_views(views_), options_.checkpoint_dir, *restored_);
        else trainer_.create_variables(variable_views(views_));
      }
    } catch (const dsgd::error& e) {
      if (e.code() == errc::peer_unreachable || !Trainer::recoverable(e.code()) ||
          options_.recovery_timeout.count() == 0)
        throw;
      recover(e);
    }
    restore_residuals();
    last_save_time_ = std::chrono::steady_clock::now();
    last_save_step_ = trainer_.step();
    for (auto& h : hooks_) h->begin(trainer_.step(), trainer_.is_chief());
  }

  // Error-feedback residuals (top_k, two_bit) are a worker's own state: each worker writes its
  // file of a checkpoint's step, and takes it back wherever a restore or recovery lands on that
  // step, so the pushes that follow are those of an uninterrupted run. Without the file (a
  // seconds-only schedule on a non-chief, another placement) the residuals stay as they are:
  // zero in a new process, the gradient mass not yet sent otherwise.
  void restore_residuals() {
    if (options_.checkpoint_dir.empty() || trainer_.step() == 0) return;
    auto held = trainer_.residuals();
    if (held.kept() && !held.restore(options_.checkpoint_dir, trainer_.step()))
      options_.log(trainer_.task().to_string() + ": no residual file of step " + std::to_string(trainer_.step()) +
                   " for this placement in " + options_.checkpoint_dir.string() +
                   "; error feedback goes on from the residuals held (none in a new process)");
  }
  // A worker other than the chief writes its residuals on the steps schedule, which under sync
  // meets the chief's steps; a failure to write is logged, since the file only refines a restore.
  void save_residuals_of_worker(bool at_close) {
    if (saver_ || options_.checkpoint_dir.empty()) return;
    const auto s = trainer_.step();
    const bool due_now = at_close
                             ? s != last_save_step_
                             : options_.save_checkpoint_steps && s >= last_save_step_ + options_.save_checkpoint_steps;
    if (!due_now) return;
    last_save_step_ = s;
    try {
      trainer_.residuals().save(options_.checkpoint_dir, s);
    } catch (const std::exception& e) {
      options_.log(trainer_.task().to_string() + ": residuals of step " + std::to_string(s) +
                   " not saved: " + e.what());
    }
  }

  // One step: @p exchange (the push_pull), then the hooks on @p values and the checkpoint schedule.
  template <class Exchange>
  std::size_t run_step(float loss, Exchange exchange, run_values<device_type> values) {
    std::size_t dropped = 0;
    try {
      dropped = exchange();
    } catch (const dsgd::error& e) {
      if (!Trainer::recoverable(e.code()) || options_.recovery_timeout.count() == 0) throw;
      recover(e);
      return 0;
    }
    last_ = std::move(values);
    last_.step = trainer_.step();
    last_.loss = loss;
    for (auto& h : hooks_) stop_ = h->after_run(last_) || stop_;
    if (saver_ && due()) {
      try {
        save();
      } catch (const dsgd::error& e) {
        if (!Trainer::recoverable(e.code()) || options_.recovery_timeout.count() == 0) throw;
        recover(e);
      }
    }
    save_residuals_of_worker(false);
    return dropped;
  }

  run_values<device_type> run_values_of(const std::vector<tensor<device_type>>& gradients) const {
    return {trainer_.step(), 0.f, tensors_, &gradients, &names_, {}};
  }
  run_values<device_type> run_values_of(variable_views views) const {
    return {trainer_.step(), 0.f, nullptr, nullptr, &names_, views};
  }

  // @p gradients, or a copy clipped to options_.clip_norm when their global norm exceeds it.
  const std::vector<tensor<device_type>>& clipped(const std::vector<tensor<device_type>>& gradients) {
    if (options_.clip_norm == 0.f || gradients.empty()) return gradients;
    const auto& device = gradients.front().device();
    if (!(optim::global_norm(device, gradients) > options_.clip_norm)) return gradients;
    clipped_tensors_ = gradients;
    optim::clip_by_global_norm(device, clipped_tensors_, options_.clip_norm);
    return clipped_tensors_;
  }
  // The views, or views whose gradients are a copy clipped to options_.clip_norm when the
  // gradients' global norm exceeds it.
  variable_views clipped_views() {
    if (options_.clip_norm == 0.f) return views_;
    std::vector<std::span<const float>> grads;
    for (const auto& v : views_) grads.push_back(v.gradients);
    if (!(optim::global_norm(device::cpu{}, grads) > options_.clip_norm)) return views_;
    clipped_buffers_.resize(views_.size());
    clipped_views_ = views_;
    for (std::size_t i = 0; i < views_.size(); ++i) {
      clipped_buffers_[i].assign(views_[i].gradients.begin(), views_[i].gradients.end());
      clipped_views_[i].gradients = clipped_buffers_[i];
    }
    optim::clip_by_global_norm(device::cpu{}, clipped_buffers_, options_.clip_norm);
    return clipped_views_;
  }

  bool due() const {
    auto s = trainer_.step();
    if (options_.save_checkpoint_steps && s >= last_save_step_ + options_.save_checkpoint_steps) return true;
    return options_.save_checkpoint_secs.count() > 0 &&
           std::chrono::steady_clock::now() - last_save_time_ >= options_.save_checkpoint_secs;
  }

  // Each ps task writes its data file (values, optimizer slots and counters of the shards it
  // holds, at the step the chief just pulled: under sync exactly that step) and its tables (in
  // full, or a delta of the last checkpoint: table_deltas_per_full), then the chief verifies
  // them and writes the manifest. A failure makes the next checkpoint full.
  void save() {
    const bool delta = options_.table_deltas_per_full > 0 && delta_base_ &&
                       deltas_since_full_ < options_.table_deltas_per_full && *delta_base_ < trainer_.step();
    const auto base = delta_base_;
    delta_base_.reset();
    trainer_.residuals().save(options_.checkpoint_dir, trainer_.step());
    trainer_.save_shards(options_.checkpoint_dir, delta ? base : std::nullopt);
    saver_->commit(trainer_.step(), trainer_.plan());
    delta_base_ = trainer_.step();
    deltas_since_full_ = delta ? deltas_since_full_ + 1 : 0;
    last_save_step_ = trainer_.step();
    last_save_time_ = std::chrono::steady_clock::now();
  }
  // The ps tasks restored checkpoint @p step: the next delta may build on it, and counts the
  // deltas its tables already are from their full base.
  void based_on(std::uint64_t step) {
    delta_base_.reset();
    if (options_.table_deltas_per_full == 0) return;
    deltas_since_full_ = checkpoint::table_chain(options_.checkpoint_dir, step).size() - 1;
    delta_base_ = step;
  }

  // Re-creates the session after @p failure: the chief from its latest checkpoint (or its last
  // values), everyone reconnecting and pulling anew; retried with backoff until the deadline,
  // which bounds each attempt too (its connecting and requests end there), so it is overall.
  void recover(const dsgd::error& failure) {
    const auto who = trainer_.task().to_string();
    options_.log(who + ": session lost at step " + std::to_string(trainer_.step()) + " (" + failure.what() +
                 "); re-creating it");
    const auto deadline = std::chrono::steady_clock::now() + options_.recovery_timeout;
    auto backoff = std::chrono::milliseconds(100);
    while (true) {
      try {
        std::optional<std::pair<std::filesystem::path, std::uint64_t>> from;
        if (saver_)
          if (auto latest = saver_->latest()) from.emplace(options_.checkpoint_dir, *latest);
        if (tensors_) trainer_.recover(*tensors_, from, deadline);
        else trainer_.recover(variable_views(views_), from, deadline);
        if (from) based_on(from->second);
        else delta_base_.reset();
        ++recoveries_;
        restore_residuals();
        last_save_step_ = trainer_.step();
        last_save_time_ = std::chrono::steady_clock::now();
        options_.log(who + ": session re-created at step " + std::to_string(trainer_.step()) +
                     (from ? " from checkpoint " + std::to_string(from->second) : std::string()));
        return;
      } catch (const dsgd::error& e) {
        if (!Trainer::recoverable(e.code())) throw;
        if (std::chrono::steady_clock::now() + backoff > deadline)
          throw error(e.code(), who + ": the session was not re-created within the recovery deadline of " +
                                    std::to_string(options_.recovery_timeout.count()) + " s: " + e.what());
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5'000));
    }
  }

  Trainer& trainer_;
  std::vector<tensor<device_type>>* tensors_ = nullptr;  // a session of tensors
  std::vector<variable_view> views_;                     // else a session of views
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<hook_type>> hooks_;
  session_options options_;
  std::optional<saver> saver_;
  std::optional<std::uint64_t> restored_;
  run_values<device_type> last_{};
  std::chrono::steady_clock::time_point last_save_time_;
  std::uint64_t last_save_step_ = 0;
  // The checkpoint the next delta builds on (the last committed or restored one; none: the next
  // is full) and how many deltas its tables are from their full base.
  std::optional<std::uint64_t> delta_base_;
  std::size_t deltas_since_full_ = 0;
  std::size_t recoveries_ = 0;
  bool stop_ = false;
  bool closed_ = false;
  // The clipped gradients of the steps that clip (session_options::clip_norm).
  std::vector<tensor<device_type>> clipped_tensors_;
  std::vector<std::vector<float>> clipped_buffers_;
  std::vector<variable_view> clipped_views_;
};

}  // namespace dsgd::train
