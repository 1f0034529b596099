// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::table_spec: one dynamic embedding table described as data (its name, dimension,
/// update rule, row optimizer, initializer, admission, eviction and caps), so that a worker can
/// send it over the wire (Boost.Serialization, as protocol::encode_control does) and a ps task,
/// one generic program, can make the table from it (embedding::make_table,
/// <dsgd/embedding/any_table.hpp>) with one compiled instantiation of row_table.
///
/// @code
/// namespace emb = dsgd::embedding;
/// emb::table_spec spec{.name = "user_id",
///                      .dim = 16,
///                      .rule = emb::table_rule::async(),
///                      .optimizer = emb::row_optimizer_spec::adagrad(0.05f),
///                      .initializer = emb::initializer_spec::uniform(-0.05f, 0.05f, 7),
///                      .admission = emb::admission_spec::by_count(2),
///                      .eviction = emb::eviction_spec::least_frequent(),
///                      .max_rows = 1'000'000};
/// spec.validate();  // throws dsgd::error naming the table and the first bad field
/// spec.describe();  // "user_id: dim 16, async, adagrad(lr 0.05), uniform(-0.05, 0.05, seed 7),
///                   //  by_count(2), least_frequent, max_rows 1000000"
/// @endcode
///
/// Each part is a small struct: an enum saying which model (its field named after the part:
/// `rule.rule`, `optimizer.optimizer`, ...) and the settings of every model, of which a model
/// reads its own and ignores the rest. Build a part with its factories, which take each model's
/// defaults from the model itself (`row_optimizer_spec::adagrad(0.05f)`), or from a configured
/// compile-time model with `of()` (`row_optimizer_spec::of(optim::ftrl{.l1_regularization_strength
/// = 1})`). Two parts are equal (operator==) when they name the same model with the same settings
/// it reads: settings another model would read do not count, so a ps compares a second create of
/// a table by what the table does.
#pragma once

#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/lazy_adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
#include <dsgd/optim/sgd.hpp>

#include <boost/serialization/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace dsgd::embedding {

namespace detail {

/// The shortest text that reads back as @p x (std::to_chars): "0.05", "1e-07", "nan".
template <class T>
std::string spec_number(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  }
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("?");
}

/// "name(" + args + ")" when there are args, else name.
inline std::string spec_call(std::string_view name, const std::string& args) {
  return args.empty() ? std::string(name) : std::string(name) + "(" + args + ")";
}

/// Appends ", " + item to @p list (or item to an empty one).
inline void spec_arg(std::string& list, const std::string& item) {
  if (!list.empty()) list += ", ";
  list += item;
}

/// "unknown(<value>)": the text of an enum value no model has (a spec decoded from bad bytes).
template <class E>
std::string spec_unknown(E e) {
  return "unknown(" + spec_number(static_cast<unsigned>(e)) + ")";
}

/// "<field> must be <what> (it is <value>)", or "" when @p ok.
template <class T>
std::string spec_require(bool ok, std::string_view field, std::string_view what, T value) {
  if (ok) return {};
  return std::string(field) + " must be " + std::string(what) + " (it is " + spec_number(value) + ")";
}

/// Throws errc::invalid_argument "<who>: <problem>" unless @p problem is empty.
inline void spec_throw_if(const std::string& problem, std::string_view who) {
  if (!problem.empty()) throw error(errc::invalid_argument, std::string(who) + ": " + problem);
}

}  // namespace detail

/// The update rule of one table, chosen per table at run time (a job may run its dense
/// variables sync and its tables async or SSP: "hybrid"). It names one of update::sync_average,
/// update::async and update::bounded_staleness; a ps serves the table under that rule.
struct table_rule {
  enum class kind : std::uint8_t {
    sync,              ///< update::sync_average: a step's pushes summed by key, their mean applied once
    async,             ///< update::async: each push applied on arrival
    bounded_staleness  ///< update::bounded_staleness: async, a worker at most `staleness` clocks ahead
  };

  kind rule = kind::sync;
  std::uint32_t staleness = 2;  ///< S of bounded_staleness (the other rules ignore it)

  static table_rule sync() noexcept { return {kind::sync}; }
  static table_rule async() noexcept { return {kind::async}; }
  static table_rule bounded_staleness(std::uint32_t staleness = 2) noexcept {
    return {kind::bounded_staleness, staleness};
  }

