// Durable storage of objects and the resourceVersion counter in SQLite
// (WAL journal, synchronous=FULL): every write is on disk before it returns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace kopf::apiserver::core {

class Persistence {
  public:
    explicit Persistence(const std::filesystem::path& dir);  // throws std::runtime_error
    ~Persistence();
    Persistence(const Persistence&) = delete;
    Persistence& operator=(const Persistence&) = delete;

    // Calls `visit(storage_key, object_key, json_text)` for every stored object.
    void load(const std::function<void(const std::string&, const std::string&, const std::string&)>&
                  visit);
    uint64_t load_revision();
    void put(const std::string& storage_key, const std::string& object_key,
             const std::string& json_text, uint64_t revision);
    void erase(const std::string& storage_key, const std::string& object_key, uint64_t revision);

  private:
    void exec(const char* sql);
    void check(int rc, const char* what);
    sqlite3* db_ = nullptr;
    sqlite3_stmt* put_ = nullptr;
    sqlite3_stmt* erase_ = nullptr;
    sqlite3_stmt* revision_ = nullptr;
};

}  // namespace kopf::apiserver::core
