// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::ps_task: the ps role of a training cluster (TensorFlow's tf.train.Server of a ps job):
/// it serves its shards of the variables until the chief shuts the cluster down.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/detail/log.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <memory>
#include <string>
#include <utility>

namespace dsgd::train {

/// One ps task of a cluster. It holds what serving needs, the spec, its task and the ps
/// options, and binds its address only when it starts serving.
///
/// A program that runs only ps tasks uses it directly (dsgd::trainer holds one for a ps task):
/// @code
/// dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::momentum> ps(
///     spec, {"ps", 0}, {.connection = {.token = "secret"}, .optimizer = {0.1f, 0.9f, false}});
/// ps.join();  // serves until the chief shuts the cluster down
/// @endcode
///
/// @tparam U an UpdateRule: how the ps combines gradients
/// @tparam O an Optimizer: how a combined gradient changes a variable
/// @tparam T the Transport it serves on (TCP; transport::inproc for tasks as threads)
template <UpdateRule U = update::sync_average, class O = optim::sgd, Transport T = transport::asio_tcp>
requires Optimizer<O, device::cpu>
class ps_task {
 public:
  using update_rule_type = U;
  using optimizer_type = O;
  using transport_type = T;
  using options = server::ps_options<U, O>;
  using server_type = server::parameter_server<U, O, device::cpu, T>;

  /// Ps task @p task of @p spec, serving with @p opts on @p transport.
  /// @throws dsgd::error errc::invalid_argument naming a bad option ("ps_options.serving...") or a
  ///         task that is not of the ps job, errc::bad_cluster_spec for a task the spec lacks
  ps_task(cluster::cluster_spec spec, cluster::task_id task, options opts, T transport = T{})
      : ps_task(std::move(spec), std::move(task), std::move(opts), "ps_options", std::move(transport)) {}

  /// Ps task @p task of a cluster set up with @p o: its connection, serving, optimizer and rule
  /// settings (see ps_options_of()); a bad option is named by its path in @p o
  /// ("trainer_options.serving.step_timeout").
  template <class P>
  ps_task(cluster::cluster_spec spec, cluster::task_id task, const trainer_options<P, U, O>& o, T transport = T{})
      : ps_task(std::move(spec), std::move(task), (validate(o), ps_options_of(o)), nullptr, std::move(transport)) {}

  ps_task(ps_task&&) = default;
  ps_task& operator=(ps_task&&) = default;

  const cluster::task_id& task() const noexcept { return task_; }
  const cluster::cluster_spec& cluster() const noexcept { return spec_; }
  /// @returns the settings it serves with (the log filled in).
  const options& settings() const noexcept { return opts_; }

  /// Binds this task's address (port 0 in the spec picks a free one) and returns the server,
  /// which join() then runs; a later call returns the same server until join() has run it.
  /// @throws dsgd::error for an address that cannot be bound
  server_type& serve() {
    if (!server_ || joined_) {
      server_ = std::make_unique<server_type>(spec_, task_.index, opts_, device::cpu{}, transport_);
      joined_ = false;
    }
    return *server_;
  }

  /// Serves (binding first unless serve() has) until the chief shuts the cluster down, then
  /// returns. @throws dsgd::error(errc::peer_lost) when the chief was gone for
  /// serving.chief_timeout, and what serve() throws
  void join() {
    auto& s = serve();
    joined_ = true;
    s.join();
  }

  /// Stops serving from any thread; join() returns soon after. Nothing to do before serve().
  void stop() {
    if (server_) server_->stop();
  }

  /// @returns the server of the last serve() or join() (its shards: find()), or nullptr.
  const server_type* server() const noexcept { return server_.get(); }

 private:
  ps_task(cluster::cluster_spec spec, cluster::task_id task, options opts, const char* path, T transport)
      : spec_(std::move(spec)), task_(std::move(task)), opts_(std::move(opts)), transport_(std::move(transport)) {
    opts_.connection.log = dsgd::detail::or_stderr(std::move(opts_.connection.log));
    if (path) validate(opts_, path);
    if (!spec_.contains(task_))
      throw error(errc::bad_cluster_spec, "task " + task_.to_string() + " is not in the cluster spec");
    if (task_.job != "ps")
      throw error(errc::invalid_argument, "train::ps_task: " + task_.to_string() + " is not a ps task");
  }

  cluster::cluster_spec spec_;
  cluster::task_id task_;
  options opts_;
  T transport_;
  std::unique_ptr<server_type> server_;
  bool joined_ = false;
};

}  // namespace dsgd::train
