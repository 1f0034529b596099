// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// saver and checkpoint_reader: sharded, checksummed, atomically written checkpoints.
///
/// A checkpoint of step S in directory D is one data file per ps task, "ckpt-S.ps-i-of-n",
/// written by that task with what it holds, and a manifest "ckpt-S.manifest" written last by the
/// chief once every data file is there and verifies. A checkpoint without a valid manifest does
/// not exist as far as restore is concerned, so a crash at any moment leaves the previous one
/// restorable. Restore reads variables by name and element range, whatever the placement was
/// when they were written, so a cluster with a different number of ps tasks can restore it.
/// A ps task holding embedding tables also writes "ckpt-S.tables.ps-i-of-n" (full, or a delta
/// of an earlier checkpoint: checkpoint/table_file.hpp), which the manifest names too.
/// docs/checkpoints.md has the byte layout.
#pragma once

#include <dsgd/checkpoint/detail/atomic_file.hpp>
#include <dsgd/checkpoint/detail/format.hpp>
#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/detail/crc32c.hpp>
#include <dsgd/error.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/tensor/shape.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace dsgd::checkpoint {

/// One slice of a variable handed to the saver: elements [offset, offset + values.size()) of a
/// row-major variable of the given shape.
struct shard_data {
  std::string variable;
  dsgd::shape shape;
  std::size_t offset = 0;
  std::span<const float> values;
};

