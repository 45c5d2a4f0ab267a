// pickle_writer.h - a tiny pickler for tests: builds plain-data values (dict, list,
// tuple, str, int, float, bool, None) and writes them as protocol 4, the way Python's
// pickle.dumps would (EMPTY_DICT + MARK ... SETITEMS, EMPTY_LIST + APPENDS, ...),
// so tests can make snapshot-shaped pickles without Python.
#ifndef REMAT_TESTS_PICKLE_WRITER_H
#define REMAT_TESTS_PICKLE_WRITER_H

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace remat_test {

struct Py {
    enum Kind { NONE, BOOL, INT, FLOAT, STR, LIST, TUPLE, DICT } kind = NONE;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<Py> items;                       // list / tuple
    std::vector<std::pair<std::string, Py>> kv;  // dict (str keys)

    static Py none() { return Py(); }
    static Py b(bool v) { Py p; p.kind = BOOL; p.i = v; return p; }
    static Py n(int64_t v) { Py p; p.kind = INT; p.i = v; return p; }
    static Py fl(double v) { Py p; p.kind = FLOAT; p.f = v; return p; }
    static Py str(const std::string &v) { Py p; p.kind = STR; p.s = v; return p; }
    static Py list(std::vector<Py> v = {}) { Py p; p.kind = LIST; p.items = std::move(v); return p; }
    static Py tuple(std::vector<Py> v) { Py p; p.kind = TUPLE; p.items = std::move(v); return p; }
    static Py dict(std::vector<std::pair<std::string, Py>> v = {}) { Py p; p.kind = DICT; p.kv = std::move(v); return p; }
    Py &set(const std::string &k, Py v) {
        for (auto &e : kv)
            if (e.first == k) { e.second = std::move(v); return *this; }
        kv.emplace_back(k, std::move(v));
        return *this;
    }
    Py &erase(const std::string &k) {
        for (size_t j = 0; j < kv.size(); j++)
            if (kv[j].first == k) { kv.erase(kv.begin() + (long)j); break; }
        return *this;
    }
    Py *get(const std::string &k) {
        for (auto &e : kv)
            if (e.first == k) return &e.second;
        return nullptr;
    }
};

inline void pk_le(std::vector<uint8_t> &o, uint64_t v, int n) {
    for (int k = 0; k < n; k++) o.push_back((uint8_t)(v >> (8 * k)));
}

inline void pk_str(std::vector<uint8_t> &o, const std::string &s) {
    if (s.size() < 256) { o.push_back(0x8c); o.push_back((uint8_t)s.size()); }
    else { o.push_back('X'); pk_le(o, s.size(), 4); }
    o.insert(o.end(), s.begin(), s.end());
}

inline void pk_write(std::vector<uint8_t> &o, const Py &p) {
    switch (p.kind) {
    case Py::NONE: o.push_back('N'); break;
    case Py::BOOL: o.push_back(p.i ? 0x88 : 0x89); break;
    case Py::INT:
        if (p.i >= 0 && p.i < 256) { o.push_back('K'); o.push_back((uint8_t)p.i); }
        else if (p.i >= INT32_MIN && p.i <= INT32_MAX) { o.push_back('J'); pk_le(o, (uint32_t)(int32_t)p.i, 4); }
        else { o.push_back(0x8a); o.push_back(8); pk_le(o, (uint64_t)p.i, 8); }
        break;
    case Py::FLOAT: {
        o.push_back('G');
        uint64_t u;
        memcpy(&u, &p.f, 8);
        for (int k = 7; k >= 0; k--) o.push_back((uint8_t)(u >> (8 * k)));
        break;
    }
    case Py::STR: pk_str(o, p.s); break;
    case Py::TUPLE:
        o.push_back('(');
        for (const Py &x : p.items) pk_write(o, x);
        o.push_back('t');
        break;
    case Py::LIST:
        o.push_back(']');
        if (!p.items.empty()) {
            o.push_back('(');
            for (const Py &x : p.items) pk_write(o, x);
            o.push_back('e');
        }
        break;
    case Py::DICT:
        o.push_back('}');
        if (!p.kv.empty()) {
            o.push_back('(');
            for (const auto &e : p.kv) { pk_str(o, e.first); pk_write(o, e.second); }
            o.push_back('u');
        }
        break;
    }
}

inline std::vector<uint8_t> pickle_dumps(const Py &p) {
    std::vector<uint8_t> o = {0x80, 4};
    pk_write(o, p);
    o.push_back('.');
    return o;
}

}  // namespace remat_test

#endif
