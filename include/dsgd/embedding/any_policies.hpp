// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What a ps task needs to make a table a worker asked for: the run-time models of the table
/// policies (any_initializer, any_admission, any_eviction), any_row_optimizer, and any_table
/// with make_table(). Each has its own header; this one includes them all.
#pragma once

#include <dsgd/embedding/any_admission.hpp>      // IWYU pragma: export
#include <dsgd/embedding/any_eviction.hpp>       // IWYU pragma: export
#include <dsgd/embedding/any_initializer.hpp>    // IWYU pragma: export
#include <dsgd/embedding/any_row_optimizer.hpp>  // IWYU pragma: export
#include <dsgd/embedding/any_table.hpp>          // IWYU pragma: export
#include <dsgd/embedding/table_spec.hpp>         // IWYU pragma: export