/// A verified checkpoint, loaded in memory: every checksum has been checked, and any element
/// range of any variable can be read regardless of how it was sharded when written.
class checkpoint_reader {
 public:
  /// Loads and verifies checkpoint @p step in @p dir.
  /// @throws dsgd::error errc::not_found if it has no manifest; errc::checkpoint_corrupt naming
  ///         the file (and record) that is missing, truncated or fails a checksum.
  checkpoint_reader(const std::filesystem::path& dir, std::uint64_t step) : step_(step) {
    auto mname = detail::manifest_name(step);
    auto text = detail::read_file(dir / mname, detail::max_manifest_bytes);
    manifest_ = detail::parse_manifest(text, mname);
    if (manifest_.step != step)
      throw error(errc::checkpoint_corrupt, mname + ": names step " + std::to_string(manifest_.step));
    const auto n = manifest_.files.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& f = manifest_.files[i];
      std::error_code ec;
      auto size = std::filesystem::file_size(dir / f.name, ec);
      if (ec) throw error(errc::checkpoint_corrupt, f.name + ": missing (named by " + mname + ")");
      if (size != f.bytes)
        throw error(errc::checkpoint_corrupt, f.name + ": " + (size < f.bytes ? "truncated: " : "wrong size: ") +
                                                  "expected " + std::to_string(f.bytes) + " bytes, got " +
                                                  std::to_string(size));
      files_.push_back(detail::read_file(dir / f.name, f.bytes));
      auto bytes = detail::as_bytes(files_.back());
      auto parsed = detail::parse_data_file(bytes, f.name);
      if (dsgd::detail::crc32c(bytes) != f.crc32c)
        throw error(errc::checkpoint_corrupt, f.name + ": checksum differs from " + mname);
      if (parsed.step != step || parsed.ps_task != i || parsed.ps_tasks != n)
        throw error(errc::checkpoint_corrupt, f.name + ": header names step " + std::to_string(parsed.step) + ", ps " +
                                                  std::to_string(parsed.ps_task) + " of " +
                                                  std::to_string(parsed.ps_tasks));
      if (parsed.version != manifest_.version)
        throw error(errc::checkpoint_corrupt, f.name + ": format version " + std::to_string(parsed.version) + ", but " +
                                                  mname + " says " + std::to_string(manifest_.version));
      for (auto& r : parsed.records) index(std::move(r), i, bytes.data());
    }
  }

  std::uint64_t step() const noexcept { return step_; }
  /// @returns the format version it was written in (docs/checkpoints.md): from 2 on, a ps's
  /// data file holds every slot and counter of its optimizer's state.
  std::uint32_t format_version() const noexcept { return manifest_.version; }
  /// @returns how many ps tasks wrote the checkpoint.
  std::size_t ps_tasks() const noexcept { return manifest_.files.size(); }
  /// @returns placement::plan::describe() of the plan it was written under.
  const std::string& placement() const noexcept { return manifest_.placement; }
  std::uint64_t placement_fingerprint() const noexcept { return manifest_.placement_fingerprint; }
  /// @returns whether the checkpoint holds embedding tables (table files, checkpoint/table_file.hpp;
  /// read_tables() reads them, and those of the checkpoints a delta's chain names).
  bool has_tables() const noexcept { return !manifest_.table_files.empty(); }
  /// @returns the checkpoint whose tables this one's are a delta of (an incremental checkpoint),
  /// or nothing (full tables, or none).
  std::optional<std::uint64_t> tables_delta_of() const noexcept { return manifest_.tables_delta_of; }

  /// @returns every variable (name and shape) in the order the data files first name them.
  std::vector<placement::variable_info> variables() const {
    std::vector<placement::variable_info> out;
    for (const auto& name : order_) out.push_back({name, variables_.at(name).shape});
    return out;
  }
  bool contains(std::string_view name) const { return variables_.count(std::string(name)) != 0; }
  /// @throws dsgd::error errc::not_found if the checkpoint has no variable @p name.
  const dsgd::shape& shape_of(std::string_view name) const { return find(name).shape; }

  /// Copies elements [offset, offset + out.size()) of variable @p name into @p out.
  /// @throws dsgd::error errc::not_found for an unknown variable, errc::invalid_argument for a
  ///         range outside it, errc::checkpoint_corrupt if no file holds some of its elements.
  void read_into(std::string_view name, std::size_t offset, std::span<float> out) const {
    const auto& v = find(name);
    auto total = v.shape.elements();
    if (offset > total || out.size() > total - offset)
      throw error(errc::invalid_argument, "checkpoint " + std::to_string(step_) + ": range [" + std::to_string(offset) +
                                              ", " + std::to_string(offset + out.size()) + ") is outside " +
                                              std::string(name) + v.shape.to_string());
    std::size_t pos = offset, end = offset + out.size();
    while (pos < end) {
      auto it = std::find_if(v.slices.begin(), v.slices.end(),
                             [&](const slice& s) { return s.offset <= pos && pos < s.offset + s.count; });
      if (it == v.slices.end())
        throw error(errc::checkpoint_corrupt, "checkpoint " + std::to_string(step_) + ": element " +
                                                  std::to_string(pos) + " of " + std::string(name) +
                                                  " is in none of its files");
      auto n = std::min(end, it->offset + it->count) - pos;
      const auto* base = reinterpret_cast<const std::byte*>(files_[it->file].data());
      detail::get_floats(base + it->position + 4 * (pos - it->offset), n, out.data() + (pos - offset));
      pos += n;
    }
  }
  /// @returns elements [offset, offset + count) of variable @p name (see read_into()).
  std::vector<float> read(std::string_view name, std::size_t offset, std::size_t count) const {
    std::vector<float> out(count);
    read_into(name, offset, out);
    return out;
  }
  /// @returns all of variable @p name.
  std::vector<float> read(std::string_view name) const { return read(name, 0, shape_of(name).elements()); }
  /// @returns the values of shard @p s of @p p, a plan that may differ from the one at save.
  /// @throws dsgd::error errc::shape_mismatch if the variable's shape differs from the plan's.
  std::vector<float> read(const placement::plan& p, const placement::shard& s) const {
    const auto& v = p.variables().at(s.variable);
    if (shape_of(v.name) != v.shape)
      throw error(errc::shape_mismatch, "checkpoint " + std::to_string(step_) + " has " + v.name +
                                            shape_of(v.name).to_string() + ", the plan wants " + v.name +
                                            v.shape.to_string());
    return read(v.name, s.offset, s.elements);
  }

 private:
  struct slice {
    std::size_t offset, count;
    std::size_t file;      ///< index into files_
    std::size_t position;  ///< byte offset of its values in that file
  };
  struct variable {
    dsgd::shape shape;
    std::string file;  ///< the first file that named it, for error messages
    std::vector<slice> slices;
  };

  const variable& find(std::string_view name) const {
    auto it = variables_.find(std::string(name));
    if (it == variables_.end())
      throw error(errc::not_found,
                  "checkpoint " + std::to_string(step_) + " has no variable \"" + std::string(name) + "\"");
    return it->second;
  }

  void index(detail::parsed_record r, std::size_t file_index, const std::byte* file_start) {
    const auto& file = manifest_.files[file_index].name;
    auto [it, fresh] = variables_.try_emplace(r.variable, variable{r.shape, file, {}});
    if (fresh) order_.push_back(r.variable);
    if (it->second.shape != r.shape)
      throw error(errc::checkpoint_corrupt, file + ": " + r.variable + " has shape " + r.shape.to_string() + " but " +
                                                it->second.file + " gives " + it->second.shape.to_string());
    it->second.slices.push_back({r.offset, r.count, file_index, static_cast<std::size_t>(r.data.data() - file_start)});
  }

  std::uint64_t step_;
  detail::manifest manifest_;
  std::vector<std::string> files_;  // the verified bytes of each data file
  std::map<std::string, variable, std::less<>> variables_;
  std::vector<std::string> order_;
};

