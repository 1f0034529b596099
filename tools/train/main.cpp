// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-train: the project's training job. Every task of a cluster runs this program; TF_CONFIG
// (set by dsgd-launch, a Kubernetes training operator, or by hand), Open MPI, MPICH or Slurm
// tells it which task it is. It trains the Fashion-MNIST MLP 784-256-128-10 (or softmax regression)
// data-parallel over the workers, the variables on the ps tasks; the chief prints progress and
// the test accuracy.
//
//   worker:0 ─┐                     ┌─ ps:0  (variables in creation order, greedy by bytes)
//   worker:1 ─┼── push gradients ──►│
//   worker:2 ─┘◄── pull values ─────┴─ ps:1
//
//   dsgd-launch --ps 2 --workers 2 -- dsgd-train --rule sync --epochs 12
//   dsgd-launch --ps 2 --workers 2 -- dsgd-train --rule sync --logdir /tmp/main_job
//   tensorboard --logdir /tmp/main_job
//   dsgd-launch --ps 0 --workers 2 -- dsgd-train --rule allreduce   # no ps: among the workers
//
// With --logdir the chief restores the latest checkpoint there, checkpoints every --save-secs
// seconds and/or --save-steps steps and writes TensorBoard summaries; a ps task that dies and
// is started again with the same role is then recovered by itself. `dsgd-train --help` lists
// the options (options.hpp); docs/launching.md shows the ways to start a job.
//
// The files: options.hpp and values.hpp the command line, job.hpp what every task derives from
// it (model, schedule, trainer options), training_loop.hpp a task's work (collective_loop.hpp
// under --rule allreduce), report.hpp the chief's evaluation lines and CSV.
#include "collective_loop.hpp"
#include "options.hpp"
#include "training_loop.hpp"

#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <cstdio>

namespace {

// The update rule the options name; local SGD's ps averages as sync does, and allreduce has no
// ps (collective_loop.hpp).
template <class Model>
int train_with_rule(const dsgd_train::settings& s) {
  if (s.rule == "allreduce") return dsgd_train::train_allreduce<Model>(s);
  if (s.rule == "sync" || s.rule == "local") return dsgd_train::train<Model, dsgd::update::sync_average>(s);
  if (s.rule == "async") return dsgd_train::train<Model, dsgd::update::async>(s);
  return dsgd_train::train<Model, dsgd::update::bounded_staleness>(s);
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::model::use_cpu_blas_kernels(argv);  // OpenBLAS's AVX-512 kernels where it fell back to SSE3
  try {
    const auto s = dsgd_train::parse_options(argc, argv);
    if (!s) return 0;  // --help
    if (s->model == "mlp") return train_with_rule<dsgd::model::mlp<dsgd_train::cpu>>(*s);
    return train_with_rule<dsgd::model::softmax_regression<dsgd_train::cpu>>(*s);
  } catch (const dsgd_train::usage_error& e) {
    std::fprintf(stderr, "dsgd-train: %s (dsgd-train --help lists the options)\n", e.what());
    return 2;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "dsgd-train: %s\n", e.what());
    return 1;
  }
}