  /// @returns "sync", "async" or "bounded_staleness(S)" (update::bounded_staleness::describe()).
  std::string describe() const {
    switch (rule) {
      case kind::sync:
        return "sync";
      case kind::async:
        return "async";
      case kind::bounded_staleness:
        return "bounded_staleness(" + detail::spec_number(staleness) + ")";
    }
    return detail::spec_unknown(rule);
  }
  /// @returns what is wrong with the first bad field ("rule must be ..."), or "".
  std::string first_error() const {
    if (rule > kind::bounded_staleness)
      return "rule must be sync, async or bounded_staleness (it is " +
             detail::spec_number(static_cast<unsigned>(rule)) + ")";
    return {};
  }
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad field.
  void validate() const { detail::spec_throw_if(first_error(), "embedding::table_rule"); }
  /// @returns a copy whose settings the rule does not read are their defaults.
  table_rule normalized() const {
    table_rule n = *this;
    if (rule != kind::bounded_staleness) n.staleness = table_rule{}.staleness;
    return n;
  }
  /// Equal when the same rule with the same settings it reads.
  friend bool operator==(const table_rule& a, const table_rule& b) noexcept {
    const table_rule x = a.normalized(), y = b.normalized();
    return x.rule == y.rule && x.staleness == y.staleness;
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& rule& staleness;
  }
};

/// The row optimizer of a table (optim::row_optimizer): which of the shipped ones, and its
/// settings. Fields and defaults are those of the optim:: structs; one field serves where the
/// optimizers share a setting (`initial_accumulator` is adagrad's and rowwise_adagrad's
/// initial_accumulator and ftrl's initial_accumulator_value; `l1`, `l2` and `l2_shrinkage` are
/// ftrl's *_regularization_strength). The member defaults are sgd's and, where optimizers
/// differ, adagrad's (epsilon 1e-7, where adam's is 1e-8): prefer the factories, which take
/// every default from the optimizer itself.
struct row_optimizer_spec {
  enum class kind : std::uint8_t {
    sgd,              ///< optim::sgd: learning_rate, weight_decay
    momentum,         ///< optim::momentum: learning_rate, momentum, nesterov, weight_decay
    adagrad,          ///< optim::adagrad: learning_rate, initial_accumulator, epsilon, weight_decay
    rowwise_adagrad,  ///< optim::rowwise_adagrad: as adagrad, one accumulator per row
    adam,             ///< optim::adam (lazy Adam on rows): learning_rate, beta1, beta2, epsilon, weight_decay
    lazy_adam,        ///< optim::lazy_adam: as adam
    ftrl              ///< optim::ftrl: learning_rate, learning_rate_power, initial_accumulator, l1, l2, l2_shrinkage
  };

  kind optimizer = kind::sgd;
  float learning_rate = 0.01f;
  float weight_decay = 0.f;  ///< decoupled, per unit of learning rate (all but ftrl)
  float momentum = 0.9f;
  bool nesterov = false;
  float initial_accumulator = 0.1f;
  float epsilon = 1e-7f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float learning_rate_power = -0.5f;
  float l1 = 0.f;
  float l2 = 0.f;
  float l2_shrinkage = 0.f;

  // --- from a configured compile-time optimizer: every setting ---------------------------------
  static row_optimizer_spec of(const optim::sgd& o) noexcept {
    row_optimizer_spec s;
    s.optimizer = kind::sgd;
    s.learning_rate = o.learning_rate;
    s.weight_decay = o.weight_decay;
    return s;
  }
  static row_optimizer_spec of(const optim::momentum& o) noexcept {
    row_optimizer_spec s;
    s.optimizer = kind::momentum;
    s.learning_rate = o.learning_rate;
    s.momentum = o.momentum;
    s.nesterov = o.nesterov;
    s.weight_decay = o.weight_decay;
    return s;
  }
  static row_optimizer_spec of(const optim::adagrad& o) noexcept {
    return adagrad_like(kind::adagrad, o.learning_rate, o.initial_accumulator, o.epsilon, o.weight_decay);
  }
  /// (row_width is a dense variable's setting: a table's row is its dim.)
  static row_optimizer_spec of(const optim::rowwise_adagrad& o) noexcept {
    return adagrad_like(kind::rowwise_adagrad, o.learning_rate, o.initial_accumulator, o.epsilon, o.weight_decay);
  }
  static row_optimizer_spec of(const optim::adam& o) noexcept {
    return adam_like(kind::adam, o.learning_rate, o.beta1, o.beta2, o.epsilon, o.weight_decay);
  }
  static row_optimizer_spec of(const optim::lazy_adam& o) noexcept {
    return adam_like(kind::lazy_adam, o.learning_rate, o.beta1, o.beta2, o.epsilon, o.weight_decay);
  }
  static row_optimizer_spec of(const optim::ftrl& o) noexcept {
    row_optimizer_spec s;
    s.optimizer = kind::ftrl;
    s.learning_rate = o.learning_rate;
    s.learning_rate_power = o.learning_rate_power;
    s.initial_accumulator = o.initial_accumulator_value;
    s.l1 = o.l1_regularization_strength;
    s.l2 = o.l2_regularization_strength;
    s.l2_shrinkage = o.l2_shrinkage_regularization_strength;
    return s;
  }

