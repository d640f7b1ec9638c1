// Request bodies in the Kubernetes protobuf encoding, which kubectl's typed clients send for
// imperative commands (`kubectl create deployment|service|job|role|quota|...`). The body is the
// "k8s\0" envelope around a runtime.Unknown holding the object's message; the message is decoded
// into the JSON a JSON body would have carried, driven by the schema in protobuf_schema.inc
// (generated from the Go struct tags of k8s.io/api by tools/gen_protobuf_schema.cpp). Kinds
// without a schema (CRDs, custom resources) get 415 naming the kind. Responses are always JSON.
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "core/engine.hpp"
#include "util/schema.hpp"

namespace kopf::apiserver::core {

namespace {

// What a field holds; the special types are Kubernetes' own messages with a JSON form of their
// own (a Quantity is a string, an IntOrString an int or a string, a Time an RFC 3339 string).
enum class T : uint8_t {
    String,
    Bytes,  // base64 in JSON
    Int,
    Bool,
    Double,
    Message,
    Quantity,
    Time,
    MicroTime,
    IntOrString,
    RawJson,  // runtime.RawExtension, metav1.FieldsV1: JSON carried as bytes
};

constexpr unsigned kRepeated = 1;  // a list
constexpr unsigned kMap = 2;       // map<string, type>: entries with key = 1, value = 2
constexpr unsigned kInline = 4;    // an embedded struct whose fields JSON lifts into its parent
constexpr unsigned kKeepZero = 8;  // a pointer or a field without omitempty: JSON keeps a zero

struct FieldSpec {
    const char* message;
    uint32_t number;
    const char* json_name;
    T type;
    const char* nested;
    unsigned flags;
};

constexpr FieldSpec kSchema[] = {
#include "core/protobuf_schema.inc"
};

using Message = std::unordered_map<uint32_t, const FieldSpec*>;

const std::unordered_map<std::string_view, Message>& schema() {
    static const std::unordered_map<std::string_view, Message> messages = [] {
        std::unordered_map<std::string_view, Message> out;
        for (const FieldSpec& f : kSchema) out[f.message][f.number] = &f;
        return out;
    }();
    return messages;
}

// API group -> package of k8s.io/api naming the messages.
const char* package_of(std::string_view group) {
    static const std::pair<std::string_view, const char*> kPackages[] = {
        {"", "core"},
        {"apps", "apps"},
        {"batch", "batch"},
        {"rbac.authorization.k8s.io", "rbac"},
        {"networking.k8s.io", "networking"},
        {"policy", "policy"},
        {"scheduling.k8s.io", "scheduling"},
        {"coordination.k8s.io", "coordination"},
        {"events.k8s.io", "events"},
        {"admissionregistration.k8s.io", "admissionregistration"},
    };
    for (const auto& [g, package] : kPackages)
        if (g == group) return package;
    return nullptr;
}

struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t varint = 0;
    std::string_view bytes;  // length-delimited payload, or the 8/4 bytes of a fixed field
};

// Iterates over the fields of one message; throws std::runtime_error naming `where` when the
// message is cut short or malformed.
class Reader {
  public:
    Reader(std::string_view data, std::string where)
        : data_(data), where_(where.empty() ? "the object" : std::move(where)) {}
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
                f.bytes = take(8);
                break;
            case 5:
                f.bytes = take(4);
                break;
            case 2:
                f.bytes = take(varint());
                break;
            default:
                fail("unsupported wire type " + std::to_string(f.wire) + " of field " +
                     std::to_string(f.number));
        }
        if (f.number == 0) fail("field number 0");
        return true;
    }
    uint64_t varint() {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= data_.size()) fail("truncated varint");
            auto b = static_cast<uint8_t>(data_[pos_++]);
            value |= static_cast<uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return value;
        }
        fail("varint longer than 10 bytes");
    }
    bool done() const { return pos_ >= data_.size(); }

  private:
    std::string_view take(uint64_t n) {
        if (n > data_.size() - pos_)
            fail("truncated field (" + std::to_string(n) + " bytes announced, " +
                 std::to_string(data_.size() - pos_) + " left)");
        std::string_view out = data_.substr(pos_, n);
        pos_ += n;
        return out;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(what + " in " + where_);
    }
    std::string_view data_;
    std::size_t pos_ = 0;
    std::string where_;
};

const char* wire_name(uint32_t wire) {
    switch (wire) {
        case 0:
            return "varint";
        case 1:
            return "fixed64";
        case 2:
            return "length-delimited";
        default:
            return "fixed32";
    }
}

