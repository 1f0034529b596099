// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::fp16: gradients as IEEE half precision (Horovod's and BytePS's fp16 compression).
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/detail/bytes.hpp>
#include <dsgd/compress/detail/sixteen_bit.hpp>

namespace dsgd::compress {

/// Each element as IEEE binary16, rounded to nearest even: half the bytes. Magnitudes above
/// 65504 become infinities and below 2^-24 zero (gradients that large or small want bf16 or a
/// loss scale); NaNs stay NaNs. No residual.
struct fp16 : detail::sixteen_bit<false, detail::to_fp16, detail::from_fp16> {};

static_assert(Compressor<fp16>);

}  // namespace dsgd::compress
