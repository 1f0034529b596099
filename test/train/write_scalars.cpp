// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Writes a known set of scalar summaries into the log directory given as argv[1], for
// tensorboard_reads_summaries.py to read back with TensorBoard. The script computes the same
// values on its own side: loss(step) = 1 / (1 + step) for steps 0..99, accuracy(step) =
// step / 100 for steps 0, 10, ..., 90, and "lr" = 0.125 next to accuracy in the same event;
// and histograms "weights" at steps 0 and 50 of the 1000 values sin(i) * (1 + step / 50) for
// i = 0..999 (30 buckets), and "bias" at step 99 of the single value -0.25.
#include <dsgd/train/summary_writer.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LOGDIR\n", argv[0]);
    return 2;
  }
  try {
    dsgd::train::summary_writer w(argv[1]);
    for (int step = 0; step < 100; ++step) {
      w.scalar("loss", 1.0f / (1.0f + static_cast<float>(step)), step);
      if (step % 10 == 0) {
        dsgd::train::scalar_value values[] = {{"accuracy", static_cast<float>(step) / 100.0f}, {"lr", 0.125f}};
        w.scalars(step, values);
      }
      if (step % 50 == 0) {
        std::vector<float> weights(1000);
        for (int i = 0; i < 1000; ++i)
          weights[i] = static_cast<float>(std::sin(static_cast<double>(i)) * (1.0 + step / 50.0));
        w.histogram("weights", weights, step);
      }
    }
    const float bias = -0.25f;
    w.histogram("bias", std::span<const float>(&bias, 1), 99);
    std::printf("%s\n", w.path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_scalars: %s\n", e.what());
    return 1;
  }
  return 0;
}