std::string rfc3339(int64_t seconds, const std::string& where, int micros = -1) {
    std::time_t t = seconds;
    std::tm tm{};
    if (seconds < -62135596800 || seconds > 253402300799 || !gmtime_r(&t, &tm))
        throw std::runtime_error("timestamp out of range in " + where);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string out = buf;
    if (micros >= 0) {
        std::snprintf(buf, sizeof buf, ".%06d", micros);
        out += buf;
    }
    return out + "Z";
}

class Decoder {
  public:
    json message(std::string_view bytes, std::string_view name, const std::string& where,
                 int depth) {
        json obj = json::object();
        into(obj, bytes, name, where, depth);
        return obj;
    }

  private:
    void into(json& obj, std::string_view bytes, std::string_view name, const std::string& where,
              int depth) {
        if (depth > 64) throw std::runtime_error("messages nested too deeply in " + where);
        const auto& messages = schema();
        auto found = messages.find(name);
        Reader r(bytes, where);
        Field f;
        while (r.next(f)) {
            // Unknown fields are skipped, as protobuf readers do (newer clients, other kinds).
            if (found == messages.end()) continue;
            auto spec = found->second.find(f.number);
            if (spec == found->second.end()) continue;
            field(obj, *spec->second, f, where, depth);
        }
    }

    void field(json& obj, const FieldSpec& spec, const Field& f, const std::string& where,
               int depth) {
        std::string path = where.empty() ? spec.json_name : where + "." + spec.json_name;
        if (spec.flags & kInline) {
            expect(f, 2, path);
            into(obj, f.bytes, spec.nested, where, depth + 1);
        } else if (spec.flags & kMap) {
            expect(f, 2, path);
            Reader entry(f.bytes, path);
            Field e;
            std::string key;
            json item = zero(spec.type);
            while (entry.next(e)) {
                if (e.number == 1) {
                    expect(e, 2, path);
                    key = e.bytes;
                } else if (e.number == 2) {
                    item = value(spec, e, path, depth);
                }
            }
            obj[spec.json_name][key] = std::move(item);
        } else if (spec.flags & kRepeated) {
            json& list = obj[spec.json_name];
            if (!list.is_array()) list = json::array();
            std::string item_path = path + "[" + std::to_string(list.size()) + "]";
            if (f.wire == 2 && (spec.type == T::Int || spec.type == T::Bool)) {
                Reader packed(f.bytes, item_path);  // packed scalars
                while (!packed.done()) {
                    uint64_t v = packed.varint();
                    list.push_back(spec.type == T::Bool ? json(v != 0)
                                                        : json(static_cast<int64_t>(v)));
                }
            } else {
                list.push_back(value(spec, f, item_path, depth));
            }
        } else {
            json v = value(spec, f, path, depth);
            if (!(spec.flags & kKeepZero) && is_zero(spec.type, v))
                obj.erase(spec.json_name);
            else
                obj[spec.json_name] = std::move(v);
        }
    }

    json value(const FieldSpec& spec, const Field& f, const std::string& path, int depth) {
        switch (spec.type) {
            case T::String:
                expect(f, 2, path);
                return std::string(f.bytes);
            case T::Bytes:
                expect(f, 2, path);
                return base64_encode(std::string(f.bytes));
            case T::Int:
                expect(f, 0, path);
                return static_cast<int64_t>(f.varint);
            case T::Bool:
                expect(f, 0, path);
                return f.varint != 0;
            case T::Double: {
                expect(f, 1, path);
                uint64_t bits = 0;
                for (int i = 7; i >= 0; --i)
                    bits = bits << 8 | static_cast<uint8_t>(f.bytes[static_cast<std::size_t>(i)]);
                double d = 0;
                std::memcpy(&d, &bits, sizeof d);
                return d;
            }
            case T::Message:
                expect(f, 2, path);
                return message(f.bytes, spec.nested, path, depth + 1);
            default:
                expect(f, 2, path);
                return special(spec.type, f.bytes, path);
        }
    }