  // --- shorthands: the settings most often changed, the others the optimizer's defaults --------
  static row_optimizer_spec sgd(float learning_rate) noexcept { return of(optim::sgd{.learning_rate = learning_rate}); }
  /// (Not `momentum()`: that is the name of the setting.)
  static row_optimizer_spec momentum_sgd(float learning_rate, float momentum = optim::momentum{}.momentum,
                                         bool nesterov = false) noexcept {
    return of(optim::momentum{.learning_rate = learning_rate, .momentum = momentum, .nesterov = nesterov});
  }
  static row_optimizer_spec adagrad(float learning_rate,
                                    float initial_accumulator = optim::adagrad{}.initial_accumulator) noexcept {
    return of(optim::adagrad{.learning_rate = learning_rate, .initial_accumulator = initial_accumulator});
  }
  static row_optimizer_spec rowwise_adagrad(
      float learning_rate, float initial_accumulator = optim::rowwise_adagrad{}.initial_accumulator) noexcept {
    return of(optim::rowwise_adagrad{.learning_rate = learning_rate, .initial_accumulator = initial_accumulator});
  }
  static row_optimizer_spec adam(float learning_rate) noexcept {
    return of(optim::adam{.learning_rate = learning_rate});
  }
  static row_optimizer_spec lazy_adam(float learning_rate) noexcept {
    return of(optim::lazy_adam{.learning_rate = learning_rate});
  }
  static row_optimizer_spec ftrl(float learning_rate, float l1 = 0.f, float l2 = 0.f) noexcept {
    return of(optim::ftrl{
        .learning_rate = learning_rate, .l1_regularization_strength = l1, .l2_regularization_strength = l2});
  }

  /// @returns "adagrad(lr 0.05)": the optimizer, its learning rate and every setting it reads
  /// that differs from the optimizer's default (so different specs describe differently).
  std::string describe() const {
    std::string args = "lr " + detail::spec_number(learning_rate);
    const auto differs = [&](std::string_view name, auto value, auto fallback) {
      if (value != fallback) detail::spec_arg(args, std::string(name) + " " + detail::spec_number(value));
    };
    const auto decay = [&](float fallback) { differs("weight_decay", weight_decay, fallback); };
    switch (optimizer) {
      case kind::sgd:
        decay(optim::sgd{}.weight_decay);
        return detail::spec_call("sgd", args);
      case kind::momentum: {
        const optim::momentum d{};
        detail::spec_arg(args, "momentum " + detail::spec_number(momentum));
        if (nesterov) detail::spec_arg(args, "nesterov");
        decay(d.weight_decay);
        return detail::spec_call("momentum", args);
      }
      case kind::adagrad:
      case kind::rowwise_adagrad: {
        const optim::adagrad d{};
        differs("initial_accumulator", initial_accumulator, d.initial_accumulator);
        differs("epsilon", epsilon, d.epsilon);
        decay(d.weight_decay);
        return detail::spec_call(optimizer == kind::adagrad ? "adagrad" : "rowwise_adagrad", args);
      }
      case kind::adam:
      case kind::lazy_adam: {
        const optim::adam d{};
        differs("beta1", beta1, d.beta1);
        differs("beta2", beta2, d.beta2);
        differs("epsilon", epsilon, d.epsilon);
        decay(d.weight_decay);
        return detail::spec_call(optimizer == kind::adam ? "adam" : "lazy_adam", args);
      }
      case kind::ftrl: {
        const optim::ftrl d{};
        differs("learning_rate_power", learning_rate_power, d.learning_rate_power);
        differs("initial_accumulator", initial_accumulator, d.initial_accumulator_value);
        differs("l1", l1, d.l1_regularization_strength);
        differs("l2", l2, d.l2_regularization_strength);
        differs("l2_shrinkage", l2_shrinkage, d.l2_shrinkage_regularization_strength);
        return detail::spec_call("ftrl", args);
      }
    }
    return detail::spec_unknown(optimizer);
  }

