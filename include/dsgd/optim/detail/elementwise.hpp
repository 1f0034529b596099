// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The four ways one element rule is mapped: in place over all of a variable, out of place over
/// a range (a push applied chunk by chunk), in place over some rows of a variable (a sparse
/// push), and over one row of an embedding table with its slots beside it (a row optimizer's
/// rule, see dsgd::optim::row_optimizer). Each optimizer writes its arithmetic once, as a
/// DSGD_HOST_DEVICE rule (see dsgd::optim::elementwise); every kernel that applies it is one of
/// the maps below, so they can never drift apart and agree bit for bit.
// IWYU pragma: private, include <dsgd/optim/concepts.hpp>
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace dsgd::optim::detail {

/// Element k of a map over a whole variable is element k of the variable and of the gradient.
struct whole_index {
  DSGD_HOST_DEVICE std::size_t value(std::size_t k) const { return k; }
  DSGD_HOST_DEVICE std::size_t gradient(std::size_t k) const { return k; }
};

/// Element k of a map over a range is element first + k of the variable and of the gradient.
struct range_index {
  std::size_t first;
  DSGD_HOST_DEVICE std::size_t value(std::size_t k) const { return first + k; }
  DSGD_HOST_DEVICE std::size_t gradient(std::size_t k) const { return first + k; }
};

/// Element k of a map over rows is column k % dim of row rows[k / dim] of the variable, and
/// element k of the packed gradient rows.
struct row_index {
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE std::size_t value(std::size_t k) const { return rows[k / dim] * dim + k % dim; }
  DSGD_HOST_DEVICE std::size_t gradient(std::size_t k) const { return k; }
};

/// Applies @p Rule to one element: reads the value and its N slots through @p Index, lets the
/// rule update them as locals, writes them back. In place (@p InPlace) it reads and writes
/// through the same pointers, so the compiler sees one stream per array, as in a hand-written
/// `w[i] -= ...` loop; out of place it reads w_in and s_in and writes w_out and s_out.
template <class Rule, std::size_t N, class Index, bool InPlace>
struct element_kernel {
  Rule rule;
  Index at;
  float* w_out;
  const float* w_in;
  const float* g;
  float* s_out[N > 0 ? N : 1];
  const float* s_in[N > 0 ? N : 1];

  DSGD_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = at.value(k);
    float w;
    float s[N > 0 ? N : 1];
    // `if constexpr (N > 0)`: no loop at all for a rule without slots (nvcc warns of j < 0).
    if constexpr (InPlace) {
      w = w_out[i];
      if constexpr (N > 0)
        for (std::size_t j = 0; j < N; ++j) s[j] = s_out[j][i];
    } else {
      w = w_in[i];
      if constexpr (N > 0)
        for (std::size_t j = 0; j < N; ++j) s[j] = s_in[j][i];
    }
    call(w, g[at.gradient(k)], s, std::make_index_sequence<N>{});
    w_out[i] = w;
    if constexpr (N > 0)
      for (std::size_t j = 0; j < N; ++j) s_out[j][i] = s[j];
  }

 private:
  template <std::size_t... J>
  DSGD_HOST_DEVICE void call(float& w, float gi, float* s, std::index_sequence<J...>) const {
    rule(w, gi, s[J]...);
  }
};

template <bool InPlace, class Rule, class Index, class In, class Out>
element_kernel<Rule, Rule::slot_count, Index, InPlace> make_kernel(const Rule& rule, Index at, const float* w_in,
                                                                   float* w_out, const float* g, const In& s_in,
                                                                   const Out& s_out) {
  element_kernel<Rule, Rule::slot_count, Index, InPlace> kernel{rule, at, w_out, w_in, g, {}, {}};
  if constexpr (Rule::slot_count > 0) {
    for (std::size_t j = 0; j < Rule::slot_count; ++j) {
      kernel.s_in[j] = s_in[j];
      kernel.s_out[j] = s_out[j];
    }
  }
  return kernel;
}

/// The row map: @p Rule over the @p dim columns of one table row, in place, slot `j` of column
/// `c` at `slots[j * dim + c]` (a table keeps `slot_count * dim` floats of state per row). The
/// element kernel is the one of the dense maps, over a variable of @p dim elements: a row
/// updated alone ends bit for bit where the dense apply leaves it.
template <class Rule>
struct element_row_rule {
  Rule rule;
  DSGD_HOST_DEVICE void operator()(float* w, float* slots, const float* g, std::size_t dim) const {
    element_kernel<Rule, Rule::slot_count, whole_index, true> kernel{rule, whole_index{}, w, w, g, {}, {}};
    if constexpr (Rule::slot_count > 0) {
      for (std::size_t j = 0; j < Rule::slot_count; ++j) {
        kernel.s_out[j] = slots + j * dim;
        kernel.s_in[j] = slots;  // unread in place
      }
    }
    for (std::size_t c = 0; c < dim; ++c) kernel(c);
  }
};