    // Quantity {string = 1}; Time/MicroTime {seconds = 1, nanos = 2}, empty when zero (JSON
    // null); IntOrString {type = 1, intVal = 2, strVal = 3}; RawExtension/FieldsV1 {raw = 1}.
    static json special(T type, std::string_view bytes, const std::string& path) {
        Reader r(bytes, path);
        Field f;
        std::string text;    // field 1 (Quantity, raw JSON) or 3 (IntOrString's strVal)
        int64_t first = 0;   // seconds, or IntOrString's type (1: string)
        int64_t second = 0;  // nanos, or IntOrString's intVal
        bool any = false;
        while (r.next(f)) {
            any = true;
            if (f.wire == 0 && f.number == 1) first = static_cast<int64_t>(f.varint);
            if (f.wire == 0 && f.number == 2) second = static_cast<int64_t>(f.varint);
            if (f.wire == 2 && f.number == (type == T::IntOrString ? 3U : 1U)) text = f.bytes;
        }
        switch (type) {
            case T::Quantity:
                return text.empty() ? "0" : text;
            case T::Time:
                return any ? json(rfc3339(first, path)) : json(nullptr);
            case T::MicroTime:
                if (second < 0 || second > 999999999)
                    throw std::runtime_error("nanoseconds out of range in " + path);
                return any ? json(rfc3339(first, path, static_cast<int>(second / 1000)))
                           : json(nullptr);
            case T::IntOrString:
                if (first == 1) return text;
                return static_cast<int32_t>(second);
            default: {
                if (text.empty()) return nullptr;
                json parsed = json::parse(text, nullptr, false);
                if (parsed.is_discarded())
                    throw std::runtime_error("the raw object in " + path + " is not JSON");
                return parsed;
            }
        }
    }

    static void expect(const Field& f, uint32_t wire, const std::string& path) {
        if (f.wire != wire)
            throw std::runtime_error(std::string("field ") + path + " is " + wire_name(f.wire) +
                                     " where " + wire_name(wire) + " was expected");
    }

    static json zero(T type) {
        switch (type) {
            case T::Int:
            case T::Double:
                return 0;
            case T::Bool:
                return false;
            case T::Message:
                return json::object();
            case T::Quantity:
                return "0";
            case T::Time:
            case T::MicroTime:
            case T::RawJson:
                return nullptr;
            default:
                return "";
        }
    }

    static bool is_zero(T type, const json& v) {
        switch (type) {
            case T::String:
            case T::Bytes:
                return v == "";
            case T::Int:
            case T::Double:
                return v == 0;
            case T::Bool:
                return v == false;
            default:
                return false;  // structs are always written by Go's JSON (omitempty or not)
        }
    }
};

ApiError unsupported(const std::string& what) {
    return api_error(415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml (protobuf is accepted for the "
                     "built-in kinds only; got " +
                         what + ")");
}

// The same schema read for JSON bodies: what each field's JSON must be, as Go's decoder of
// k8s.io/api requires (null is any field's zero).
class JsonTypeChecker {
  public:
    explicit JsonTypeChecker(std::vector<FieldError>& errors) : errors_(errors) {}

    void message(const json& value, std::string_view name, const std::string& path, int depth) {
        if (value.is_null()) return;
        if (!value.is_object()) {
            errors_.push_back(field_type_invalid(path, value, "must be an object"));
            return;
        }
        // Deeper than any object of the API's types: what lies below is not checked.
        if (depth > kMaxDepth) return;
        for (const auto& [key, item] : value.items()) {
            if (depth == 0 && key == "metadata") continue;  // validate_object_meta's
            if (const FieldSpec* spec = field_named(name, key))
                field(item, *spec, child_path(path, key), depth);
            // Unknown fields are dropped with a warning, as kube-apiserver's decoder does.
        }
    }

  private:
    static constexpr int kMaxDepth = 64;

    // Each message's fields by JSON name, inline messages' lifted into it: built once, as the
    // check runs on every write of a built-in kind (a Lease's renewal every few seconds).
    using Fields = std::unordered_map<std::string_view, const FieldSpec*>;
    static const FieldSpec* field_named(std::string_view message, std::string_view key) {
        static const std::unordered_map<std::string_view, Fields> by_name = [] {
            std::unordered_map<std::string_view, Fields> out;
            for (const auto& [name, fields] : schema()) add_fields(out[name], name);
            return out;
        }();
        const auto found = by_name.find(message);
        if (found == by_name.end()) return nullptr;
        const auto field = found->second.find(key);
        return field == found->second.end() ? nullptr : field->second;
    }
    static void add_fields(Fields& into, std::string_view message, int depth = 0) {
        const auto found = schema().find(message);
        if (found == schema().end() || depth > kMaxDepth) return;
        for (const auto& [number, spec] : found->second) {
            if ((spec->flags & kInline) && spec->type == T::Message)
                add_fields(into, spec->nested, depth + 1);
            else
                into.emplace(spec->json_name, spec);
        }
    }

    void field(const json& value, const FieldSpec& spec, const std::string& path, int depth) {
        if (value.is_null()) return;
        if (spec.flags & kMap) {
            if (!value.is_object()) {
                errors_.push_back(field_type_invalid(path, value, "must be an object"));
                return;
            }
            for (const auto& [key, item] : value.items())
                single(item, spec, path + "[" + key + "]", depth);
        } else if (spec.flags & kRepeated) {
            if (!value.is_array()) {
                errors_.push_back(field_type_invalid(path, value, "must be a list"));
                return;
            }
            for (std::size_t i = 0; i < value.size(); ++i)
                single(value[i], spec, path + "[" + std::to_string(i) + "]", depth);
        } else {
            single(value, spec, path, depth);
        }
    }

    void single(const json& value, const FieldSpec& spec, const std::string& path, int depth) {
        if (value.is_null()) return;
        const char* expected = nullptr;
        switch (spec.type) {
            case T::String:
            case T::Bytes:
            case T::Time:
            case T::MicroTime:
                if (!value.is_string()) expected = "must be a string";
                break;
            case T::Int:
                if (!value.is_number_integer()) expected = "must be an integer";
                break;
            case T::Bool:
                if (!value.is_boolean()) expected = "must be a boolean";
                break;
            case T::Double:
                if (!value.is_number()) expected = "must be a number";
                break;
            case T::Quantity:
                if (!value.is_string() && !value.is_number())
                    expected = "must be a quantity (a string or a number)";
                break;
            case T::IntOrString:
                if (!value.is_string() && !value.is_number_integer())
                    expected = "must be an integer or a string";
                break;
            case T::RawJson:
                break;
            case T::Message:
                message(value, spec.nested, path, depth + 1);
                break;
        }
        if (expected) errors_.push_back(field_type_invalid(path, value, expected));
    }

    std::vector<FieldError>& errors_;
};

}  // namespace