  /// @returns what is wrong with the first bad setting the optimizer reads ("learning_rate must
  /// be positive (it is -1)"), or "". Ranges: learning_rate > 0; weight_decay, momentum,
  /// initial_accumulator, epsilon, l1, l2, l2_shrinkage >= 0 (and not both initial_accumulator
  /// and epsilon 0: adagrad would divide 0 by 0); beta1 and beta2 in [0, 1); epsilon > 0 for
  /// adam; learning_rate_power <= 0; every value finite.
  std::string first_error() const {
    using detail::spec_require;
    const auto non_negative = [](float x) { return std::isfinite(x) && x >= 0.f; };
    const auto beta = [](float x) { return std::isfinite(x) && x >= 0.f && x < 1.f; };
    if (optimizer > kind::ftrl)
      return "optimizer must be sgd, momentum, adagrad, rowwise_adagrad, adam, lazy_adam or ftrl (it is " +
             detail::spec_number(static_cast<unsigned>(optimizer)) + ")";
    std::string e =
        spec_require(std::isfinite(learning_rate) && learning_rate > 0.f, "learning_rate", "positive", learning_rate);
    const auto check = [&](bool ok, std::string_view field, std::string_view what, float value) {
      if (e.empty()) e = spec_require(ok, field, what, value);
    };
    if (optimizer != kind::ftrl) check(non_negative(weight_decay), "weight_decay", "finite and >= 0", weight_decay);
    switch (optimizer) {
      case kind::sgd:
        break;
      case kind::momentum:
        check(non_negative(momentum), "momentum", "finite and >= 0", momentum);
        break;
      case kind::adagrad:
      case kind::rowwise_adagrad:
        check(non_negative(initial_accumulator), "initial_accumulator", "finite and >= 0", initial_accumulator);
        check(non_negative(epsilon), "epsilon", "finite and >= 0", epsilon);
        check(initial_accumulator > 0.f || epsilon > 0.f, "epsilon", "positive when initial_accumulator is 0", epsilon);
        break;
      case kind::adam:
      case kind::lazy_adam:
        check(beta(beta1), "beta1", "in [0, 1)", beta1);
        check(beta(beta2), "beta2", "in [0, 1)", beta2);
        check(std::isfinite(epsilon) && epsilon > 0.f, "epsilon", "positive", epsilon);
        break;
      case kind::ftrl:
        check(std::isfinite(learning_rate_power) && learning_rate_power <= 0.f, "learning_rate_power",
              "finite and <= 0", learning_rate_power);
        check(non_negative(initial_accumulator), "initial_accumulator", "finite and >= 0", initial_accumulator);
        check(non_negative(l1), "l1", "finite and >= 0", l1);
        check(non_negative(l2), "l2", "finite and >= 0", l2);
        check(non_negative(l2_shrinkage), "l2_shrinkage", "finite and >= 0", l2_shrinkage);
        break;
    }
    return e;
  }
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  void validate() const { detail::spec_throw_if(first_error(), "embedding::row_optimizer_spec"); }

  /// @returns a copy whose settings the optimizer does not read are their member defaults.
  row_optimizer_spec normalized() const {
    row_optimizer_spec n;
    n.optimizer = optimizer;
    n.learning_rate = learning_rate;
    switch (optimizer) {
      case kind::sgd:
        n.weight_decay = weight_decay;
        break;
      case kind::momentum:
        n.weight_decay = weight_decay;
        n.momentum = momentum;
        n.nesterov = nesterov;
        break;
      case kind::adagrad:
      case kind::rowwise_adagrad:
        n.weight_decay = weight_decay;
        n.initial_accumulator = initial_accumulator;
        n.epsilon = epsilon;
        break;
      case kind::adam:
      case kind::lazy_adam:
        n.weight_decay = weight_decay;
        n.beta1 = beta1;
        n.beta2 = beta2;
        n.epsilon = epsilon;
        break;
      case kind::ftrl:
        n.learning_rate_power = learning_rate_power;
        n.initial_accumulator = initial_accumulator;
        n.l1 = l1;
        n.l2 = l2;
        n.l2_shrinkage = l2_shrinkage;
        break;
      default:
        return *this;
    }
    return n;
  }
  /// Equal when the same optimizer with the same settings it reads.
  friend bool operator==(const row_optimizer_spec& a, const row_optimizer_spec& b) noexcept {
    const row_optimizer_spec x = a.normalized(), y = b.normalized();
    return x.optimizer == y.optimizer && x.learning_rate == y.learning_rate && x.weight_decay == y.weight_decay &&
           x.momentum == y.momentum && x.nesterov == y.nesterov && x.initial_accumulator == y.initial_accumulator &&
           x.epsilon == y.epsilon && x.beta1 == y.beta1 && x.beta2 == y.beta2 &&
           x.learning_rate_power == y.learning_rate_power && x.l1 == y.l1 && x.l2 == y.l2 &&
           x.l2_shrinkage == y.l2_shrinkage;
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& optimizer& learning_rate& weight_decay& momentum& nesterov& initial_accumulator& epsilon& beta1& beta2&
        learning_rate_power& l1& l2& l2_shrinkage;
  }

