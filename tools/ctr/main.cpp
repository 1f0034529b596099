// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-ctr: the click-through-rate job. Every task of a cluster runs this program; TF_CONFIG
// (dsgd-launch), Open MPI, MPICH or Slurm tells it which task it is. It trains Wide & Deep
// (model/wide_deep.hpp, TF1's DNNLinearCombinedClassifier) on the synthetic click stream or on
// .ctr files (a real data set: scripts/ctr_data.py), its two embedding tables on the ps tasks:
//
//   worker:0 ─┐  pull rows of the batch's keys   ┌─ ps:0  wide weights (FTRL), deep embeddings
//   worker:1 ─┼── push one gradient row a key ──►│        (Adagrad), by key hash; the MLP's
//   worker:2 ─┘◄── push_pull the MLP ────────────┴─ ps:1  variables by bytes (Adagrad)
//
//   dsgd-launch --ps 2 --workers 2 -- dsgd-ctr --rule hybrid --logdir /tmp/ctr
//
// --rule picks how: sync (MLP and tables), async, ssp, or hybrid (the MLP sync, the tables
// async: the layout of the recommendation systems that train on parameter servers). With
// --logdir the chief restores the latest checkpoint (tables from their full base and deltas),
// checkpoints (tables incrementally, --deltas) and writes TensorBoard summaries (loss, AUC, table
// rows, admissions, evictions, cache hit rate). `dsgd-ctr --help` lists the options;
// docs/ctr.md describes the job, its data and its figures.
//
// The files: options.hpp the command line, data.hpp the examples, training_loop.hpp a task's work.
#include "options.hpp"
#include "training_loop.hpp"

#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  dsgd::model::use_cpu_blas_kernels(argv);  // OpenBLAS's AVX-512 kernels where it fell back to SSE3
  try {
    const auto s = dsgd_ctr::parse_options(argc, argv);
    if (!s) return 0;  // --help
    if (s->rule == "async") return dsgd_ctr::train<dsgd::update::async>(*s);
    if (s->rule == "ssp") return dsgd_ctr::train<dsgd::update::bounded_staleness>(*s);
    return dsgd_ctr::train<dsgd::update::sync_average>(*s);  // sync, hybrid
  } catch (const dsgd_ctr::usage_error& e) {
    std::fprintf(stderr, "dsgd-ctr: %s (dsgd-ctr --help lists the options)\n", e.what());
    return 2;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "dsgd-ctr: %s\n", e.what());
    return 1;
  }
}
