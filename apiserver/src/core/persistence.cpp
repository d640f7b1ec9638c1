// SQLite persistence: one table of objects, one row holding the global revision.
#include "core/persistence.hpp"

#include <sqlite3.h>

#include <stdexcept>

#include "core/engine.hpp"

namespace kopf::apiserver::core {

Persistence::Persistence(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    auto file = (dir / "apiserver.sqlite3").string();
    check(sqlite3_open(file.c_str(), &db_), "open");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    exec(
        "CREATE TABLE IF NOT EXISTS objects (storage TEXT NOT NULL, key TEXT NOT NULL, "
        "body TEXT NOT NULL, PRIMARY KEY (storage, key))");
    exec("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)");
    check(sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO objects VALUES (?, ?, ?)", -1, &put_,
                             nullptr),
          "prepare");
    check(sqlite3_prepare_v2(db_, "DELETE FROM objects WHERE storage = ? AND key = ?", -1, &erase_,
                             nullptr),
          "prepare");
    check(sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO meta VALUES ('revision', ?)", -1,
                             &revision_, nullptr),
          "prepare");
}

Persistence::~Persistence() {
    sqlite3_finalize(put_);
    sqlite3_finalize(erase_);
    sqlite3_finalize(revision_);
    sqlite3_close(db_);
}

void Persistence::check(int rc, const char* what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        throw std::runtime_error(std::string("sqlite ") + what + ": " +
                                 (db_ ? sqlite3_errmsg(db_) : "cannot open"));
}

void Persistence::exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        throw std::runtime_error(std::string("sqlite: ") + msg);
    }
}

void Persistence::load(
    const std::function<void(const std::string&, const std::string&, const std::string&)>& visit) {
    sqlite3_stmt* st = nullptr;
    check(sqlite3_prepare_v2(db_, "SELECT storage, key, body FROM objects", -1, &st, nullptr),
          "prepare");
    while (sqlite3_step(st) == SQLITE_ROW) {
        auto col = [&](int i) {
            return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i)));
        };
        visit(col(0), col(1), col(2));
    }
    sqlite3_finalize(st);
}

uint64_t Persistence::load_revision() {
    sqlite3_stmt* st = nullptr;
    check(
        sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE name = 'revision'", -1, &st, nullptr),
        "prepare");
    uint64_t rv = 0;
    if (sqlite3_step(st) == SQLITE_ROW) rv = static_cast<uint64_t>(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    return rv;
}

void Persistence::put(const std::string& storage_key, const std::string& object_key,
                      const std::string& json_text, uint64_t revision) {
    exec("BEGIN");
    sqlite3_reset(put_);
    sqlite3_bind_text(put_, 1, storage_key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(put_, 2, object_key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(put_, 3, json_text.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(put_);
    sqlite3_reset(revision_);
    sqlite3_bind_int64(revision_, 1, static_cast<sqlite3_int64>(revision));
    int rc2 = sqlite3_step(revision_);
    if (rc != SQLITE_DONE || rc2 != SQLITE_DONE) {
        exec("ROLLBACK");
        check(rc != SQLITE_DONE ? rc : rc2, "write");
    }
    exec("COMMIT");
}

void Persistence::erase(const std::string& storage_key, const std::string& object_key,
                        uint64_t revision) {
    exec("BEGIN");
    sqlite3_reset(erase_);
    sqlite3_bind_text(erase_, 1, storage_key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(erase_, 2, object_key.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(erase_);
    sqlite3_reset(revision_);
    sqlite3_bind_int64(revision_, 1, static_cast<sqlite3_int64>(revision));
    int rc2 = sqlite3_step(revision_);
    if (rc != SQLITE_DONE || rc2 != SQLITE_DONE) {
        exec("ROLLBACK");
        check(rc != SQLITE_DONE ? rc : rc2, "delete");
    }
    exec("COMMIT");
}

void Engine::load_persisted() {
    persistence_ = std::make_unique<Persistence>(options_.data_dir);
    rv_ = persistence_->load_revision();
    persistence_->load(
        [&](const std::string& storage, const std::string& key, const std::string& body) {
            json obj = json::parse(body, nullptr, false);
            if (obj.is_discarded()) return;
            store_[storage][key] = std::make_shared<const json>(std::move(obj));
            gc_relevant_ = true;  // restored objects may carry ownerReferences
        });
    // CRDs publish their resources again.
    auto it = store_.find("apiextensions.k8s.io/customresourcedefinitions");
    if (it != store_.end())
        for (const auto& [key, crd] : it->second) sync_crd(*crd);
}

}  // namespace kopf::apiserver::core
