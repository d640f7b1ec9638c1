// Where Kopf++ keeps handling progress and the diff base on each object (Kopf's formats).
//
//     settings.persistence.progress_storage = std::make_shared<kopf::StatusProgressStorage>();
//     settings.persistence.diffbase_storage =
//         std::make_shared<kopf::AnnotationsDiffBaseStorage>("my-op.example.com");
#pragma once

#include <kopf/json.hpp>
#include <kopf/patch.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kopf {

/// Annotation-key shaping per Kubernetes limits (Kopf's V1 and V2 keys, hashing suffix).
class StorageKeyConvention {
  public:
    StorageKeyConvention(std::string prefix, bool v1);
    /// The V2 key, then the V1 key if different (V1 only when enabled).
    std::vector<std::string> make_keys(const std::string& key, const json* body = nullptr) const;
    std::string make_v1_key(const std::string& key) const;
    std::string make_v2_key(const std::string& key) const;
    static std::string make_safe_key(const std::string& key);
    /// "-" + base64(blake2b(key, 4 bytes), altchars "-.") with "=-." stripped on the right.
    static std::string make_suffix(const std::string& key);
    const std::string& prefix() const { return prefix_; }

  protected:
    /// As make_keys(), built once per key: storages look their keys up several times per
    /// processed event, and building them was a sixth of the allocations per handled object.
    const std::vector<std::string>& cached_keys(const std::string& key,
                                                const json* body = nullptr) const;
    void store_marker(const json& body, Patch& patch) const;
    const std::string prefix_;  // fixed at construction: the cached keys depend on it
    const bool v1_;

  private:
    std::vector<std::string> keys_of(const std::string& marked_key) const;
    struct KeyCache;
    std::shared_ptr<KeyCache> key_cache_;  // shared by copies, which have the same prefix
};

/// Per-handler progress records ("started", "retries", ...).
class ProgressStorage {
  public:
    virtual ~ProgressStorage() = default;
    virtual std::optional<json> fetch(const std::string& key, const json& body) const = 0;
    virtual void store(const std::string& key, const json& record, const json& body,
                       Patch& patch) const = 0;
    virtual void purge(const std::string& key, const json& body, Patch& patch) const = 0;
    virtual void touch(const json& body, Patch& patch,
                       const std::optional<std::string>& value) const = 0;
    /// Remove this storage's traces from an essence (before diffing).
    virtual json clear(json essence) const;
};

/// `metadata.annotations["kopf.zalando.org/<id>"]` = compact JSON (nulls dropped unless verbose).
class AnnotationsProgressStorage : public ProgressStorage, public StorageKeyConvention {
  public:
    explicit AnnotationsProgressStorage(std::string prefix = "kopf.zalando.org",
                                        bool verbose = false, std::string touch_key = "touch-dummy",
                                        bool v1 = true);
    std::optional<json> fetch(const std::string& key, const json& body) const override;
    void store(const std::string& key, const json& record, const json& body,
               Patch& patch) const override;
    void purge(const std::string& key, const json& body, Patch& patch) const override;
    void touch(const json& body, Patch& patch,
               const std::optional<std::string>& value) const override;
    json clear(json essence) const override;

  private:
    bool verbose_;
    std::string touch_key_;
};

/// `status.kopf.progress.<id>` = a full record (the legacy storage of Kopf <= 1.43).
class StatusProgressStorage : public ProgressStorage {
  public:
    explicit StatusProgressStorage(std::string name = "kopf",
                                   std::string field = "status.{name}.progress",
                                   std::string touch_field = "status.{name}.dummy");
    std::optional<json> fetch(const std::string& key, const json& body) const override;
    void store(const std::string& key, const json& record, const json& body,
               Patch& patch) const override;
    void purge(const std::string& key, const json& body, Patch& patch) const override;
    void touch(const json& body, Patch& patch,
               const std::optional<std::string>& value) const override;
    json clear(json essence) const override;

  protected:
    std::vector<std::string> field_;
    std::vector<std::string> touch_field_;
};