/// The state passed to with_rule() of an optimizer whose element rule reads no counter
/// (sgd, momentum, adagrad, ftrl): a table row's rule needs none. An optimizer that reads its
/// state there (adam's t) fails to compile with it, as it should.
struct no_state {};

/// Calls @p f with @p o's element rule mapped over one table row (element_row_rule), for an
/// optimizer whose rule reads no counter.
template <class O, class F>
void with_element_row_rule(const O& o, float grad_scale, F&& f) {
  o.with_rule(no_state{}, grad_scale,
              [&](const auto& rule) { f(element_row_rule<std::decay_t<decltype(rule)>>{rule}); });
}

/// Writes @p value to the @p dim floats at @p slots: one slot of a new table row.
DSGD_HOST_DEVICE inline void fill_row_slot(float* slots, std::size_t dim, float value) {
  for (std::size_t c = 0; c < dim; ++c) slots[c] = value;
}

/// One row optimizer's apply_row(): its rule (with_row_rule) on one row.
template <class O, class Step>
void apply_one_row(const O& o, float* w, float* slots, const float* g, std::size_t dim, float grad_scale, Step step) {
  o.with_row_rule(grad_scale, step, [&](const auto& rule) { rule(w, slots, g, dim); });
}

/// Advances @p out's counters to those of @p in after one update (adam's t), for an optimizer
/// that counts updates; nothing for one that does not.
template <class O, class S>
void advance(const O& o, const S& in, S& out) {
  if constexpr (requires { o.advance(in, out); }) o.advance(in, out);
}

/// The factor of decoupled weight decay, `w <- w * (1 - learning_rate * weight_decay)`, computed
/// in double as PyTorch's AdamW does from Python floats: exactly 1 (w unchanged, bit for bit)
/// when @p weight_decay is 0.
inline float decay_factor(float learning_rate, float weight_decay) noexcept {
  return static_cast<float>(1.0 - static_cast<double>(learning_rate) * static_cast<double>(weight_decay));
}

/// Throws dsgd::error (errc::shape_mismatch) saying that @p who's state holds @p held @p what
/// but the variable has @p n elements: the one size check every stateful apply() makes.
[[noreturn]] inline void throw_state_size(const char* who, std::size_t held, const char* what, std::size_t n) {
  throw error(errc::shape_mismatch, std::string(who) + "::apply: the state holds " + std::to_string(held) + " " + what +
                                        " but n = " + std::to_string(n));
}

/// The in-place map: the rule on all @p n elements at @p w, then the counters advance.
template <class O, class Dev, class S>
void map_in_place(const O& o, const Dev& device, S& s, float* w, const float* g, std::size_t n, float grad_scale) {
  o.with_rule(s, grad_scale, [&](const auto& rule) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n,
                       make_kernel<true>(rule, whole_index{}, w, w, g, O::slots_of(s), O::slots_of(s)));
  });
  advance(o, s, s);
}

/// The out-of-place map: elements [first, first + count) of @p w_out and of @p out's slots
/// from those of @p w_in and @p in's slots. Counters are left alone: the caller advances them
/// (advance(o, in, out)) once the whole variable is written.
template <class O, class Dev, class S>
void map_out_of_place(const O& o, const Dev& device, const S& in, S& out, const float* w_in, float* w_out,
                      const float* g, std::size_t first, std::size_t count, float grad_scale) {
  o.with_rule(in, grad_scale, [&](const auto& rule) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count,
                       make_kernel<false>(rule, range_index{first}, w_in, w_out, g, O::slots_of(in), O::slots_of(out)));
  });
}

/// The row map: the rule on rows @p rows[0..count) (unique) of the @p dim-wide rows at @p w and
/// of the slots, from the packed gradient rows @p g (count x dim); then the counters advance.
template <class O, class Dev, class S>
void map_rows(const O& o, const Dev& device, S& s, float* w, const std::uint64_t* rows, std::size_t count,
              std::size_t dim, const float* g, float grad_scale) {
  o.with_rule(s, grad_scale, [&](const auto& rule) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count * dim,
                       make_kernel<true>(rule, row_index{rows, dim}, w, w, g, O::slots_of(s), O::slots_of(s)));
  });
  advance(o, s, s);
}

}  // namespace dsgd::optim::detail