 private:
  static row_optimizer_spec adagrad_like(kind k, float lr, float initial, float eps, float decay) noexcept {
    row_optimizer_spec s;
    s.optimizer = k;
    s.learning_rate = lr;
    s.initial_accumulator = initial;
    s.epsilon = eps;
    s.weight_decay = decay;
    return s;
  }
  static row_optimizer_spec adam_like(kind k, float lr, float b1, float b2, float eps, float decay) noexcept {
    row_optimizer_spec s;
    s.optimizer = k;
    s.learning_rate = lr;
    s.beta1 = b1;
    s.beta2 = b2;
    s.epsilon = eps;
    s.weight_decay = decay;
    return s;
  }
};

/// How a new row's weights start (RowInitializer, embedding/initializer.hpp): a pure function
/// of (seed, key), so every ps and every oracle agree. Defaults are the initializers'.
struct initializer_spec {
  enum class kind : std::uint8_t {
    zeros,            ///< initializer::zeros
    constant,         ///< initializer::constant: value
    uniform,          ///< initializer::uniform: low, high, seed
    truncated_normal  ///< initializer::truncated_normal: mean, stddev, seed
  };

  kind initializer = kind::zeros;
  float value = 0.f;
  float low = -0.05f;
  float high = 0.05f;
  float mean = 0.f;
  float stddev = 0.05f;
  std::uint64_t seed = 0;

  static initializer_spec of(const initializer::zeros&) noexcept { return {}; }
  static initializer_spec of(const initializer::constant& i) noexcept {
    initializer_spec s;
    s.initializer = kind::constant;
    s.value = i.value;
    return s;
  }
  static initializer_spec of(const initializer::uniform& i) noexcept {
    initializer_spec s;
    s.initializer = kind::uniform;
    s.low = i.low;
    s.high = i.high;
    s.seed = i.seed;
    return s;
  }
  static initializer_spec of(const initializer::truncated_normal& i) noexcept {
    initializer_spec s;
    s.initializer = kind::truncated_normal;
    s.mean = i.mean;
    s.stddev = i.stddev;
    s.seed = i.seed;
    return s;
  }

  static initializer_spec zeros() noexcept { return {}; }
  static initializer_spec constant(float value) noexcept { return of(initializer::constant{value}); }
  static initializer_spec uniform(float low, float high, std::uint64_t seed = 0) noexcept {
    return of(initializer::uniform{low, high, seed});
  }
  /// Normal with @p stddev (and @p mean) truncated at two standard deviations.
  static initializer_spec truncated_normal(float stddev, std::uint64_t seed = 0, float mean = 0.f) noexcept {
    return of(initializer::truncated_normal{.mean = mean, .stddev = stddev, .seed = seed});
  }

  /// @returns "zeros", "constant(0.5)", "uniform(-0.05, 0.05, seed 7)" or
  /// "truncated_normal(0, 0.05, seed 7)" (mean, stddev).
  std::string describe() const {
    using detail::spec_number;
    switch (initializer) {
      case kind::zeros:
        return "zeros";
      case kind::constant:
        return "constant(" + spec_number(value) + ")";
      case kind::uniform:
        return "uniform(" + spec_number(low) + ", " + spec_number(high) + ", seed " + spec_number(seed) + ")";
      case kind::truncated_normal:
        return "truncated_normal(" + spec_number(mean) + ", " + spec_number(stddev) + ", seed " + spec_number(seed) +
               ")";
    }
    return detail::spec_unknown(initializer);
  }
  /// @returns what is wrong with the first bad setting the initializer reads, or "": values
  /// finite, low <= high, stddev >= 0.
  std::string first_error() const {
    using detail::spec_require;
    switch (initializer) {
      case kind::zeros:
        return {};
      case kind::constant:
        return spec_require(std::isfinite(value), "value", "finite", value);
      case kind::uniform:
        if (auto e = spec_require(std::isfinite(low), "low", "finite", low); !e.empty()) return e;
        if (auto e = spec_require(std::isfinite(high), "high", "finite", high); !e.empty()) return e;
        return spec_require(low <= high, "high", "at least low (" + detail::spec_number(low) + ")", high);
      case kind::truncated_normal:
        if (auto e = spec_require(std::isfinite(mean), "mean", "finite", mean); !e.empty()) return e;
        return spec_require(std::isfinite(stddev) && stddev >= 0.f, "stddev", "finite and >= 0", stddev);
    }
    return "initializer must be zeros, constant, uniform or truncated_normal (it is " +
           detail::spec_number(static_cast<unsigned>(initializer)) + ")";
  }
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  void validate() const { detail::spec_throw_if(first_error(), "embedding::initializer_spec"); }