/// Reads and purges `status.kopf.progress`, never writes it (Kopf >= 1.44).
class NoWriteStatusProgressStorage : public StatusProgressStorage {
  public:
    using StatusProgressStorage::StatusProgressStorage;
    void store(const std::string&, const json&, const json&, Patch&) const override {}
    void touch(const json&, Patch&, const std::optional<std::string>&) const override {}
};

/// Reads from the first storage that has a record; writes to all.
class MultiProgressStorage : public ProgressStorage {
  public:
    explicit MultiProgressStorage(std::vector<std::shared_ptr<ProgressStorage>> storages);
    std::optional<json> fetch(const std::string& key, const json& body) const override;
    void store(const std::string& key, const json& record, const json& body,
               Patch& patch) const override;
    void purge(const std::string& key, const json& body, Patch& patch) const override;
    void touch(const json& body, Patch& patch,
               const std::optional<std::string>& value) const override;
    json clear(json essence) const override;

  protected:
    std::vector<std::shared_ptr<ProgressStorage>> storages_;
};

/// The default: annotations (read+write) and the legacy status (read+purge).
class SmartProgressStorage : public MultiProgressStorage {
  public:
    explicit SmartProgressStorage(std::string name = "kopf",
                                  std::string prefix = "kopf.zalando.org", bool verbose = false,
                                  std::string touch_key = "touch-dummy", bool v1 = true);
};

/// The last handled essence of the object, to detect changes.
class DiffBaseStorage {
  public:
    virtual ~DiffBaseStorage() = default;
    /// The essence of a body: no status, no metadata but labels and annotations (minus the
    /// system ones), plus `extra_fields` (dotted paths that handlers watch).
    virtual json build(const json& body,
                       const std::vector<std::vector<std::string>>& extra_fields = {}) const;
    /// The stored essence, or nullopt if there is none (the object was never handled). Throws
    /// if what is stored is not JSON: the object is then not handled until that is fixed.
    virtual std::optional<json> fetch(const json& body) const = 0;
    virtual void store(const json& body, Patch& patch, const json& essence) const = 0;

    std::vector<std::vector<std::string>> ignored_fields;

  protected:
    virtual bool is_own_annotation(const std::string& key) const;
};

/// `metadata.annotations["kopf.zalando.org/last-handled-configuration"]` = compact JSON + "\n".
class AnnotationsDiffBaseStorage : public DiffBaseStorage, public StorageKeyConvention {
  public:
    explicit AnnotationsDiffBaseStorage(std::string prefix = "kopf.zalando.org",
                                        std::string key = "last-handled-configuration",
                                        bool v1 = true);
    json build(const json& body,
               const std::vector<std::vector<std::string>>& extra_fields = {}) const override;
    std::optional<json> fetch(const json& body) const override;
    void store(const json& body, Patch& patch, const json& essence) const override;

  protected:
    bool is_own_annotation(const std::string& key) const override;

  private:
    std::string key_;
};

/// `status.kopf.last-handled-configuration` = compact JSON (no trailing newline).
class StatusDiffBaseStorage : public DiffBaseStorage {
  public:
    explicit StatusDiffBaseStorage(std::string name = "kopf",
                                   std::string field = "status.{name}.last-handled-configuration");
    json build(const json& body,
               const std::vector<std::vector<std::string>>& extra_fields = {}) const override;
    std::optional<json> fetch(const json& body) const override;
    void store(const json& body, Patch& patch, const json& essence) const override;

  private:
    std::vector<std::string> field_;
};

/// Reads from the first storage that has a value; writes to all.
class MultiDiffBaseStorage : public DiffBaseStorage {
  public:
    explicit MultiDiffBaseStorage(std::vector<std::shared_ptr<DiffBaseStorage>> storages);
    json build(const json& body,
               const std::vector<std::vector<std::string>>& extra_fields = {}) const override;
    std::optional<json> fetch(const json& body) const override;
    void store(const json& body, Patch& patch, const json& essence) const override;

  private:
    std::vector<std::shared_ptr<DiffBaseStorage>> storages_;
};

}  // namespace kopf