/// Writes and finds checkpoints in one directory, keeping the newest `keep` of them.
///
/// @code
///   dsgd::checkpoint::saver saver{"ckpt", /*keep=*/5};
///   saver.write_shard_file(step, ps_task, ps_tasks, my_shards);  // on every ps task
///   saver.commit(step, plan);                                    // on the chief, after all
///   if (auto s = saver.latest()) { auto r = saver.open(*s); auto w = r.read("dense0/kernel"); }
/// @endcode
class saver {
 public:
  /// @param dir where checkpoints live (created on the first write)
  /// @param keep how many committed checkpoints to retain; 0 keeps them all
  explicit saver(std::filesystem::path dir, std::size_t keep = 5) : dir_(std::move(dir)), keep_(keep) {}

  const std::filesystem::path& directory() const noexcept { return dir_; }
  std::size_t keep() const noexcept { return keep_; }

  /// Writes ps task @p ps_task's data file of checkpoint @p step atomically.
  /// @throws dsgd::error errc::invalid_argument for a slice outside its shape or a bad task
  ///         index; an I/O error_code if the file cannot be written.
  void write_shard_file(std::uint64_t step, std::size_t ps_task, std::size_t ps_tasks,
                        std::span<const shard_data> shards) const {
    if (ps_tasks == 0 || ps_task >= ps_tasks || ps_tasks > detail::max_ps_tasks)
      throw error(errc::invalid_argument,
                  "saver: ps task " + std::to_string(ps_task) + " of " + std::to_string(ps_tasks) + " is out of range");
    std::vector<detail::record_view> records;
    for (const auto& s : shards) {
      auto n = s.shape.elements();
      if (s.variable.empty() || s.variable.size() > detail::max_name_bytes ||
          s.variable.find('\n') != std::string::npos || s.shape.rank() > detail::max_rank)
        throw error(errc::invalid_argument, "saver: bad variable name or rank: \"" + s.variable + "\"");
      if (s.offset > n || s.values.size() > n - s.offset)
        throw error(errc::invalid_argument, "saver: " + s.variable + " slice [" + std::to_string(s.offset) + ", " +
                                                std::to_string(s.offset + s.values.size()) + ") is outside " +
                                                s.shape.to_string());
      records.push_back({s.variable, &s.shape, s.offset, s.values});
    }
    std::filesystem::create_directories(dir_);
    detail::atomic_file out(dir_ / detail::data_file_name(step, ps_task, ps_tasks));
    detail::write_data_file(out, step, ps_task, ps_tasks, records);
    out.commit();
  }

  /// Chief: verifies every data file of @p step against @p plan, and the table files if the ps
  /// tasks wrote any (every task's or none; header, trailer and CRC; a delta's base committed),
  /// writes the manifest and the "checkpoint" index, then deletes checkpoints beyond keep()
  /// (but those a kept incremental checkpoint's tables build on) and leftovers of older steps.
  /// Checkpoints of steps after @p step (from a run that was abandoned) are deleted too.
  /// @throws dsgd::error errc::checkpoint_corrupt naming a missing or damaged data or table
  ///         file, a shard of @p plan it lacks, or a delta's base that is not committed.
  void commit(std::uint64_t step, const placement::plan& plan) const {
    detail::manifest m{.step = step, .placement_fingerprint = plan.fingerprint(), .placement = plan.describe()};
    const auto n = plan.ps_tasks();
    for (std::size_t i = 0; i < n; ++i) {
      auto name = detail::data_file_name(step, i, n);
      std::string bytes;
      try {
        bytes = detail::read_file(dir_ / name, std::numeric_limits<std::size_t>::max());
      } catch (const error& e) {
        if (e.code() != errc::not_found) throw;
        throw error(errc::checkpoint_corrupt, name + ": missing; ps task " + std::to_string(i) +
                                                  " has not written its part of step " + std::to_string(step));
      }
      auto parsed = detail::parse_data_file(detail::as_bytes(bytes), name);
      if (parsed.step != step || parsed.ps_task != i || parsed.ps_tasks != n)
        throw error(errc::checkpoint_corrupt, name + ": header names another step or task");
      // The manifest has the data files' version; they must agree (only an older build's files
      // and this build's could differ).
      if (i == 0) m.version = parsed.version;
      if (parsed.version != m.version)
        throw error(errc::checkpoint_corrupt, name + ": format version " + std::to_string(parsed.version) + ", but " +
                                                  detail::data_file_name(step, 0, n) + " has " +
                                                  std::to_string(m.version));
      for (const auto& s : plan.shards()) {
        if (s.ps_task != i) continue;
        const auto& v = plan.variables()[s.variable];
        bool held = std::any_of(parsed.records.begin(), parsed.records.end(), [&](const auto& r) {
          return r.variable == v.name && r.shape == v.shape && r.offset == s.offset && r.count == s.elements;
        });
        if (!held)
          throw error(errc::checkpoint_corrupt, name + ": lacks " + v.name + v.shape.to_string() + " elements [" +
                                                    std::to_string(s.offset) + ", " +
                                                    std::to_string(s.offset + s.elements) + ")");
      }
      m.files.push_back({name, bytes.size(), dsgd::detail::crc32c(detail::as_bytes(bytes))});
    }
    add_table_files(m, n);
    detail::write_file_atomically(dir_ / detail::manifest_name(step), detail::encode_manifest(m));
    prune(step);
  }

