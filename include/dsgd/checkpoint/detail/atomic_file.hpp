// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Crash-safe file replacement: write "<name>.tmp.<pid>", fsync it, rename it over <name>, fsync
/// the directory. A reader sees either the old file or the whole new one, never a prefix.
// IWYU pragma: private, include <dsgd/checkpoint/saver.hpp>
#pragma once

#include <dsgd/error.hpp>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsgd::checkpoint::detail {

[[noreturn]] inline void throw_io(const std::string& what, const std::filesystem::path& path, int err) {
  throw error(error_code(err, boost::system::system_category()),
              what + " " + path.string() + ": " + std::strerror(err));
}

/// fsyncs directory @p dir, so that a rename or unlink inside it survives a power loss.
inline void fsync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_io("cannot open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as
  // they make it, which is all we can do.
  if (rc != 0 && err != EINVAL) throw_io("cannot fsync directory", dir, err);
}

/// A file being written under a temporary name; commit() puts it in place atomically, and
/// destruction without commit() removes the temporary.
class atomic_file {
 public:
  explicit atomic_file(std::filesystem::path target)
      : target_(std::move(target)), temp_(target_.string() + ".tmp." + std::to_string(::getpid())) {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_io("cannot create", temp_, errno);
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove(temp_, ignored);
    }
  }

  const std::filesystem::path& temp_path() const noexcept { return temp_; }

  /// Appends @p data, retrying short writes and EINTR.
  void write(std::span<const std::byte> data) {
    const std::byte* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_io("cannot write", temp_, errno);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  void write(std::string_view s) {
    write(std::span<const std::byte>(reinterpret_cast<const std::byte*>(s.data()), s.size()));
  }

  /// fsyncs and closes the temporary, renames it over the target and fsyncs the directory.
  void commit() {
    if (::fsync(fd_) != 0) throw_io("cannot fsync", temp_, errno);
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw_io("cannot close", temp_, errno);
    if (::rename(temp_.c_str(), target_.c_str()) != 0) throw_io("cannot rename onto", target_, errno);
    committed_ = true;
    auto dir = target_.parent_path();
    fsync_directory(dir.empty() ? std::filesystem::path(".") : dir);
  }

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Replaces @p target with @p contents atomically (see atomic_file).
inline void write_file_atomically(const std::filesystem::path& target, std::string_view contents) {
  atomic_file f(target);
  f.write(contents);
  f.commit();
}

/// @returns the whole of @p path, refusing files over @p max_bytes before allocating.
inline std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) throw error(errc::not_found, "checkpoint file " + path.string() + " does not exist");
    throw_io("cannot open", path, err);
  }
  struct ::stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw_io("cannot stat", path, err);
  }
  auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw error(errc::checkpoint_corrupt, path.filename().string() + ": " + std::to_string(size) +
                                              " bytes is more than the limit of " + std::to_string(max_bytes));
  }
  std::string out(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, out.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw_io("cannot read", path, err);
    }
    if (n == 0) break;  // the file shrank while we read it
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

}  // namespace dsgd::checkpoint::detail