  /// @returns a copy whose settings the initializer does not read are their member defaults.
  initializer_spec normalized() const {
    initializer_spec n;
    n.initializer = initializer;
    switch (initializer) {
      case kind::zeros:
        break;
      case kind::constant:
        n.value = value;
        break;
      case kind::uniform:
        n.low = low;
        n.high = high;
        n.seed = seed;
        break;
      case kind::truncated_normal:
        n.mean = mean;
        n.stddev = stddev;
        n.seed = seed;
        break;
      default:
        return *this;
    }
    return n;
  }
  /// Equal when the same initializer with the same settings it reads.
  friend bool operator==(const initializer_spec& a, const initializer_spec& b) noexcept {
    const initializer_spec x = a.normalized(), y = b.normalized();
    return x.initializer == y.initializer && x.value == y.value && x.low == y.low && x.high == y.high &&
           x.mean == y.mean && x.stddev == y.stddev && x.seed == y.seed;
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& initializer& value& low& high& mean& stddev& seed;
  }
};

/// Which keys get a row (AdmissionPolicy, embedding/admission.hpp). Defaults are the policies'.
struct admission_spec {
  enum class kind : std::uint8_t {
    always,         ///< admission::always
    by_count,       ///< admission::by_count: count, max_pending
    by_probability  ///< admission::by_probability: probability, seed
  };

  kind admission = kind::always;
  std::uint32_t count = 2;
  std::uint64_t max_pending = 1 << 16;
  double probability = 0.1;
  std::uint64_t seed = 0;

  static admission_spec of(const admission::always&) noexcept { return {}; }
  static admission_spec of(const admission::by_count& a) noexcept {
    return by_count(a.settings().count, a.settings().max_pending);
  }
  static admission_spec of(const admission::by_probability& a) noexcept {
    return by_probability(a.probability, a.seed);
  }

  static admission_spec always() noexcept { return {}; }
  static admission_spec by_count(std::uint32_t count,
                                 std::uint64_t max_pending = admission::by_count::options{}.max_pending) noexcept {
    admission_spec s;
    s.admission = kind::by_count;
    s.count = count;
    s.max_pending = max_pending;
    return s;
  }
  static admission_spec by_probability(double probability, std::uint64_t seed = 0) noexcept {
    admission_spec s;
    s.admission = kind::by_probability;
    s.probability = probability;
    s.seed = seed;
    return s;
  }

  /// @returns "always", "by_count(2)" (", max_pending N" when not the default) or
  /// "by_probability(0.1, seed 3)".
  std::string describe() const {
    using detail::spec_number;
    switch (admission) {
      case kind::always:
        return "always";
      case kind::by_count:
        return "by_count(" + spec_number(count) +
               (max_pending == admission_spec{}.max_pending ? "" : ", max_pending " + spec_number(max_pending)) + ")";
      case kind::by_probability:
        return "by_probability(" + spec_number(probability) + ", seed " + spec_number(seed) + ")";
    }
    return detail::spec_unknown(admission);
  }
  /// @returns what is wrong with the first bad setting the policy reads, or "": count and
  /// max_pending at least 1 (and max_pending within size_t), probability in [0, 1].
  std::string first_error() const {
    using detail::spec_require;
    switch (admission) {
      case kind::always:
        return {};
      case kind::by_count:
        if (auto e = spec_require(count >= 1, "count", "at least 1", count); !e.empty()) return e;
        return spec_require(max_pending >= 1 && max_pending <= std::numeric_limits<std::size_t>::max(), "max_pending",
                            "at least 1", max_pending);
      case kind::by_probability:
        return spec_require(probability >= 0 && probability <= 1, "probability", "in [0, 1]", probability);
    }
    return "admission must be always, by_count or by_probability (it is " +
           detail::spec_number(static_cast<unsigned>(admission)) + ")";
  }
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  void validate() const { detail::spec_throw_if(first_error(), "embedding::admission_spec"); }