  /// Single process holding every variable: writes one data file and commits it.
  void save(std::uint64_t step, std::span<const shard_data> variables) const {
    std::vector<placement::variable_info> infos;
    std::vector<placement::shard> shards;
    for (const auto& s : variables) {
      auto it = std::find_if(infos.begin(), infos.end(), [&](const auto& v) { return v.name == s.variable; });
      if (it == infos.end()) it = infos.insert(infos.end(), {s.variable, s.shape});
      shards.push_back({static_cast<std::size_t>(it - infos.begin()), 0, s.offset, s.values.size()});
    }
    write_shard_file(step, 0, 1, variables);
    commit(step, placement::plan(std::move(infos), 1, std::move(shards)));
  }

  /// @returns the steps whose manifest exists and verifies, oldest first.
  std::vector<std::uint64_t> steps() const {
    std::vector<std::uint64_t> out;
    for (auto s : manifest_steps()) {
      try {
        auto mname = detail::manifest_name(s);
        if (detail::parse_manifest(detail::read_file(dir_ / mname, detail::max_manifest_bytes), mname).step == s)
          out.push_back(s);
      } catch (const error&) {
        // A manifest that does not verify is not a checkpoint; open() names what is wrong.
      }
    }
    return out;
  }

  /// @returns the newest step whose manifest verifies, if any.
  std::optional<std::uint64_t> latest() const {
    auto s = steps();
    if (s.empty()) return std::nullopt;
    return s.back();
  }

  /// Loads and verifies checkpoint @p step (see checkpoint_reader).
  checkpoint_reader open(std::uint64_t step) const { return checkpoint_reader(dir_, step); }

 private:
  // The table files of @p m's step (checkpoint/table_file.hpp), if its ps tasks wrote any:
  // each verified (header, trailer, whole-file CRC), all of one kind, and a delta's base
  // committed; named in the manifest with what their tables are a delta of.
  void add_table_files(detail::manifest& m, std::size_t n) const {
    std::vector<verified_table_file> found(n);
    std::size_t present = 0;
    std::optional<std::size_t> absent;
    for (std::size_t i = 0; i < n; ++i) {
      try {
        found[i] = verify_table_file(dir_ / detail::table_file_name(m.step, i, n));
        ++present;
      } catch (const error& e) {
        if (e.code() != errc::not_found) throw;
        if (!absent) absent = i;
      }
    }
    if (present == 0) return;
    if (absent)
      throw error(errc::checkpoint_corrupt, detail::table_file_name(m.step, *absent, n) + ": missing; ps task " +
                                                std::to_string(*absent) + " has not written its tables of step " +
                                                std::to_string(m.step) + " (ps task " +
                                                std::to_string(*absent == 0 ? 1 : 0) + " has)");
    for (std::size_t i = 0; i < n; ++i) {
      const auto name = detail::table_file_name(m.step, i, n);
      const auto& info = found[i].info;
      if (info.step != m.step || info.ps_task != i || info.ps_tasks != n)
        throw error(errc::checkpoint_corrupt, name + ": header names another step or task");
      if (info.kind != found[0].info.kind || info.delta_of != found[0].info.delta_of)
        throw error(errc::checkpoint_corrupt, name + ": " + describe(info) + ", but " +
                                                  detail::table_file_name(m.step, 0, n) + " is " +
                                                  describe(found[0].info));
      m.table_files.push_back({name, found[i].bytes, found[i].crc32c});
    }
    if (found[0].info.kind == table_file_kind::delta) {
      const auto base = found[0].info.delta_of;
      const auto mname = detail::manifest_name(base);
      try {
        if (detail::parse_manifest(detail::read_file(dir_ / mname, detail::max_manifest_bytes), mname).step != base)
          throw error(errc::checkpoint_corrupt, mname + ": names another step");
      } catch (const error& e) {
        throw error(errc::checkpoint_corrupt, "checkpoint " + std::to_string(m.step) +
                                                  ": its tables are a delta of checkpoint " + std::to_string(base) +
                                                  ", which is not committed: " + e.what());
      }
      m.tables_delta_of = base;
    }
  }
  static std::string describe(const table_file_info& info) {
    return info.kind == table_file_kind::full ? std::string("full tables")
                                              : "a delta of checkpoint " + std::to_string(info.delta_of);
  }

