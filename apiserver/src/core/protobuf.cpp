// Request bodies in the Kubernetes protobuf encoding, which kubectl's typed
// clients send for imperative commands (`kubectl create configmap|secret|
// namespace|serviceaccount`). Only the protobuf wire format (varints and
// length-delimited fields) is read, for the few kinds those commands create;
// every other kind is answered with 415 naming it. Responses are always JSON.
#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t varint = 0;
    std::string_view bytes;
};

// Iterates over the fields of one message; throws std::runtime_error when truncated.
class Reader {
  public:
    explicit Reader(std::string_view data) : data_(data) {}
    bool next(Field& f) {
        if (pos_ >= data_.size()) return false;
        uint64_t key = varint();
        f.number = static_cast<uint32_t>(key >> 3);
        f.wire = static_cast<uint32_t>(key & 7);
        f.bytes = {};
        f.varint = 0;
        switch (f.wire) {
            case 0:
                f.varint = varint();
                break;
            case 1:
                skip(8);
                break;
            case 5:
                skip(4);
                break;
            case 2: {
                uint64_t len = varint();
                if (len > data_.size() - pos_) throw std::runtime_error("truncated field");
                f.bytes = data_.substr(pos_, len);
                pos_ += len;
                break;
            }
            default:
                throw std::runtime_error("unsupported wire type");
        }
        return true;
    }

  private:
    uint64_t varint() {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= data_.size()) throw std::runtime_error("truncated varint");
            auto b = static_cast<uint8_t>(data_[pos_++]);
            value |= static_cast<uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return value;
        }
        throw std::runtime_error("varint too long");
    }
    void skip(std::size_t n) {
        if (n > data_.size() - pos_) throw std::runtime_error("truncated field");
        pos_ += n;
    }
    std::string_view data_;
    std::size_t pos_ = 0;
};

std::string str(std::string_view v) {
    return std::string(v);
}

// map<string, string|bytes> entries: key = 1, value = 2.
void map_entry(std::string_view entry, json& target, bool bytes_value) {
    Reader r(entry);
    Field f;
    std::string key, value;
    while (r.next(f)) {
        if (f.number == 1) key = str(f.bytes);
        if (f.number == 2) value = str(f.bytes);
    }
    target[key] = bytes_value ? base64_encode(value) : value;
}

