// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Out-of-line members of train::worker (declared in train/worker.hpp): constructing, placing tensors,
/// opening a session, finishing a push sent with a pull behind it, finishing the job.
// IWYU pragma: private, include <dsgd/train/worker.hpp>
#pragma once

#include <dsgd/train/worker.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::train {

template <Device D, Placement P, UpdateRule U, Transport T>
worker<D, P, U, T>::worker(cluster::cluster_spec spec, cluster::task_id task, client::client_options client,
                           P placement, D device, const char* path, T transport)
    : spec_(std::move(spec)), task_(std::move(task)), placement_(std::move(placement)), device_(std::move(device)) {
  client.connection.log = dsgd::detail::or_stderr(std::move(client.connection.log));
  if (path) validate(client, path);
  if (!spec_.contains(task_))
    throw error(errc::bad_cluster_spec, "task " + task_.to_string() + " is not in the cluster spec");
  if (task_.job == "ps")
    throw error(errc::invalid_argument, "train::worker: " + task_.to_string() + " is a ps task, not a worker");
  replica_ = cluster::replicas::index_of(spec_, task_);
  chief_ = cluster::replicas::is_chief(spec_, task_);
  log_ = client.connection.log;
  client_ = std::make_unique<client_type>(spec_, task_, std::move(client), std::move(transport));
}

template <Device D, Placement P, UpdateRule U, Transport T>
void worker<D, P, U, T>::place(const std::vector<tensor<D>>& variables, const std::vector<std::string>& names) {
  std::vector<placement::variable_info> info;
  for (std::size_t i = 0; i < variables.size(); ++i)
    info.push_back({i < names.size() ? names[i] : "var" + std::to_string(i), variables[i].shape()});
  plan_ = placement_.place(info, spec_.num_tasks("ps"));
  buffers_.reserve(variables, skip_sparse());
}

template <Device D, Placement P, UpdateRule U, Transport T>
void worker<D, P, U, T>::place(variable_views variables, std::string_view call) {
  plan_ = placement_.place(detail::infos_of(variables, call), spec_.num_tasks("ps"));
}

template <Device D, Placement P, UpdateRule U, Transport T>
void worker<D, P, U, T>::finish() {
  try {
    client_->finish();
  } catch (const dsgd::error& e) {
    if (e.code() != errc::aborted) throw;
    client_->register_worker(plan_, replica_, chief_);  // a restore came first: finish anyway
    client_->finish();
  }
  if (chief_) client_->shutdown_cluster();
}

template <Device D, Placement P, UpdateRule U, Transport T>
template <class Push, class Pull>
std::size_t worker<D, P, U, T>::finish_behind(Push& pushing, Pull& pulling) {
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

template <Device D, Placement P, UpdateRule U, Transport T>
template <class Values>
void worker<D, P, U, T>::open(Values& variables, const std::optional<checkpoint_at>& from, std::uint64_t step,
                              bool say) {
  client_->connect();
  client_->register_worker(plan_, replica_, chief_);
  if (chief_ && from) {
    client_->restore(std::filesystem::absolute(from->first), from->second);
    if (say)
      log_(task_.to_string() + ": restored checkpoint " + std::to_string(from->second) + " from " +
           from->first.string());
  } else if (chief_) {
    initialize(variables, step);
    auto report = plan_.load_report();
    report.pop_back();  // the final newline; log adds its own
    if (say) log_(task_.to_string() + ": variables placed\n" + report);
  }
  client_->wait_ready();
  // Once ready the shards are those this worker trains on: a restore meanwhile (the chief's,
  // onto a ps task that restarted empty) replaced the push counts its registration returned.
  client_->register_worker(plan_, replica_, chief_);
  resync(variables);
}

}  // namespace dsgd::train