  // @returns what checkpoint @p s's tables are a delta of, if it is an incremental checkpoint
  // whose manifest verifies.
  std::optional<std::uint64_t> delta_of(std::uint64_t s) const {
    try {
      auto mname = detail::manifest_name(s);
      return detail::parse_manifest(detail::read_file(dir_ / mname, detail::max_manifest_bytes), mname).tables_delta_of;
    } catch (const error&) {
      return std::nullopt;
    }
  }

  // "ckpt-<digits>.<rest>": the step, if @p name is one of ours.
  static std::optional<std::uint64_t> step_of(const std::string& name, std::string* rest = nullptr) {
    if (name.rfind("ckpt-", 0) != 0) return std::nullopt;
    auto dot = name.find('.', 5);
    if (dot == std::string::npos || dot == 5) return std::nullopt;
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(name.data() + 5, name.data() + dot, v);
    if (ec != std::errc{} || p != name.data() + dot) return std::nullopt;
    if (rest) *rest = name.substr(dot + 1);
    return v;
  }

  std::vector<std::uint64_t> manifest_steps() const {
    std::vector<std::uint64_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      std::string rest;
      auto s = step_of(e.path().filename().string(), &rest);
      if (s && rest == "manifest") out.push_back(*s);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  void prune(std::uint64_t committed) const {
    auto all = manifest_steps();
    std::vector<std::uint64_t> kept;
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (*it <= committed && (keep_ == 0 || kept.size() < keep_)) kept.push_back(*it);
    // An incremental checkpoint kept keeps the chain its tables restore from.
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (auto base = delta_of(kept[i]); base && std::binary_search(all.begin(), all.end(), *base) &&
                                         std::find(kept.begin(), kept.end(), *base) == kept.end())
        kept.push_back(*base);
    std::sort(kept.begin(), kept.end());
    std::string index = "model_checkpoint_path: \"ckpt-" + std::to_string(committed) + "\"\n";
    for (auto s : kept) index += "all_model_checkpoint_paths: \"ckpt-" + std::to_string(s) + "\"\n";
    detail::write_file_atomically(dir_ / "checkpoint", index);

    // Manifests go first, so a crash part-way leaves only files that restore ignores.
    auto dropped = [&](std::uint64_t s) { return !std::binary_search(kept.begin(), kept.end(), s); };
    for (auto s : all)
      if (dropped(s)) std::filesystem::remove(dir_ / detail::manifest_name(s));
    bool removed = false;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      auto name = e.path().filename().string();
      std::string rest;
      auto s = step_of(name, &rest);
      // Files of later steps without a manifest may be a checkpoint being written right now.
      bool later_in_progress = s && *s > committed && !std::binary_search(all.begin(), all.end(), *s);
      // A residual temporary of the step just committed may be a worker's being written now.
      bool stale_temp = s && *s <= committed && rest.find(".tmp.") != std::string::npos &&
                        (*s < committed || rest.find(".residual.tmp.") == std::string::npos);
      if (s && ((dropped(*s) && !later_in_progress) || stale_temp) && rest != "manifest") {
        std::filesystem::remove(e.path());
        removed = true;
      }
    }
    if (removed) detail::fsync_directory(dir_);
  }

  std::filesystem::path dir_;
  std::size_t keep_;
};

}  // namespace dsgd::checkpoint
