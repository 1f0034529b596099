// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::any_table and make_table: a ps shard's row_table made from a table_spec, its
/// policies chosen at run time (any_initializer, any_admission, any_eviction), so a ps task
/// serves every table a worker asks for with one compiled row_table.
#pragma once

#include <dsgd/embedding/any_admission.hpp>
#include <dsgd/embedding/any_eviction.hpp>
#include <dsgd/embedding/any_initializer.hpp>
#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/embedding/table_spec.hpp>

#include <cstddef>
#include <string>

namespace dsgd::embedding {

/// A row_table whose policies a table_spec chooses at run time.
using any_table = row_table<any_initializer, any_admission, any_eviction>;

/// @returns the table_options of ps task @p ps_task's part of table @p spec: its name, dim,
/// caps and evict_fraction, and the state its optimizer keeps per row (state_floats from
/// row_slots(dim), initial_state from init_row_slots). Does not validate @p spec.
inline table_options table_options_of(const table_spec& spec, const any_row_optimizer& optimizer, int ps_task = -1) {
  table_options o;
  o.name = spec.name;
  o.dim = spec.dim;
  o.state_floats = optimizer.row_slots(spec.dim);
  o.initial_state.assign(o.state_floats, 0.f);
  if (o.state_floats != 0) optimizer.init_row_slots(o.initial_state.data(), o.dim);
  o.max_rows = static_cast<std::size_t>(spec.max_rows);
  o.max_bytes = static_cast<std::size_t>(spec.max_bytes);
  o.evict_fraction = spec.evict_fraction;
  o.ps_task = ps_task;
  return o;
}

/// @returns ps task @p ps_task's (-1: none) part of the table @p spec describes, empty: its
/// rows keep the state of the spec's optimizer (make_row_optimizer(spec.optimizer) updates
/// them), and it is laid out, capped and evicts as a row_table of the compile-time policies
/// with the same settings, key for key and bit for bit.
/// @throws dsgd::error (errc::invalid_argument) naming the table and the first bad field
///         (table_spec::validate()), or when max_bytes cannot hold one row.
inline any_table make_table(const table_spec& spec, int ps_task = -1) {
  spec.validate();
  const any_row_optimizer optimizer(spec.optimizer);
  std::string where = "embedding table '" + spec.name + "'";
  if (ps_task >= 0) where += " on ps task " + std::to_string(ps_task);
  return any_table(table_options_of(spec, optimizer, ps_task), any_initializer(spec.initializer),
                   any_admission(spec.admission), any_eviction(spec.eviction, std::move(where)));
}

}  // namespace dsgd::embedding
