// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::saver, the counterpart of `tf.train.Saver`: the names TensorFlow users look for, for
/// the checkpoint layer's saver and reader (<dsgd/checkpoint/saver.hpp>), which sits below the
/// server so that a ps task can write its own shards.
#pragma once

#include <dsgd/checkpoint/saver.hpp>

namespace dsgd::train {

using checkpoint::checkpoint_reader;
using checkpoint::saver;
using checkpoint::shard_data;

}  // namespace dsgd::train
