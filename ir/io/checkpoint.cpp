#include "ir/io/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(SourceLoc{path}, fmt::format("cannot open: {}", std::strerror(errno)));
  return {std::istreambuf_iterator<char>(f), {}};
}

// The shard index: tensor name -> shard file name, as the JSON gives it.
std::map<std::string, std::string> parse_index(const std::string& path) {
  const std::string text = read_text(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(SourceLoc{path, 0, static_cast<int64_t>(e.byte)},
                    fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw UserError(SourceLoc{path},
                    "expected a shard index: a JSON object with a \"weight_map\" object "
                    "(tensor name -> shard file)");
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw UserError(SourceLoc{path},
                      fmt::format("weight_map[\"{}\"]: expected a shard file name, found {}", name,
                                  file.dump()));
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      throw UserError(SourceLoc{path},
                      fmt::format("weight_map[\"{}\"]: shard '{}' is not a file name in the "
                                  "index's folder",
                                  name, f));
    out.emplace(name, f);
  }
  if (out.empty()) throw UserError(SourceLoc{path}, "weight_map is empty: no tensors");
  return out;
}

// Writes `bytes` to `f`; false on failure.
bool put(FILE* f, const void* p, size_t n) {
  return n == 0 || std::fwrite(p, 1, n, f) == n;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(SourceLoc{path}, "write failed (disk full or not writable?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw UserError(SourceLoc{path}, fmt::format("cannot rename: {}", ec.message()));
}

}  // namespace

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const CheckpointTensor& t, const std::string& n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Checkpoint open_checkpoint(const std::string& path) {
  Checkpoint ck;
  ck.source = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UserError(SourceLoc{path},
                    "no such file (expected a .safetensors file or a shard "
                    "index such as model.safetensors.index.json)");
  if (ends_with(path, ".safetensors")) {
    ck.shards.push_back(read_safetensors(path));
    for (const SafetensorsTensor& t : ck.shards[0].tensors) ck.tensors.push_back({t.name, 0, &t});
    return ck;
  }
  if (!ends_with(path, ".json"))
    throw UserError(SourceLoc{path},
                    "expected a .safetensors file or a .json shard index "
                    "(model.safetensors.index.json)");
  const std::map<std::string, std::string> index = parse_index(path);
  const fs::path dir = fs::path(path).parent_path();
  std::map<std::string, size_t> shard_of_file;
  for (const auto& [name, file] : index) {
    if (shard_of_file.count(file)) continue;
    const std::string shard_path = (dir / file).string();
    if (!fs::is_regular_file(shard_path, ec))
      throw UserError(SourceLoc{path}, fmt::format("shard '{}' (of tensor '{}') does not exist: {}",
                                                   file, name, shard_path));
    shard_of_file.emplace(file, ck.shards.size());
    ck.shards.push_back(read_safetensors(shard_path));
  }
  for (const auto& [name, file] : index) {
    const size_t s = shard_of_file.at(file);
    const SafetensorsTensor* t = ck.shards[s].find(name);
    if (t == nullptr)
      throw UserError(SourceLoc{path}, fmt::format("tensor '{}' is mapped to shard '{}', which "
                                                   "does not hold it",
                                                   name, file));
    ck.tensors.push_back({name, s, t});
  }
  // Every shard tensor must be in the index (a checkpoint whose listing hides tensors would be
  // half-read without a word).
  for (const auto& [file, s] : shard_of_file)
    for (const SafetensorsTensor& t : ck.shards[s].tensors) {
      auto it = index.find(t.name);
      if (it == index.end())
        throw UserError(SourceLoc{path},
                        fmt::format("shard '{}' holds tensor '{}', which the index does not "
                                    "name",
                                    file, t.name));
      if (it->second != file)
        throw UserError(SourceLoc{path},
                        fmt::format("tensor '{}' is in shard '{}' and in shard '{}' (the index "
                                    "names '{}')",
                                    t.name, file, it->second, it->second));
    }
  std::sort(ck.tensors.begin(), ck.tensors.end(),
            [](const CheckpointTensor& a, const CheckpointTensor& b) { return a.name < b.name; });
  return ck;
}

uint64_t CheckpointEntry::bytes() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * static_cast<uint64_t>(st_dtype_bytes(dtype));
}

CheckpointWriteResult write_checkpoint(const std::string& dir,
                                       const std::vector<CheckpointEntry>& plan,
                                       uint64_t max_shard_bytes, const TensorProducer& produce,
                                       const std::map<std::string, std::string>& metadata) {
  // Shards: consecutive runs of the plan, closed when the next tensor would overflow.
  std::vector<std::vector<size_t>> shards;
  uint64_t in_shard = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const uint64_t b = plan[i].bytes();
    if (shards.empty() || (in_shard > 0 && in_shard + b > max_shard_bytes)) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(i);
    in_shard += b;
  }
  CheckpointWriteResult res;
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  std::vector<std::byte> buf;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file =
        fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    const std::string path = (fs::path(dir) / file).string();
    // Larger elements first keeps every tensor aligned to its element size (as
    // write_safetensors does); the plan's order otherwise.
    std::vector<size_t> order = shards[s];
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return st_dtype_bytes(plan[a].dtype) > st_dtype_bytes(plan[b].dtype);
    });
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    header["__metadata__"] = meta;
    uint64_t offset = 0;
    for (size_t i : order) {
      const CheckpointEntry& e = plan[i];
      SG_ASSERT(
          e.name != "__metadata__" && !header.contains(e.name) && !weight_map.contains(e.name),
          "tensor name reserved or repeated: " + e.name);
      header[e.name] = {{"dtype", to_string(e.dtype)},
                        {"shape", e.shape},
                        {"data_offsets", {offset, offset + e.bytes()}}};
      offset += e.bytes();
      weight_map[e.name] = file;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-byte aligned

    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f)
      throw UserError(SourceLoc{path}, fmt::format("cannot create: {}", std::strerror(errno)));
    auto fail = [&](const std::string& why) {
      std::fclose(f);
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(SourceLoc{path}, why);
    };
    const uint64_t len = text.size();
    if (!put(f, &len, 8) || !put(f, text.data(), text.size()))
      fail("write failed (disk full or not writable?)");
    for (size_t i : order) {
      buf.resize(plan[i].bytes());
      try {
        produce(i, buf);
      } catch (...) {
        std::fclose(f);
        std::error_code ec;
        fs::remove(tmp, ec);
        throw;
      }
      if (!put(f, buf.data(), buf.size())) fail("write failed (disk full or not writable?)");
    }
    if (std::fclose(f) != 0) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(SourceLoc{path}, "write failed (disk full or not writable?)");
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw UserError(SourceLoc{path}, fmt::format("cannot rename: {}", ec.message()));
    res.shard_files.push_back(file);
    res.total_bytes += offset;
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", res.total_bytes}};
  index["weight_map"] = weight_map;
  res.index_file = "model.safetensors.index.json";
  write_text_file((fs::path(dir) / res.index_file).string(), index.dump(2) + "\n");
  return res;
}

}  // namespace sparsegen
