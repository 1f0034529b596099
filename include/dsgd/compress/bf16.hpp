// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::bf16: gradients as bfloat16 (PyTorch DDP's bf16 compression hook).
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/detail/bytes.hpp>
#include <dsgd/compress/detail/sixteen_bit.hpp>

namespace dsgd::compress {

/// Each element as bfloat16 (float's exponent, 8 bits of mantissa), rounded to nearest even:
/// half the bytes, float's range. NaNs stay NaNs. No residual.
struct bf16 : detail::sixteen_bit<true, detail::to_bf16, detail::from_bf16> {};

static_assert(Compressor<bf16>);

}  // namespace dsgd::compress