  /// @returns a copy whose settings the policy does not read are their member defaults.
  admission_spec normalized() const {
    admission_spec n;
    n.admission = admission;
    switch (admission) {
      case kind::always:
        break;
      case kind::by_count:
        n.count = count;
        n.max_pending = max_pending;
        break;
      case kind::by_probability:
        n.probability = probability;
        n.seed = seed;
        break;
      default:
        return *this;
    }
    return n;
  }
  /// Equal when the same policy with the same settings it reads.
  friend bool operator==(const admission_spec& a, const admission_spec& b) noexcept {
    const admission_spec x = a.normalized(), y = b.normalized();
    return x.admission == y.admission && x.count == y.count && x.max_pending == y.max_pending &&
           x.probability == y.probability && x.seed == y.seed;
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& admission& count& max_pending& probability& seed;
  }
};

/// Which rows go at the cap and which a sweep removes (EvictionPolicy, embedding/eviction.hpp).
/// Defaults are the policies'.
struct eviction_spec {
  enum class kind : std::uint8_t {
    none,           ///< eviction::none: a full table refuses new rows
    by_age,         ///< eviction::by_age: max_age
    least_frequent  ///< eviction::least_frequent: min_uses, max_age
  };

  kind eviction = kind::none;
  std::uint64_t max_age = 0;   ///< steps; 0: no sweep, cap eviction only
  std::uint32_t min_uses = 0;  ///< least_frequent's sweep removes rows with fewer uses

  static eviction_spec of(const eviction::none&) noexcept { return {}; }
  static eviction_spec of(const eviction::by_age& e) noexcept { return by_age(e.max_age); }
  static eviction_spec of(const eviction::least_frequent& e) noexcept { return least_frequent(e.min_uses, e.max_age); }

  static eviction_spec none() noexcept { return {}; }
  static eviction_spec by_age(std::uint64_t max_age = 0) noexcept {
    eviction_spec s;
    s.eviction = kind::by_age;
    s.max_age = max_age;
    return s;
  }
  static eviction_spec least_frequent(std::uint32_t min_uses = 0, std::uint64_t max_age = 0) noexcept {
    eviction_spec s;
    s.eviction = kind::least_frequent;
    s.min_uses = min_uses;
    s.max_age = max_age;
    return s;
  }

  /// @returns "none", "by_age" or "by_age(1000)", "least_frequent" or
  /// "least_frequent(min_uses 2, max_age 100)".
  std::string describe() const {
    using detail::spec_number;
    switch (eviction) {
      case kind::none:
        return "none";
      case kind::by_age:
        return max_age == 0 ? "by_age" : "by_age(" + spec_number(max_age) + ")";
      case kind::least_frequent:
        return min_uses == 0 && max_age == 0
                   ? "least_frequent"
                   : "least_frequent(min_uses " + spec_number(min_uses) + ", max_age " + spec_number(max_age) + ")";
    }
    return detail::spec_unknown(eviction);
  }
  /// @returns what is wrong, or "": only the kind can be (every age and count is meaningful).
  std::string first_error() const {
    if (eviction > kind::least_frequent)
      return "eviction must be none, by_age or least_frequent (it is " +
             detail::spec_number(static_cast<unsigned>(eviction)) + ")";
    return {};
  }
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  void validate() const { detail::spec_throw_if(first_error(), "embedding::eviction_spec"); }

  /// @returns a copy whose settings the policy does not read are their member defaults.
  eviction_spec normalized() const {
    eviction_spec n;
    n.eviction = eviction;
    switch (eviction) {
      case kind::none:
        break;
      case kind::by_age:
        n.max_age = max_age;
        break;
      case kind::least_frequent:
        n.max_age = max_age;
        n.min_uses = min_uses;
        break;
      default:
        return *this;
    }
    return n;
  }
  /// Equal when the same policy with the same settings it reads.
  friend bool operator==(const eviction_spec& a, const eviction_spec& b) noexcept {
    const eviction_spec x = a.normalized(), y = b.normalized();
    return x.eviction == y.eviction && x.max_age == y.max_age && x.min_uses == y.min_uses;
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& eviction& max_age& min_uses;
  }
};

/// One dynamic embedding table, as data: what a worker sends a ps task to create its part of
/// the table (make_table), and what the ps compares a second create of the same table with.
/// The caps and evict_fraction are those of embedding::table_options, per ps task.
struct table_spec {
  std::string name{};     ///< the table's name in errors and summaries (not empty)
  std::uint32_t dim = 0;  ///< weights per row (> 0)
  table_rule rule{};      ///< the table's own update rule
  row_optimizer_spec optimizer{};
  initializer_spec initializer{};
  admission_spec admission{};
  eviction_spec eviction{};
  std::uint64_t max_rows = 0;        ///< rows per ps task (0: no cap; below 2^32)
  std::uint64_t max_bytes = 0;       ///< bytes of rows per ps task (0: no cap)
  double evict_fraction = 1.0 / 64;  ///< share of the cap evicted at once, in (0, 1]

