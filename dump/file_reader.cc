#include "dump/file_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "ir/limits.h"

namespace spmdsim::dump {

namespace fs = std::filesystem;

namespace {

// Inputs (decompressed) beyond this are refused.
constexpr size_t kMaxDecompressedBytes = ir::kMaxInputBytes;

std::string TooLarge(size_t limit) {
  return "more than " + std::to_string(limit >> 20) +
         " MiB of text, the most spmdsim reads in one input (ir/limits.h)";
}

// The size to decompress into first: the last member's length from its trailer (RFC 1952 ISIZE,
// modulo 2^32; exact for the usual single member), no more than deflate can expand the data
// (at most 1032 to 1), so a forged trailer cannot make a small input allocate much. Sizing the
// buffer once spares the growing copies: a 2 GiB input grown by doubling peaked at 3.5 GB.
size_t ExpectedSize(std::string_view gzip) {
  constexpr size_t kMinimum = size_t{1} << 16;
  if (gzip.size() < 18) return kMinimum;  // a 10-byte header and an 8-byte trailer
  size_t isize = 0;
  for (size_t k = 0; k < 4; ++k) {
    isize |= size_t{static_cast<unsigned char>(gzip[gzip.size() - 4 + k])} << (8 * k);
  }
  const size_t most = gzip.size() > SIZE_MAX / 1032 ? SIZE_MAX : gzip.size() * 1032;
  return std::max(kMinimum, std::min(isize, most));
}

DumpError IoError(const std::string& name, const std::string& what) {
  return DumpError{DumpErrorKind::kIo, name, name + ": error: " + what};
}

// Reads `path` whole (a file, a pipe, /dev/stdin), decompressing gzip; messages name `name`.
DumpResult<std::string> ReadWhole(const std::string& path, const std::string& name) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return IoError(name, "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(name, "cannot open file");
  std::string data;
  // A regular file is read in one piece into a buffer of its size (no growing copies: a 100 MB
  // dump would otherwise be copied several times); pipes and the like are streamed.
  const auto size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && size > kMaxDecompressedBytes) return IoError(name, TooLarge(kMaxDecompressedBytes));
  if (!ec && size > 0) {
    data.resize(size);
    in.read(data.data(), static_cast<std::streamsize>(size));
    data.resize(static_cast<size_t>(in.gcount()));  // a file that shrank meanwhile
    if (in.bad()) return IoError(name, "read failed");
  } else {
    // A pipe or device: read in pieces, the limit checked before the buffer grows, and the
    // buffer grown by doubling no further than the limit (a 2 GiB string doubled to 4 GiB would
    // fail an address-space limit with "out of memory" before the input limit was reached).
    std::vector<char> chunk(size_t{1} << 20);
    while (in) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const size_t got = static_cast<size_t>(in.gcount());
      if (got > kMaxDecompressedBytes - data.size()) {
        return IoError(name, TooLarge(kMaxDecompressedBytes));
      }
      if (data.size() + got > data.capacity()) {
        data.reserve(
            std::min(std::max(data.capacity() * 2, data.size() + got), kMaxDecompressedBytes));
      }
      data.append(chunk.data(), got);
    }
    if (in.bad()) return IoError(name, "read failed");
  }
  if (!IsGzip(data)) return data;
  DumpResult<std::string> text = Gunzip(data);
  if (!text) return IoError(name, text.error().message);
  return text;
}

}  // namespace

bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

DumpResult<std::string> Gunzip(std::string_view data) {
  const auto failure = [](std::string message) {
    return DumpError{DumpErrorKind::kIo, "", std::move(message)};
  };
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return failure("cannot initialise zlib");
  std::string out;
  out.resize(
      std::min(std::max<size_t>(data.size() * 4, ExpectedSize(data)), kMaxDecompressedBytes));
  // Counted here, not by zlib: inflateReset (between concatenated members) zeroes total_out.
  size_t produced = 0;
  size_t consumed = 0;
  int ret = Z_OK;
  while (true) {
    if (produced >= out.size()) {
      if (out.size() >= kMaxDecompressedBytes) {
        inflateEnd(&stream);
        return failure("decompresses to " + TooLarge(kMaxDecompressedBytes));
      }
      out.resize(std::min(out.size() * 2, kMaxDecompressedBytes));
    }
    const size_t in_chunk = std::min<size_t>(data.size() - consumed, 1u << 30);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    const uInt out_before = stream.avail_out;
    ret = inflate(&stream, Z_NO_FLUSH);
    produced += out_before - stream.avail_out;
    consumed += in_chunk - stream.avail_in;
    if (ret == Z_STREAM_END) {
      // Concatenated gzip members are legal; continue with the next one if any input remains.
      if (consumed == data.size()) break;
      inflateReset(&stream);
      continue;
    }
    if (ret != Z_OK && ret != Z_BUF_ERROR) break;
    if (ret == Z_BUF_ERROR && consumed == data.size()) break;
  }
  const bool ok = ret == Z_STREAM_END;
  out.resize(produced);
  inflateEnd(&stream);
  if (!ok) return failure("corrupt or truncated gzip data");
  return out;
}

DumpResult<std::string> ReadFileContents(const std::string& given) {
  // "-" is standard input, which can be read once.
  static bool stdin_taken = false;
  const bool from_stdin = given == "-";
  const std::string name = from_stdin ? std::string(kStdinName) : given;
  if (from_stdin && std::exchange(stdin_taken, true)) {
    return DumpError{DumpErrorKind::kUsage, name,
                     name + ": error: standard input (-) is named twice; it can be read once"};
  }
  return ReadWhole(from_stdin ? "/dev/stdin" : given, name);
}

}  // namespace spmdsim::dump