json decode_protobuf_body(const std::string& body) {
    static const std::string magic("k8s\0", 4);
    if (body.compare(0, magic.size(), magic) != 0)
        throw bad_request("the protobuf body does not start with the Kubernetes envelope");
    std::string api_version, kind;
    try {
        const std::string where = "the envelope";
        Reader envelope(std::string_view(body).substr(magic.size()), where);
        Field f;
        std::string_view raw;
        while (envelope.next(f)) {
            if (f.number == 1 && f.wire == 2) {
                const std::string type_meta_where = "the envelope's TypeMeta";
                Reader type_meta(f.bytes, type_meta_where);
                Field t;
                while (type_meta.next(t)) {
                    if (t.number == 1 && t.wire == 2) api_version = t.bytes;
                    if (t.number == 2 && t.wire == 2) kind = t.bytes;
                }
            } else if (f.number == 2 && f.wire == 2) {
                raw = f.bytes;
            }
        }
        std::string group, version = api_version;
        if (auto slash = api_version.find('/'); slash != std::string::npos) {
            group = api_version.substr(0, slash);
            version = api_version.substr(slash + 1);
        }
        const char* package = package_of(group);
        std::string name = std::string(package ? package : "") + "/" + version + "." + kind;
        if (!package || kind.empty() || !schema().count(name))
            throw unsupported(api_version + ", Kind=" + kind);
        json obj = Decoder().message(raw, name, "", 0);
        obj["apiVersion"] = api_version;
        obj["kind"] = kind;
        if (!obj.contains("metadata")) obj["metadata"] = json::object();
        try {
            (void)obj.dump();
        } catch (const json::type_error&) {
            throw std::runtime_error("a string of the " + kind + " is not valid UTF-8");
        }
        return obj;
    } catch (const std::runtime_error& e) {
        throw bad_request("couldn't decode the " + (kind.empty() ? "object" : kind) +
                          " in the protobuf request body: " + e.what());
    }
}

std::vector<FieldError> builtin_type_errors(const Resource& res, const json& object) {
    std::vector<FieldError> errors;
    const char* package = package_of(res.group);
    // Events are stored in one form for both of their groups (renamed fields): not checked.
    if (!package || res.storage_key == "/events") return errors;
    const std::string name =
        std::string(package) + "/" + res.storage_version().name + "." + res.kind;
    if (schema().count(name)) JsonTypeChecker(errors).message(object, name, "", 0);
    return errors;
}

}  // namespace kopf::apiserver::core