std::string time_of(std::string_view msg) {
    Reader r(msg);
    Field f;
    int64_t seconds = 0;
    while (r.next(f))
        if (f.number == 1) seconds = static_cast<int64_t>(f.varint);
    std::time_t t = seconds;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

json owner_reference(std::string_view msg) {
    json ref = json::object();
    Reader r(msg);
    Field f;
    while (r.next(f)) {
        switch (f.number) {
            case 1:
                ref["kind"] = str(f.bytes);
                break;
            case 3:
                ref["name"] = str(f.bytes);
                break;
            case 4:
                ref["uid"] = str(f.bytes);
                break;
            case 5:
                ref["apiVersion"] = str(f.bytes);
                break;
            case 6:
                ref["controller"] = f.varint != 0;
                break;
            case 7:
                ref["blockOwnerDeletion"] = f.varint != 0;
                break;
            default:
                break;
        }
    }
    return ref;
}

json object_meta(std::string_view msg) {
    json meta = json::object();
    Reader r(msg);
    Field f;
    while (r.next(f)) {
        switch (f.number) {
            case 1:
                meta["name"] = str(f.bytes);
                break;
            case 2:
                meta["generateName"] = str(f.bytes);
                break;
            case 3:
                meta["namespace"] = str(f.bytes);
                break;
            case 5:
                meta["uid"] = str(f.bytes);
                break;
            case 6:
                meta["resourceVersion"] = str(f.bytes);
                break;
            case 7:
                meta["generation"] = static_cast<int64_t>(f.varint);
                break;
            case 8:
                meta["creationTimestamp"] = time_of(f.bytes);
                break;
            case 11:
                map_entry(f.bytes, meta["labels"], false);
                break;
            case 12:
                map_entry(f.bytes, meta["annotations"], false);
                break;
            case 13:
                meta["ownerReferences"].push_back(owner_reference(f.bytes));
                break;
            case 14:
                meta["finalizers"].push_back(str(f.bytes));
                break;
            default:
                break;  // managedFields, selfLink, deletion fields: server-owned
        }
    }
    // Protobuf carries empty strings and zeros that JSON omits (omitempty): drop them, or they
    // would count as fields the writer set (managedFields).
    for (const char* key : {"name", "generateName", "namespace", "uid", "resourceVersion"})
        if (meta.contains(key) && meta[key] == "") meta.erase(key);
    if (meta.contains("generation") && meta["generation"] == 0) meta.erase("generation");
    return meta;
}

json name_reference(std::string_view msg, bool full) {
    json ref = json::object();
    Reader r(msg);
    Field f;
    while (r.next(f)) {
        if (!full && f.number == 1) ref["name"] = str(f.bytes);
        if (full && f.number == 1) ref["kind"] = str(f.bytes);
        if (full && f.number == 2) ref["namespace"] = str(f.bytes);
        if (full && f.number == 3) ref["name"] = str(f.bytes);
        if (full && f.number == 4) ref["uid"] = str(f.bytes);
        if (full && f.number == 5) ref["apiVersion"] = str(f.bytes);
    }
    return ref;
}

json decode_kind(const std::string& kind, std::string_view raw) {
    json obj = json::object();
    Reader r(raw);
    Field f;
    while (r.next(f)) {
        if (f.number == 1 && f.wire == 2) {
            obj["metadata"] = object_meta(f.bytes);
            continue;
        }
        if (kind == "ConfigMap") {
            if (f.number == 2) map_entry(f.bytes, obj["data"], false);
            if (f.number == 3) map_entry(f.bytes, obj["binaryData"], true);
            if (f.number == 4) obj["immutable"] = f.varint != 0;
        } else if (kind == "Secret") {
            if (f.number == 2) map_entry(f.bytes, obj["data"], true);
            if (f.number == 3) obj["type"] = str(f.bytes);
            if (f.number == 4) map_entry(f.bytes, obj["stringData"], false);
            if (f.number == 5) obj["immutable"] = f.varint != 0;
        } else if (kind == "Namespace") {
            if (f.number == 2) {
                Reader spec(f.bytes);
                Field s;
                obj["spec"]["finalizers"] = json::array();
                while (spec.next(s))
                    if (s.number == 1) obj["spec"]["finalizers"].push_back(str(s.bytes));
            }
        } else if (kind == "ServiceAccount") {
            if (f.number == 2) obj["secrets"].push_back(name_reference(f.bytes, true));
            if (f.number == 3) obj["imagePullSecrets"].push_back(name_reference(f.bytes, false));
            if (f.number == 4) obj["automountServiceAccountToken"] = f.varint != 0;
        }
    }
    return obj;
}

}  // namespace

json decode_protobuf_body(const std::string& body) {
    static const std::string magic("k8s\0", 4);
    auto unsupported = [](const std::string& what) {
        return api_error(415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted media "
                         "types include: application/json, application/yaml (protobuf is "
                         "accepted only for ConfigMap, Secret, Namespace and ServiceAccount; "
                         "got " +
                             what + ")");
    };
    if (body.compare(0, magic.size(), magic) != 0)
        throw bad_request("the protobuf body does not start with the Kubernetes envelope");
    try {
        Reader envelope(std::string_view(body).substr(magic.size()));
        Field f;
        std::string api_version, kind;
        std::string_view raw;
        while (envelope.next(f)) {
            if (f.number == 1) {
                Reader type_meta(f.bytes);
                Field t;
                while (type_meta.next(t)) {
                    if (t.number == 1) api_version = str(t.bytes);
                    if (t.number == 2) kind = str(t.bytes);
                }
            } else if (f.number == 2) {
                raw = f.bytes;
            }
        }
        if (api_version != "v1" || (kind != "ConfigMap" && kind != "Secret" &&
                                    kind != "Namespace" && kind != "ServiceAccount"))
            throw unsupported(api_version + ", Kind=" + kind);
        json obj = decode_kind(kind, raw);
        obj["apiVersion"] = api_version;
        obj["kind"] = kind;
        if (!obj.contains("metadata")) obj["metadata"] = json::object();
        return obj;
    } catch (const std::runtime_error& e) {
        throw bad_request(std::string("couldn't decode the protobuf request body: ") + e.what());
    }
}

}  // namespace kopf::apiserver::core
