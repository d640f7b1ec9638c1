// The body of a list response as a stream: a list of 100k objects is serialized a few
// hundred objects at a time from a snapshot of immutable stored objects, so the extra
// memory of a list is its pointers plus one piece, not a copy of the whole list.
#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

// A piece ends after this many objects or once it is this large, whichever comes first.
constexpr std::size_t kObjectsPerPiece = 256;
constexpr std::size_t kBytesPerPiece = 256 * 1024;

class ListBody : public BodyStream {
  public:
    explicit ListBody(ListSnapshot snapshot) : snapshot_(std::move(snapshot)) {}

    bool next(std::string& piece) override {
        piece.clear();
        if (done_) return false;
        if (!header_sent_) {
            piece = header();
            header_sent_ = true;
        }
        std::size_t count = 0;
        while (next_item_ < snapshot_.items.size() && count < kObjectsPerPiece &&
               piece.size() < kBytesPerPiece) {
            if (next_item_ > 0) piece += ',';
            append_item(*snapshot_.items[next_item_], piece);
            // The piece has it: the snapshot need not keep the object alive any longer.
            snapshot_.items[next_item_].reset();
            ++next_item_;
            ++count;
        }
        if (next_item_ == snapshot_.items.size()) {
            piece += "]}";
            done_ = true;
        }
        return true;
    }

  private:
    std::string header() const {
        const Resource& res = *snapshot_.res;
        std::string out;
        if (snapshot_.table) {
            out = R"({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":)";
            out += snapshot_.metadata.dump();
            out += R"(,"columnDefinitions":)";
            out += snapshot_.column_definitions.dump();
            out += R"(,"rows":[)";
            return out;
        }
        out = R"({"kind":)";
        out += json(res.list_kind).dump();
        out += R"(,"apiVersion":)";
        out += json(res.group_version(snapshot_.version)).dump();
        out += R"(,"metadata":)";
        out += snapshot_.metadata.dump();
        out += R"(,"items":[)";
        return out;
    }

    void append_item(const json& stored, std::string& out) const {
        const Engine& engine = *snapshot_.engine;
        const Resource& res = *snapshot_.res;
        // Invalid UTF-8 (possible from YAML input) is replaced rather than thrown on: half
        // of the body may be on its way already.
        auto dump = [](const json& value) {
            return value.dump(-1, ' ', false, json::error_handler_t::replace);
        };
        if (snapshot_.table) {
            out += dump(snapshot_.table(engine.to_view(res, snapshot_.version, stored)));
            return;
        }
        auto api_version = stored.find("apiVersion");
        if (engine.view_is_identity(res, snapshot_.version) && api_version != stored.end() &&
            *api_version == res.group_version(snapshot_.version)) {
            out += dump(stored);
            return;
        }
        out += dump(engine.to_view(res, snapshot_.version, stored));
    }

    ListSnapshot snapshot_;
    std::size_t next_item_ = 0;
    bool header_sent_ = false;
    bool done_ = false;
};

}  // namespace

std::shared_ptr<BodyStream> make_list_body(ListSnapshot snapshot) {
    return std::make_shared<ListBody>(std::move(snapshot));
}

}  // namespace kopf::apiserver::core