  /// @returns "user_id: dim 16, async, adagrad(lr 0.05), uniform(-0.05, 0.05, seed 7),
  /// by_count(2), least_frequent, max_rows 1000000": every part, then the caps that are set and
  /// evict_fraction when not the default. Two specs that differ (operator==) describe
  /// differently.
  std::string describe() const {
    using detail::spec_number;
    std::string s = name + ": dim " + spec_number(dim) + ", " + rule.describe() + ", " + optimizer.describe() + ", " +
                    initializer.describe() + ", " + admission.describe() + ", " + eviction.describe();
    if (max_rows != 0) s += ", max_rows " + spec_number(max_rows);
    if (max_bytes != 0) s += ", max_bytes " + spec_number(max_bytes);
    if (evict_fraction != table_spec{}.evict_fraction) s += ", evict_fraction " + spec_number(evict_fraction);
    return s;
  }

  /// Checks every field, the parts in declaration order.
  /// @throws dsgd::error (errc::invalid_argument) naming the table and the first bad field:
  ///         "table 'user_id': optimizer.learning_rate must be positive (it is -1)".
  void validate() const {
    const auto fail = [&](const std::string& problem) {
      throw error(errc::invalid_argument, "table '" + name + "': " + problem);
    };
    if (name.empty()) fail("name must not be empty");
    if (dim == 0) fail("dim must be positive (it is 0)");
    if (auto e = rule.first_error(); !e.empty()) fail("rule." + e);
    if (auto e = optimizer.first_error(); !e.empty()) fail("optimizer." + e);
    if (auto e = initializer.first_error(); !e.empty()) fail("initializer." + e);
    if (auto e = admission.first_error(); !e.empty()) fail("admission." + e);
    if (auto e = eviction.first_error(); !e.empty()) fail("eviction." + e);
    if (max_rows > std::numeric_limits<std::uint32_t>::max())
      fail("max_rows must be below 2^32 (it is " + detail::spec_number(max_rows) + ")");
    if (max_bytes > std::numeric_limits<std::size_t>::max())
      fail("max_bytes must fit in size_t (it is " + detail::spec_number(max_bytes) + ")");
    if (!(evict_fraction > 0 && evict_fraction <= 1))
      fail("evict_fraction must be in (0, 1] (it is " + detail::spec_number(evict_fraction) + ")");
  }

  /// Equal when every field is, the parts compared by what they read (see the parts).
  friend bool operator==(const table_spec&, const table_spec&) = default;

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& name& dim& rule& optimizer& initializer& admission& eviction& max_rows& max_bytes& evict_fraction;
  }
};

/// What the ps tasks report of a table (ps_client::table_stats): its rows and their bytes, and
/// since the table was made (or restored), the rows admitted, the training lookups admission
/// refused, the rows evicted and erased, and the gradient rows dropped for keys without a row;
/// summed over the ps tasks. `step` is the smallest sync step (or update count) among them.
struct table_counts {
  std::uint64_t rows = 0;
  std::uint64_t bytes = 0;
  std::uint64_t admitted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t evicted = 0;
  std::uint64_t erased = 0;
  std::uint64_t dropped = 0;
  std::uint64_t step = 0;

  /// @returns the counts as (tag, value) pairs under @p prefix ("ids/" gives "ids/rows", ...):
  /// what a summary hook's scalars function returns to put them in TensorBoard.
  std::vector<std::pair<std::string, float>> scalars(const std::string& prefix) const {
    return {{prefix + "rows", float(rows)},         {prefix + "bytes", float(bytes)},
            {prefix + "admitted", float(admitted)}, {prefix + "rejected", float(rejected)},
            {prefix + "evicted", float(evicted)},   {prefix + "erased", float(erased)},
            {prefix + "dropped", float(dropped)}};
  }
};

/// What a ps does with a second create of table @p created: nothing when @p requested is the
/// same table (operator==).
/// @throws dsgd::error (errc::invalid_argument) naming both descriptions otherwise.
inline void require_same_table(const table_spec& created, const table_spec& requested) {
  if (!(created == requested))
    throw error(errc::invalid_argument, "table '" + created.name + "' exists as " + created.describe() +
                                            "; asked again as " + requested.describe());
}

}  // namespace dsgd::embedding
