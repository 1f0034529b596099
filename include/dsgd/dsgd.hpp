// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The umbrella header: every public host header of dsgd (Taskflow's taskflow.hpp, stdexec's
/// execution.hpp). It opens no .cuh: CUDA users include <dsgd/device/cuda.cuh> themselves, and the
/// BLAS-backed example models (<dsgd/model/...>, target dsgd::models) are not part of the library,
/// nor are the model adapters (<dsgd/adapt/eigen.hpp>, <dsgd/adapt/torch.hpp>, targets dsgd::eigen
/// and dsgd::torch), which need the library they adapt.
/// scripts/check_layers.py checks that no public header is missing here.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/version.hpp>

#include <dsgd/device/concepts.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/device/parse.hpp>

#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/tensor/shape.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>

#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/clip.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/cosine_decay.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/lazy_adam.hpp>
#include <dsgd/optim/mean.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/per_variable.hpp>
#include <dsgd/optim/piecewise_constant.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
#include <dsgd/optim/sgd.hpp>

#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/any_admission.hpp>
#include <dsgd/embedding/any_eviction.hpp>
#include <dsgd/embedding/any_initializer.hpp>
#include <dsgd/embedding/any_policies.hpp>
#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/any_table.hpp>
#include <dsgd/embedding/combiner.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/key_hash.hpp>
#include <dsgd/embedding/row_cache.hpp>
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/embedding/table_spec.hpp>

#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/chunked_apply.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>
#include <dsgd/update/table_shard.hpp>

#include <dsgd/compress/bf16.hpp>
#include <dsgd/compress/codec.hpp>
#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/fp16.hpp>
#include <dsgd/compress/none.hpp>
#include <dsgd/compress/registry.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/compress/top_k.hpp>
#include <dsgd/compress/two_bit.hpp>

#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/hash_keys.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/pinned.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/device_spec.hpp>
#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/cluster/slurm.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/cluster/token.hpp>

#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/transport/handshake.hpp>
#include <dsgd/transport/inproc.hpp>
#include <dsgd/transport/tcp_options.hpp>
#include <dsgd/transport/tls.hpp>

#include <dsgd/checkpoint/incremental.hpp>
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/state_records.hpp>
#include <dsgd/checkpoint/table_export.hpp>
#include <dsgd/checkpoint/table_file.hpp>

#include <dsgd/client/operations.hpp>
#include <dsgd/client/options.hpp>
#include <dsgd/client/ps_client.hpp>
#include <dsgd/client/residuals.hpp>
#include <dsgd/collective/ring.hpp>
#include <dsgd/collective/sharded_update.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/server/shard_table.hpp>

#include <dsgd/data/auc.hpp>
#include <dsgd/data/click_stream.hpp>
#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/data/ctr_file.hpp>
#include <dsgd/data/fashion_mnist.hpp>

#include <dsgd/train/local_sgd.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/overlap.hpp>
#include <dsgd/train/progress.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/saver.hpp>
#include <dsgd/train/session_hooks.hpp>
#include <dsgd/train/staging.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/train/worker.hpp>
