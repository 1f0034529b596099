// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-export-table: writes an embedding table of a checkpoint (full, or incremental: its base
// and deltas merged) as key -> row for serving (checkpoint::write_export; docs/checkpoints.md,
// "Export").
//
//   dsgd-export-table --dir ckpt [--step 900] [--table user_id] [--format binary|text] [--out FILE]
//   dsgd-export-table --dir ckpt --list
//
// Without --step, the newest committed checkpoint; without --table, the checkpoint's only table;
// without --out, "<table>.emb" (binary) or "<table>.txt" (text) in the current directory.
// Exit status: 0 done, 1 a bad checkpoint or I/O error (the message names the file), 2 usage.

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/table_export.hpp>
#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/error.hpp>

#include <boost/program_options.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace ck = dsgd::checkpoint;

int main(int argc, char** argv) {
  po::options_description desc("dsgd-export-table options");
  desc.add_options()("help,h", "this text")("dir", po::value<std::string>(), "the checkpoint directory (required)")(
      "step", po::value<std::uint64_t>(), "the checkpoint's step (default: the newest committed)")(
      "table", po::value<std::string>(), "the table's name (default: the only one)")(
      "format", po::value<std::string>()->default_value("binary"), "binary or text")(
      "out", po::value<std::string>(), "the file to write (default: <table>.emb or <table>.txt)")(
      "list", "list the checkpoint's tables (id, name, dim, rows) and write nothing");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "dsgd-export-table: " << e.what() << "\n\n" << desc;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (!vm.count("dir")) {
    std::cerr << "dsgd-export-table: --dir is required\n\n" << desc;
    return 2;
  }
  const auto format = vm["format"].as<std::string>();
  if (format != "binary" && format != "text") {
    std::cerr << "dsgd-export-table: --format is binary or text, not \"" << format << "\"\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = vm["dir"].as<std::string>();
    std::uint64_t step = 0;
    if (vm.count("step")) {
      step = vm["step"].as<std::uint64_t>();
    } else if (auto latest = ck::saver(dir, 0).latest()) {
      step = *latest;
    } else {
      std::cerr << "dsgd-export-table: " << dir.string() << " holds no committed checkpoint\n";
      return 1;
    }
    const auto tables = ck::read_tables(dir, step);
    if (vm.count("list")) {
      for (const auto& t : tables)
        std::cout << t.id << "\t" << t.spec.name << "\tdim " << t.dim << "\t" << t.rows() << " rows\n";
      return 0;
    }
    const ck::merged_table* chosen = nullptr;
    if (vm.count("table")) {
      const auto name = vm["table"].as<std::string>();
      for (const auto& t : tables)
        if (t.spec.name == name) chosen = &t;
      if (!chosen) {
        std::cerr << "dsgd-export-table: checkpoint " << step << " holds no table '" << name << "' (--list)\n";
        return 1;
      }
    } else if (tables.size() == 1) {
      chosen = &tables.front();
    } else {
      std::cerr << "dsgd-export-table: checkpoint " << step << " holds " << tables.size()
                << " tables: name one with --table (--list)\n";
      return tables.empty() ? 1 : 2;
    }
    const bool text = format == "text";
    const std::filesystem::path out =
        vm.count("out") ? vm["out"].as<std::string>() : chosen->spec.name + (text ? ".txt" : ".emb");
    ck::write_export(*chosen, step, out, text ? ck::export_format::text : ck::export_format::binary);
    std::cout << "dsgd-export-table: wrote " << chosen->rows() << " rows of '" << chosen->spec.name << "' (dim "
              << chosen->dim << ") of checkpoint " << step << " to " << out.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dsgd-export-table: " << e.what() << "\n";
    return 1;
  }
}
