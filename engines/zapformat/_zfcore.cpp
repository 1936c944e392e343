// ZapFormat's compiled core: the Earley recogniser (earley.py) and the token-mask computation (masks.py) in C++.
//
// A literal port of the Python reference: the same items (dp, state, ret_nt, ret_col), the same Leo chains and
// memo, the same compaction, the same order of scanning / completion / candidate tokens, so that every mask,
// every state key (hence every state-cache hit) and every statistic equals the Python engine's. The grammar is
// compiled in Python (grammar.py, regex.py); its flat tables are handed over once per grammar (``Core``), the
// vocabulary once per vocabulary (``Vocab``). The eager regex cache (masks.eager_regex_cache) is built here too.
//
// Plain CPython C API (no pybind11/nanobind): the extension builds with nothing but a C++17 compiler and the
// Python headers, inside pip's isolated build, offline.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

enum : uint8_t { K_NT = 0, K_LIT = 1, K_RE = 2 };

struct Item {
    int32_t dp, st, rn, rc;
    bool operator==(const Item& o) const { return dp == o.dp && st == o.st && rn == o.rn && rc == o.rc; }
    bool operator<(const Item& o) const {
        if (dp != o.dp) return dp < o.dp;
        if (st != o.st) return st < o.st;
        if (rn != o.rn) return rn < o.rn;
        return rc < o.rc;
    }
};

inline uint64_t mix(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
inline uint64_t item_hash(const Item& it) {
    uint64_t a = (uint64_t(uint32_t(it.dp)) << 32) | uint32_t(it.st);
    uint64_t b = (uint64_t(uint32_t(it.rn)) << 32) | uint32_t(it.rc);
    return mix(a * 0x9E3779B97F4A7C15ULL ^ mix(b));
}

// Open-addressing set of items, cleared in O(1) by a generation stamp (one per Earley operation).
class ItemSet {
  public:
    ItemSet() { resize(64); }
    void clear() {
        if (++gen_ == 0) { std::fill(stamp_.begin(), stamp_.end(), 0u); gen_ = 1; }
        count_ = 0;
    }
    // true if newly inserted
    bool insert(const Item& it) {
        if ((count_ + 1) * 2 > slots_.size()) grow();
        size_t mask = slots_.size() - 1, i = item_hash(it) & mask;
        while (stamp_[i] == gen_) {
            if (slots_[i] == it) return false;
            i = (i + 1) & mask;
        }
        stamp_[i] = gen_;
        slots_[i] = it;
        ++count_;
        return true;
    }

  private:
    void resize(size_t n) { slots_.assign(n, Item{0, 0, 0, 0}); stamp_.assign(n, 0u); gen_ = 1; count_ = 0; }
    void grow() {
        std::vector<Item> old;
        for (size_t i = 0; i < slots_.size(); ++i)
            if (stamp_[i] == gen_) old.push_back(slots_[i]);
        resize(slots_.size() * 2);
        for (auto& it : old) insert(it);
    }
    std::vector<Item> slots_;
    std::vector<uint32_t> stamp_;
    uint32_t gen_ = 1;
    size_t count_ = 0;
};

struct Top {
    int32_t nt, col;
    bool passed;
};

struct Column {
    std::vector<Item> items;
    std::vector<Item> scan;
    std::vector<Item> pd_raw;                      // post-dot-nonterminal items, in append order (Python's lists)
    std::vector<std::pair<int32_t, int32_t>> pd;   // (nt, index into pd_raw), sorted: one range per nt
    std::vector<std::pair<int32_t, Top>> leo;      // Leo memo: nt -> top
    int32_t key = -1;                              // interned item set (lazily; the state cache's key)
    bool predicted = false, finished_here = false;
    void clear() {
        items.clear(); scan.clear(); pd_raw.clear(); pd.clear(); leo.clear();
        key = -1; predicted = false; finished_here = false;
    }
};
using ColPtr = std::shared_ptr<Column>;

// ------------------------------------------------------------------------------------------------ vocabulary
struct EagerEntry;

struct VocabData {
    std::string pool;                 // token bytes in rank (byte) order, concatenated
    std::vector<int64_t> off;         // n + 1 offsets
    std::vector<int64_t> ids;         // rank -> token id
    std::vector<int32_t> lcp;         // common prefix length with the previous rank
    std::vector<int32_t> rank_of_id;  // token id -> rank, -1 for ids without bytes (specials, gaps)
    int64_t n = 0, size = 0, max_len = 0;
    int32_t lo[256], hi[256];         // tokens whose first byte is b: ranks [lo, hi)
    size_t words = 0;
    // eager-cache walks keyed by canonical sub-automaton, shared by every grammar over this vocabulary
    std::unordered_map<std::string, std::shared_ptr<const EagerEntry>> eager_shared;
    std::unordered_set<std::string> eager_pinned;  // survive forget_walks (the schema-independent walks)
    // loop_tokens tables keyed by the 32-byte set of looping bytes (one per kind of free string), pinned like walks
    std::unordered_map<std::string, std::shared_ptr<const std::vector<uint64_t>>> loop_shared;
    std::unordered_set<std::string> loop_pinned;
    const uint8_t* tok(int64_t r) const { return reinterpret_cast<const uint8_t*>(pool.data()) + off[r]; }
    int64_t len(int64_t r) const { return off[r + 1] - off[r]; }
};

// ------------------------------------------------------------------------------------------------ grammar
struct DFAData {
    int32_t n_states = 0;
    std::vector<int32_t> trans;       // n_states * 256
    std::vector<uint8_t> accepting, live_out;
    std::vector<uint64_t> first;      // n_states * 4 words: bytes with a live transition
    std::vector<int32_t> eager;       // per state: index into CoreData::eager, -1 none, -2 not built yet
    // per state q (lazily): the tokens whose bytes after the first all loop on q (null: q loops on too few bytes)
    std::unordered_map<int32_t, std::shared_ptr<const std::vector<uint64_t>>> loop_tokens;
};

struct EagerEntry {
    std::vector<uint64_t> allowed, disallowed;
    int64_t na = 0, nd = 0;  // tokens in each set
};
constexpr size_t EAGER_SHARED_MAX = 4096;  // walks shared by the grammars of one vocabulary (about 12 KB each)

struct CoreData {
    std::vector<uint8_t> kind, is_last, adv_done;
    std::vector<int32_t> value, lhs, adv_off, adv, pred_off, pred_dp, pred_st;
    std::vector<int32_t> lit_off, lit_len;  // per dp (LIT): bytes in lit_pool
    std::string lit_pool;
    std::vector<DFAData> dfas;
    int32_t start = 0, n_nt = 0;
    bool eager_planned = false, pred_st_zero = true;
    std::shared_ptr<VocabData> vocab;
    std::vector<std::shared_ptr<const EagerEntry>> eager;
    int64_t eager_min_tokens = 1000;
    std::vector<int32_t> walk_state;
    std::vector<uint8_t> walk_acc;
    // interned column item sets (shared by every recogniser of this grammar, so equal states get equal keys)
    std::unordered_map<std::string, int32_t> intern;
};

// ------------------------------------------------------------------------------------------------ eager cache
// masks.eager_regex_cache for one (regex, state): the tokens the DFA keeps alive over all their bytes, and the
// tokens on which it dies before having passed an accepting state (the start state does not count). Stored only
// when either set has at least min_tokens tokens. Built lazily, the first time a mask meets the state: an entry
// exists exactly when the Python table (built for every state at compile time) has it, so masks are identical.
// Tokens are walked in rank order, sharing the common prefix with the previous token.
// A state that loops on many bytes (the body of a free string, the "any other key" part of a key regex): the
// tokens whose bytes after the first all loop on it stay alive there. Computed once per (DFA, state), it lets a
// walk from any state whose first-byte transition lands on q accept those tokens without walking them, which is
// what makes the first mask at each new state of a long key regex cheap (each byte of a key is a new DFA state).
// The table depends only on the set of looping bytes, so it is shared by every grammar over the vocabulary.
constexpr int LOOP_MIN_BYTES = 64;
const std::vector<uint64_t>* loop_tokens(DFAData& d, VocabData& v, int32_t q) {
    auto it = d.loop_tokens.find(q);
    if (it == d.loop_tokens.end()) {
        std::shared_ptr<const std::vector<uint64_t>> table;
        uint64_t set[4] = {0, 0, 0, 0};
        int n = 0;
        for (int b = 0; b < 256; ++b)
            if (d.trans[(size_t)q * 256 + b] == q) { set[b >> 6] |= 1ULL << (b & 63); ++n; }
        if (n >= LOOP_MIN_BYTES && d.live_out[q]) {
            std::string key(reinterpret_cast<const char*>(set), sizeof set);
            auto sh = v.loop_shared.find(key);
            if (sh != v.loop_shared.end()) {
                table = sh->second;
            } else {
                auto bits = std::make_shared<std::vector<uint64_t>>(v.words, 0);
                int64_t good = 0;  // the previous token's bytes [1, good) all loop (tokens share prefixes: lcp)
                for (int64_t r = 0; r < v.n; ++r) {
                    const uint8_t* t = v.tok(r);
                    int64_t len = v.len(r), i = std::max<int64_t>(1, std::min<int64_t>(v.lcp[r], good));
                    while (i < len && ((set[t[i] >> 6] >> (t[i] & 63)) & 1)) ++i;
                    good = i;
                    if (i == len) (*bits)[(size_t)r >> 6] |= 1ULL << (r & 63);
                }
                table = bits;
                if (v.loop_shared.size() < EAGER_SHARED_MAX) v.loop_shared.emplace(std::move(key), table);
            }
        }
        it = d.loop_tokens.emplace(q, std::move(table)).first;
    }
    return it->second.get();
}

std::shared_ptr<const EagerEntry> walk_eager(CoreData& g, DFAData& d, int32_t s) {
    VocabData& v = *g.vocab;
    size_t W = v.words;
    auto e = std::make_shared<EagerEntry>();
    std::vector<uint64_t>& a = e->allowed;
    std::vector<uint64_t>& dis = e->disallowed;
    a.assign(W, 0);
    dis.assign(W, 0);
    int64_t na = 0, nd = 0;
    std::vector<int32_t>& cur = g.walk_state;
    std::vector<uint8_t>& acc = g.walk_acc;
    cur.resize((size_t)v.max_len + 1);
    acc.resize((size_t)v.max_len + 1);
    cur[0] = s;
    acc[0] = 0;
    int64_t alive_depth = 0;  // cur[0..alive_depth] hold the previous token's states
    const int32_t* row0 = &d.trans[(size_t)s * 256];
    const std::vector<uint64_t>* loop = nullptr;
    for (int64_t r = 0; r < v.n; ++r) {
        const uint8_t* t = v.tok(r);
        int64_t len = v.len(r);
        if (row0[t[0]] < 0) {  // the whole first-byte bucket dies on its first byte: disallowed (no accept seen)
            int64_t hi = v.hi[t[0]];
            for (int64_t q = r; q < hi; ++q) dis[q >> 6] |= 1ULL << (q & 63);
            nd += hi - r;
            r = hi - 1;
            alive_depth = 0;
            continue;
        }
        if (r == v.lo[t[0]]) loop = loop_tokens(d, v, row0[t[0]]);  // a new first-byte bucket
        if (loop && (((*loop)[(size_t)r >> 6] >> (r & 63)) & 1)) {  // lands on a looping state and stays there
            a[r >> 6] |= 1ULL << (r & 63);
            ++na;
            alive_depth = 0;  // cur[] no longer holds this token's prefix: the next walked token starts over
            continue;
        }
        int64_t i = r == 0 ? 0 : std::min<int64_t>(v.lcp[r], alive_depth);
        bool dead = false;
        for (; i < len; ++i) {
            int32_t nxt = d.trans[(size_t)cur[i] * 256 + t[i]];
            if (nxt < 0) { dead = true; break; }
            cur[i + 1] = nxt;
            acc[i + 1] = acc[i] | d.accepting[nxt];
        }
        if (dead) {
            alive_depth = i;
            const bool d_ = !acc[i];
            if (d_) { dis[r >> 6] |= 1ULL << (r & 63); ++nd; }
            // the next tokens sharing these i + 1 bytes die on the same byte, with the same verdict
            while (r + 1 < v.n && v.lcp[r + 1] > i) {
                ++r;
                if (d_) { dis[r >> 6] |= 1ULL << (r & 63); ++nd; }
            }
        } else {
            alive_depth = len;
            a[r >> 6] |= 1ULL << (r & 63);
            ++na;
        }
    }
    e->na = na;
    e->nd = nd;
    return e;
}

// The sub-automaton reachable from state s, renumbered in breadth-first order (accepting flags and rows): two
// states with the same form accept and reject exactly the same tokens, so they share one walk. False when more
// than CANON_MAX states are reachable (then the state is walked for this grammar alone).
constexpr size_t CANON_MAX = 64;
bool canonical(const DFAData& d, int32_t s, std::string& key) {
    std::vector<int32_t> order{s};
    std::unordered_map<int32_t, int32_t> num{{s, 0}};
    std::vector<int32_t> row(257);
    key.clear();
    for (size_t q = 0; q < order.size(); ++q) {
        int32_t st = order[q];
        row[0] = d.accepting[st];
        for (int b = 0; b < 256; ++b) {
            int32_t t = d.trans[(size_t)st * 256 + b];
            if (t < 0) { row[b + 1] = -1; continue; }
            auto it = num.find(t);
            if (it == num.end()) {
                if (order.size() >= CANON_MAX) return false;
                it = num.emplace(t, (int32_t)order.size()).first;
                order.push_back(t);
            }
            row[b + 1] = it->second;
        }
        key.append(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(int32_t));
    }
    return true;
}

int32_t eager_entry(CoreData& g, DFAData& d, int32_t s) {
    int32_t& slot = d.eager[s];
    if (slot != -2) return slot;
    VocabData& v = *g.vocab;
    std::string key;
    std::shared_ptr<const EagerEntry> e;
    bool canon = canonical(d, s, key);
    if (canon) {
        auto it = v.eager_shared.find(key);
        if (it != v.eager_shared.end()) e = it->second;
    }
    if (!e) {
        e = walk_eager(g, d, s);
        if (canon && v.eager_shared.size() < EAGER_SHARED_MAX) v.eager_shared.emplace(std::move(key), e);
    }
    if (e->na >= g.eager_min_tokens || e->nd >= g.eager_min_tokens) {
        slot = (int32_t)g.eager.size();
        g.eager.push_back(std::move(e));
    } else {
        slot = -1;
    }
    return slot;
}

// Which regexes the eager cache covers (masks.eager_regex_cache's caps, in regex order).
void plan_eager(CoreData& g, int64_t max_states, int64_t max_total) {
    if (g.vocab->n == 0) return;
    int64_t total = 0;
    for (DFAData& d : g.dfas) {
        if (d.n_states > max_states || total + d.n_states > max_total) continue;
        total += d.n_states;
        d.eager.assign(d.n_states, -2);
    }
}

// ------------------------------------------------------------------------------------------------ recogniser
class Recognizer {
  public:
    Recognizer(std::shared_ptr<CoreData> g, bool compaction, bool stop_first)
        : g_(std::move(g)), compaction_(compaction), stop_first_(stop_first) {
        done_stamp_.assign(g_->n_nt, 0u);
        dp_stamp_.assign(g_->kind.size(), 0u);
        reset();
    }

    std::shared_ptr<CoreData> g_;
    bool compaction_, stop_first_;
    std::vector<ColPtr> cols;
    bool finished = false;
    int64_t sb_sets = 1, sb_items = 0, sa_sets = 1, sa_items = 0;

    void reset() {
        cols.clear();
        cols.push_back(newcol());
        predict(*cols[0], 0);
        finished = false;
        sb_sets = sa_sets = 1;
        sb_items = sa_items = (int64_t)cols[0]->items.size();
    }

    int64_t n_items() const {
        int64_t n = 0;
        for (auto& c : cols) n += (int64_t)c->items.size();
        return n;
    }

    int32_t col_key(Column& c) {
        if (c.key < 0) {
            std::vector<Item> s(c.items);
            std::sort(s.begin(), s.end());
            s.erase(std::unique(s.begin(), s.end()), s.end());
            std::string k(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(Item));
            auto it = g_->intern.find(k);
            if (it == g_->intern.end()) it = g_->intern.emplace(std::move(k), (int32_t)g_->intern.size()).first;
            c.key = it->second;
        }
        return c.key;
    }

    bool accept_bytes(const uint8_t* data, size_t n) {
        if (finished) return false;
        std::vector<ColPtr> saved(cols);
        bool fin = false;
        for (size_t i = 0; i < n; ++i) {
            Column* col = step(data[i], true);
            if (!col) { cols = saved; return false; }
            fin = fin || col->finished_here;
        }
        Column& last = *cols.back();
        predict(last, (int32_t)cols.size() - 1);
        sa_sets = (int64_t)cols.size();
        sa_items = n_items();
        if (!compaction_) { sb_sets = sa_sets; sb_items = sa_items; }
        finished = stop_first_ ? fin : (last.finished_here && last.scan.empty());
        return true;
    }

    bool accepting() const { return cols.back()->finished_here; }

    void first_bytes(uint64_t out[4]) const {
        out[0] = out[1] = out[2] = out[3] = 0;
        const CoreData& g = *g_;
        for (const Item& it : cols.back()->scan) {
            if (g.kind[it.dp] == K_LIT) {
                uint8_t b = (uint8_t)g.lit_pool[g.lit_off[it.dp] + it.st];
                out[b >> 6] |= 1ULL << (b & 63);
            } else {
                const uint64_t* f = &g.dfas[g.value[it.dp]].first[(size_t)it.st * 4];
                for (int w = 0; w < 4; ++w) out[w] |= f[w];
            }
        }
    }

    // The mask over ranks (masks.ConstrainedEngine._allowed_ranks): result in `allowed` (bitset over ranks).
    void allowed_ranks(bool use_eager, bool use_rpc, std::vector<uint64_t>& allowed, int64_t& candidates,
                       int64_t& simulated, bool& eager_used) {
        CoreData& g = *g_;
        const VocabData& v = *g.vocab;
        size_t W = v.words;
        std::vector<uint64_t> cands(W, 0), undet;
        uint64_t fb[4];
        first_bytes(fb);
        for (int b = 0; b < 256; ++b)
            if ((fb[b >> 6] >> (b & 63)) & 1) set_range(cands, v.lo[b], v.hi[b]);
        allowed.assign(W, 0);
        undet = cands;
        eager_used = false;
        if (use_eager && g.eager_planned) {
            bool all_regex = true, used = false;
            std::vector<uint64_t> dis(W, ~0ULL);
            for (const Item& it : cols.back()->scan) {
                int32_t e = -1;
                if (g.kind[it.dp] == K_RE) {
                    DFAData& d = g.dfas[g.value[it.dp]];
                    if (!d.eager.empty()) e = eager_entry(g, d, it.st);
                }
                if (e < 0) { all_regex = false; continue; }
                used = true;
                const EagerEntry* en = g.eager[e].get();
                // union and intersection are idempotent: an entry met again (a shared walk) changes nothing
                if (std::find(applied_.begin(), applied_.end(), en) != applied_.end()) continue;
                applied_.push_back(en);
                for (size_t w = 0; w < W; ++w) { allowed[w] |= en->allowed[w]; dis[w] &= en->disallowed[w]; }
            }
            applied_.clear();
            if (used) {
                eager_used = true;
                for (size_t w = 0; w < W; ++w) undet[w] &= ~allowed[w];
                if (all_regex)
                    for (size_t w = 0; w < W; ++w) undet[w] &= ~dis[w];
            }
        }
        candidates = 0;
        for (size_t w = 0; w < W; ++w) candidates += __builtin_popcountll(cands[w]);
        std::vector<int64_t> ranks;
        for (size_t w = 0; w < W; ++w) {
            uint64_t x = undet[w];
            while (x) {
                int b = __builtin_ctzll(x);
                int64_t r = (int64_t)(w * 64 + b);
                if (r < v.n) ranks.push_back(r);
                x &= x - 1;
            }
        }
        simulated = (int64_t)ranks.size();
        simulate(ranks, use_rpc, allowed);
    }

  private:
    std::vector<ColPtr> pool_;
    std::vector<const EagerEntry*> applied_;
    ItemSet pseen_, sseen_, cseen_, done_pairs_;
    std::vector<uint32_t> done_stamp_, dp_stamp_;
    uint32_t done_gen_ = 0, dp_gen_ = 0;
    std::vector<Item> new_;
    std::vector<std::pair<int32_t, int32_t>> todo_;
    std::vector<std::pair<Column*, int32_t>> path_;

    static void set_range(std::vector<uint64_t>& bits, int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi;) {
            int64_t w = r >> 6, b = r & 63;
            if (b == 0 && r + 64 <= hi) { bits[w] = ~0ULL; r += 64; continue; }
            bits[w] |= 1ULL << b;
            ++r;
        }
    }

    ColPtr newcol() {
        if (!pool_.empty()) {
            ColPtr c = std::move(pool_.back());
            pool_.pop_back();
            c->clear();
            return c;
        }
        return std::make_shared<Column>();
    }
    void truncate(size_t n) {
        while (cols.size() > n) {
            ColPtr c = std::move(cols.back());
            cols.pop_back();
            if (c.use_count() == 1 && pool_.size() < 4096) pool_.push_back(std::move(c));
        }
    }

    // earley.Recognizer._predict
    void predict(Column& col, int32_t index) {
        // In place on col.items (earley.Recognizer._predict is always called with the column's own items).
        // A column predicted for the first time holds no item whose ret column is its own index (they all come
        // from older columns), and every prediction table entry has state 0: predictions are then deduplicated
        // by their dotted position alone. Otherwise (the rare second prediction) through a full item set.
        const CoreData& g = *g_;
        std::vector<Item>& out = col.items;
        const size_t n0 = out.size();
        const bool fast = !col.predicted && g.pred_st_zero;
        if (fast) {
            if (++dp_gen_ == 0) { std::fill(dp_stamp_.begin(), dp_stamp_.end(), 0u); dp_gen_ = 1; }
        } else {
            pseen_.clear();
            for (const Item& it : out) pseen_.insert(it);
        }
        if (++done_gen_ == 0) { std::fill(done_stamp_.begin(), done_stamp_.end(), 0u); done_gen_ = 1; }
        auto add = [&](int32_t k) {
            int32_t pdp = g.pred_dp[k];
            if (fast) {
                if (dp_stamp_[pdp] == dp_gen_) return;
                dp_stamp_[pdp] = dp_gen_;
                out.push_back(Item{pdp, 0, g.lhs[pdp], index});
            } else {
                Item nw{pdp, g.pred_st[k], g.lhs[pdp], index};
                if (pseen_.insert(nw)) out.push_back(nw);
            }
        };
        for (size_t q = 0; q < n0; ++q) {
            const int32_t dp = out[q].dp;
            if (g.kind[dp] != K_NT) continue;
            int32_t nt = g.value[dp];
            if (done_stamp_[nt] == done_gen_) continue;
            done_stamp_[nt] = done_gen_;
            for (int32_t k = g.pred_off[nt]; k < g.pred_off[nt + 1]; ++k) add(k);
        }
        if (index == 0 && n0 == 0) {
            int32_t nt = g.start;
            for (int32_t k = g.pred_off[nt]; k < g.pred_off[nt + 1]; ++k) add(k);
        }

        for (const Item& it : col.items) {
            if (g.kind[it.dp] == K_NT) col.pd_raw.push_back(it);
            else col.scan.push_back(it);
        }
        col.pd.clear();
        col.pd.reserve(col.pd_raw.size());
        for (int32_t i = 0; i < (int32_t)col.pd_raw.size(); ++i) col.pd.emplace_back(g.value[col.pd_raw[i].dp], i);
        std::sort(col.pd.begin(), col.pd.end());
        col.key = -1;
        col.predicted = true;
    }

    // [begin, end) of col.pd for nonterminal nt
    static std::pair<size_t, size_t> postdot(const Column& col, int32_t nt) {
        auto lo = std::lower_bound(col.pd.begin(), col.pd.end(), std::make_pair(nt, INT32_MIN));
        auto hi = lo;
        while (hi != col.pd.end() && hi->first == nt) ++hi;
        return {size_t(lo - col.pd.begin()), size_t(hi - col.pd.begin())};
    }

    // earley.Recognizer._leo
    Top leo(int32_t nt, int32_t j) {
        const CoreData& g = *g_;
        path_.clear();
        bool passed = false;
        Top top;
        while (true) {
            Column& col = *cols[j];
            const Top* memo = nullptr;
            for (auto& m : col.leo)
                if (m.first == nt) { memo = &m.second; break; }
            if (memo) {
                top = Top{memo->nt, memo->col, memo->passed || passed};
                break;
            }
            auto r = postdot(col, nt);
            if (r.second - r.first == 1) {
                const Item& it = col.pd_raw[col.pd[r.first].second];
                if (g.is_last[it.dp]) {
                    path_.emplace_back(&col, nt);
                    if (nt == g.start && j == 0) passed = true;
                    nt = it.rn;
                    j = it.rc;
                    continue;
                }
            }
            top = Top{nt, j, passed};
            break;
        }
        for (auto& p : path_) {
            bool found = false;
            for (auto& m : p.first->leo)
                if (m.first == p.second) { m.second = top; found = true; break; }
            if (!found) p.first->leo.emplace_back(p.second, top);
        }
        return top;
    }

    inline void push_new(const Item& it) {
        if (sseen_.insert(it)) new_.push_back(it);
    }

    // earley.Recognizer._step: nullptr when the byte is rejected
    Column* step(uint8_t byte, bool compact) {
        const CoreData& g = *g_;
        Column& last = *cols.back();
        if (!last.predicted) predict(last, (int32_t)cols.size() - 1);
        new_.clear();
        sseen_.clear();
        todo_.clear();
        for (const Item& it : last.scan) {
            int32_t dp = it.dp;
            if (g.kind[dp] == K_LIT) {
                const char* lit = g.lit_pool.data() + g.lit_off[dp];
                if ((uint8_t)lit[it.st] != byte) continue;
                if (it.st + 1 < g.lit_len[dp]) {
                    push_new(Item{dp, it.st + 1, it.rn, it.rc});
                    continue;
                }
            } else {
                const DFAData& d = g.dfas[g.value[dp]];
                int32_t ns = d.trans[(size_t)it.st * 256 + byte];
                if (ns < 0) continue;
                if (d.live_out[ns]) push_new(Item{dp, ns, it.rn, it.rc});
                if (!d.accepting[ns]) continue;
            }
            for (int32_t k = g.adv_off[dp]; k < g.adv_off[dp + 1]; ++k) push_new(Item{g.adv[k], 0, it.rn, it.rc});
            if (g.adv_done[dp]) todo_.emplace_back(it.rn, it.rc);
        }
        if (new_.empty() && todo_.empty()) return nullptr;
        bool fin = false;
        done_pairs_.clear();
        while (!todo_.empty()) {
            auto key = todo_.back();
            todo_.pop_back();
            if (!done_pairs_.insert(Item{key.first, key.second, -7, -7})) continue;
            Top t = leo(key.first, key.second);
            if (t.passed || (t.nt == g.start && t.col == 0)) fin = true;
            Column& cj = *cols[t.col];
            auto r = postdot(cj, t.nt);
            // the Python list is in append order: pd holds (nt, index) sorted, so indices ascend within nt
            for (size_t q = r.first; q < r.second; ++q) {
                Item it = cj.pd_raw[cj.pd[q].second];
                for (int32_t k = g.adv_off[it.dp]; k < g.adv_off[it.dp + 1]; ++k)
                    push_new(Item{g.adv[k], 0, it.rn, it.rc});
                if (g.adv_done[it.dp]) todo_.emplace_back(it.rn, it.rc);
            }
        }
        ColPtr col = newcol();
        col->items.assign(new_.begin(), new_.end());
        col->finished_here = fin;
        if (compact && compaction_) do_compact(*col);
        cols.push_back(col);
        return col.get();
    }

    // earley.Recognizer._compact
    void do_compact(Column& col) {
        int64_t before_sets = (int64_t)cols.size() + 1, before_items = n_items() + (int64_t)col.items.size();
        std::vector<Item> folded;
        folded.reserve(col.items.size());
        cseen_.clear();
        int32_t m = 0;
        for (Item it : col.items) {
            Top t = leo(it.rn, it.rc);
            if (!t.passed && (t.nt != it.rn || t.col != it.rc)) it = Item{it.dp, it.st, t.nt, t.col};
            if (cseen_.insert(it)) folded.push_back(it);
            if (it.rc > m) m = it.rc;
        }
        col.items = std::move(folded);
        if ((size_t)(m + 1) < cols.size()) truncate((size_t)m + 1);
        sb_sets = before_sets;
        sb_items = before_items;
    }

    // masks.ConstrainedEngine._simulate: each candidate's bytes; roll back to the common prefix with the previous
    void simulate(const std::vector<int64_t>& ranks, bool use_rpc, std::vector<uint64_t>& accepted) {
        const VocabData& v = *g_->vocab;
        size_t base = cols.size();
        const uint8_t* prev = nullptr;
        int64_t depth = 0;
        const uint8_t* rej = nullptr;
        int64_t rej_len = -1;
        for (int64_t r : ranks) {
            const uint8_t* tok = v.tok(r);
            int64_t len = v.len(r);
            if (use_rpc && rej_len >= 0 && len >= rej_len && std::memcmp(tok, rej, (size_t)rej_len) == 0) continue;
            int64_t k = 0, lim = std::min(depth, len);
            while (k < lim && prev[k] == tok[k]) ++k;
            if (k < depth) {
                truncate(base + (size_t)k);
                depth = k;
            }
            bool ok = true;
            for (int64_t i = k; i < len; ++i) {
                if (!step(tok[i], false)) {
                    ok = false;
                    rej = tok;
                    rej_len = i + 1;
                    break;
                }
                ++depth;
            }
            prev = tok;
            if (ok) accepted[(size_t)r >> 6] |= 1ULL << (r & 63);
        }
        truncate(base);
    }
};

// ------------------------------------------------------------------------------------------------ regex automata
// regex.py's subset construction, trimming, Moore minimisation and product/difference automata, with the same
// output: the same state numbering, so a DFA built here equals the Python reference's array for array
// (tests/engines/zapformat/test_compiled.py). Inside, a DFA is stored over byte classes (runs of bytes that every
// state treats alike), K columns instead of 256; it is expanded to 256 columns once, on the way out.

struct CDFA {
    std::vector<int32_t> cuts{0, 256};  // class k = bytes [cuts[k], cuts[k + 1])
    std::vector<int32_t> t;             // n * K: next state or -1
    std::vector<uint8_t> acc;
    int32_t K() const { return (int32_t)cuts.size() - 1; }
    int32_t n() const { return (int32_t)acc.size(); }
};

// a 256-column table -> classes = maximal runs of bytes with equal columns
CDFA compress(const std::vector<int32_t>& trans, const std::vector<uint8_t>& accept) {
    CDFA d;
    const int32_t n = (int32_t)accept.size();
    bool cut[256] = {false};
    for (int32_t s = 0; s < n; ++s) {
        const int32_t* row = &trans[(size_t)s * 256];
        for (int b = 1; b < 256; ++b) cut[b] |= row[b] != row[b - 1];
    }
    d.cuts.assign(1, 0);
    for (int b = 1; b < 256; ++b)
        if (cut[b]) d.cuts.push_back(b);
    d.cuts.push_back(256);
    const int32_t K = d.K();
    d.t.resize((size_t)n * K);
    for (int32_t s = 0; s < n; ++s)
        for (int32_t k = 0; k < K; ++k) d.t[(size_t)s * K + k] = trans[(size_t)s * 256 + d.cuts[k]];
    d.acc = accept;
    return d;
}

void expand(const CDFA& d, std::vector<int32_t>& trans) {
    const int32_t n = d.n(), K = d.K();
    trans.resize((size_t)n * 256);
    for (int32_t s = 0; s < n; ++s) {
        int32_t* row = &trans[(size_t)s * 256];
        for (int32_t k = 0; k < K; ++k) std::fill(row + d.cuts[k], row + d.cuts[k + 1], d.t[(size_t)s * K + k]);
    }
}

// regex._subset_construction. NFA: eps edges (src -> tgt) and byte-range edges (src, lo..hi -> tgt). Returns
// false when the DFA would exceed max_states (the caller raises RegexError).
bool determinize(int32_t n_nfa, const std::vector<int32_t>& eps_src, const std::vector<int32_t>& eps_tgt,
                 const std::vector<int32_t>& e_src, const std::vector<int32_t>& e_lo, const std::vector<int32_t>& e_hi,
                 const std::vector<int32_t>& e_tgt, int32_t start, int32_t final_, int64_t max_states, CDFA& out) {
    // CSR adjacency
    std::vector<int32_t> eps_off(n_nfa + 1, 0), eps_adj(eps_src.size());
    for (int32_t s : eps_src) ++eps_off[s + 1];
    for (int32_t i = 0; i < n_nfa; ++i) eps_off[i + 1] += eps_off[i];
    {
        std::vector<int32_t> fill(eps_off.begin(), eps_off.end() - 1);
        for (size_t i = 0; i < eps_src.size(); ++i) eps_adj[fill[eps_src[i]]++] = eps_tgt[i];
    }
    // byte classes: the cuts {0, 256, lo, hi + 1}; class k covers [cuts[k], cuts[k + 1])
    bool cut[257] = {false};
    cut[0] = cut[256] = true;
    for (size_t i = 0; i < e_src.size(); ++i) { cut[e_lo[i]] = true; cut[e_hi[i] + 1] = true; }
    std::vector<int32_t>& cuts = out.cuts;
    cuts.clear();
    int32_t class_of[257];
    for (int b = 0; b <= 256; ++b) {
        if (cut[b]) cuts.push_back(b);
        class_of[b] = (int32_t)cuts.size() - 1;  // for a cut b: its own index
    }
    const int32_t K = (int32_t)cuts.size() - 1;
    // edges per source state, as (class lo, class hi exclusive, target)
    std::vector<int32_t> e_off(n_nfa + 1, 0);
    for (int32_t s : e_src) ++e_off[s + 1];
    for (int32_t i = 0; i < n_nfa; ++i) e_off[i + 1] += e_off[i];
    std::vector<int32_t> ek_lo(e_src.size()), ek_hi(e_src.size()), ek_t(e_src.size());
    {
        std::vector<int32_t> fill(e_off.begin(), e_off.end() - 1);
        for (size_t i = 0; i < e_src.size(); ++i) {
            int32_t q = fill[e_src[i]]++;
            ek_lo[q] = class_of[e_lo[i]];
            ek_hi[q] = class_of[e_hi[i] + 1];
            ek_t[q] = e_tgt[i];
        }
    }
    std::vector<uint32_t> stamp(n_nfa, 0);
    uint32_t gen = 0;
    std::vector<int32_t> stack;
    auto closure = [&](const std::vector<int32_t>& seeds, std::vector<int32_t>& res) {
        if (++gen == 0) { std::fill(stamp.begin(), stamp.end(), 0u); gen = 1; }
        res.clear();
        stack.clear();
        for (int32_t s : seeds)
            if (stamp[s] != gen) { stamp[s] = gen; res.push_back(s); stack.push_back(s); }
        while (!stack.empty()) {
            int32_t s = stack.back();
            stack.pop_back();
            for (int32_t k = eps_off[s]; k < eps_off[s + 1]; ++k) {
                int32_t t = eps_adj[k];
                if (stamp[t] != gen) { stamp[t] = gen; res.push_back(t); stack.push_back(t); }
            }
        }
        std::sort(res.begin(), res.end());
    };
    std::unordered_map<std::string, int32_t> index;
    std::vector<std::vector<int32_t>> order;
    std::vector<int32_t> set;
    closure(std::vector<int32_t>{start}, set);
    auto key_of = [](const std::vector<int32_t>& v) {
        return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int32_t));
    };
    index.emplace(key_of(set), 0);
    order.push_back(set);
    std::vector<std::vector<int32_t>> buckets(K);
    std::vector<int32_t> touched;
    std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> same;  // bucket hash -> (class, DFA state)
    std::vector<int32_t>& trans = out.t;
    trans.clear();
    for (size_t q = 0; q < order.size(); ++q) {
        trans.resize((q + 1) * K, -1);
        touched.clear();
        for (int32_t s : order[q])
            for (int32_t k = e_off[s]; k < e_off[s + 1]; ++k)
                for (int32_t c = ek_lo[k]; c < ek_hi[k]; ++c) {
                    if (buckets[c].empty()) touched.push_back(c);
                    buckets[c].push_back(ek_t[k]);
                }
        std::sort(touched.begin(), touched.end());
        // classes of this state with the same target list share one closure
        same.clear();
        for (int32_t c : touched) {
            const std::vector<int32_t>& bk = buckets[c];
            uint64_t h = 0x9E3779B97F4A7C15ULL ^ bk.size();
            for (int32_t t : bk) h = mix(h ^ (uint32_t)t);
            int32_t id = -1;
            auto hit = same.find(h);
            if (hit != same.end() && buckets[hit->second.first] == bk) id = hit->second.second;
            if (id < 0) {
                closure(bk, set);
                std::string key = key_of(set);
                auto it = index.find(key);
                if (it == index.end()) {
                    if ((int64_t)order.size() >= max_states) return false;
                    id = (int32_t)order.size();
                    index.emplace(std::move(key), id);
                    order.push_back(set);
                } else {
                    id = it->second;
                }
                if (hit == same.end()) same.emplace(h, std::make_pair(c, id));
            }
            trans[q * K + c] = id;
        }
        for (int32_t c : touched) buckets[c].clear();
    }
    out.acc.assign(order.size(), 0);
    for (size_t q = 0; q < order.size(); ++q)
        out.acc[q] = std::binary_search(order[q].begin(), order[q].end(), final_) ? 1 : 0;
    return true;
}

// regex._trim: states that cannot reach an accepting state go to the dead state (-1); the others keep their
// order. False when the start state is dead (the regex matches nothing).
bool trim(CDFA& d) {
    const int32_t n = d.n(), K = d.K();
    const std::vector<int32_t>& t = d.t;
    std::vector<int32_t> rev_off(n + 1, 0), rev;
    for (size_t i = 0; i < t.size(); ++i)
        if (t[i] >= 0) ++rev_off[t[i] + 1];
    for (int32_t i = 0; i < n; ++i) rev_off[i + 1] += rev_off[i];
    rev.resize(rev_off[n]);
    {
        std::vector<int32_t> fill(rev_off.begin(), rev_off.end() - 1);
        for (size_t i = 0; i < t.size(); ++i)
            if (t[i] >= 0) rev[fill[t[i]]++] = (int32_t)(i / K);
    }
    std::vector<uint8_t> alive(d.acc);
    std::vector<int32_t> stack;
    for (int32_t s = 0; s < n; ++s)
        if (alive[s]) stack.push_back(s);
    while (!stack.empty()) {
        int32_t s = stack.back();
        stack.pop_back();
        for (int32_t k = rev_off[s]; k < rev_off[s + 1]; ++k)
            if (!alive[rev[k]]) { alive[rev[k]] = 1; stack.push_back(rev[k]); }
    }
    if (n == 0 || !alive[0]) return false;
    std::vector<int32_t> remap(n, -1);
    int32_t m = 0;
    for (int32_t s = 0; s < n; ++s)
        if (alive[s]) remap[s] = m++;
    if (m == n) return true;
    std::vector<int32_t> t2((size_t)m * K);
    std::vector<uint8_t> a2(m);
    for (int32_t s = 0; s < n; ++s) {
        if (!alive[s]) continue;
        const int32_t* row = &t[(size_t)s * K];
        int32_t* o = &t2[(size_t)remap[s] * K];
        for (int32_t k = 0; k < K; ++k) o[k] = row[k] >= 0 ? remap[row[k]] : -1;
        a2[remap[s]] = d.acc[s];
    }
    d.t.swap(t2);
    d.acc.swap(a2);
    return true;
}

// regex._minimize: the coarsest partition that separates accepting, non-accepting and dead states and is stable
// under every byte (Hopcroft's algorithm: the same partition as the Python Moore refinement, which is unique),
// then the Python renumbering: the start's class is 0, classes in breadth-first order, a class's successors
// visited in the order of the (ascending) state ids its smallest member moves to.
void minimize(CDFA& d) {
    const int32_t n = d.n(), K = d.K();
    if (n == 0) return;
    const int32_t N = n + 1, D = n;  // D: the dead state, complete under every class
    const std::vector<int32_t>& trans = d.t;
    // refine over one class per distinct column (classes whose columns are equal split nothing differently)
    std::vector<int32_t> cols;
    {
        std::unordered_map<uint64_t, std::vector<int32_t>> by_hash;
        for (int32_t k = 0; k < K; ++k) {
            uint64_t h = 0x9E3779B97F4A7C15ULL;
            for (int32_t s = 0; s < n; ++s) h = (h ^ (uint32_t)trans[(size_t)s * K + k]) * 0x100000001B3ULL;
            std::vector<int32_t>& same = by_hash[h];
            bool dup = false;
            for (int32_t j : same) {
                dup = true;
                for (int32_t s = 0; s < n && dup; ++s) dup = trans[(size_t)s * K + j] == trans[(size_t)s * K + k];
                if (dup) break;
            }
            if (!dup) { same.push_back(k); cols.push_back(k); }
        }
    }
    const int32_t C = (int32_t)cols.size();
    auto delta = [&](int32_t s, int32_t c) -> int32_t {
        if (s == D) return D;
        int32_t t = trans[(size_t)s * K + cols[c]];
        return t < 0 ? D : t;
    };
    // inverse transitions per class: inv[k][q] = predecessors of q under class k
    std::vector<int32_t> inv_off((size_t)C * (N + 1) + 1, 0), inv((size_t)C * N);
    for (int32_t k = 0; k < C; ++k)
        for (int32_t s = 0; s < N; ++s) ++inv_off[(size_t)k * (N + 1) + delta(s, k) + 1];
    for (size_t i = 0; i + 1 < inv_off.size(); ++i) inv_off[i + 1] += inv_off[i];
    {
        std::vector<int32_t> fill(inv_off.begin(), inv_off.end() - 1);
        for (int32_t k = 0; k < C; ++k)
            for (int32_t s = 0; s < N; ++s) inv[fill[(size_t)k * (N + 1) + delta(s, k)]++] = s;
    }
    // partition: elems in block order; block b is elems[bstart[b], bend[b])
    std::vector<int32_t> elems, loc(N), blk(N), bstart, bend, bmark;
    for (int pass = 0; pass < 3; ++pass) {
        int32_t b0 = (int32_t)bstart.size(), s0 = (int32_t)elems.size();
        for (int32_t s = 0; s < N; ++s) {
            int grp = s == D ? 2 : (d.acc[s] ? 0 : 1);
            if (grp != pass) continue;
            loc[s] = (int32_t)elems.size();
            blk[s] = b0;
            elems.push_back(s);
        }
        if ((int32_t)elems.size() > s0) { bstart.push_back(s0); bend.push_back((int32_t)elems.size()); bmark.push_back(0); }
    }
    std::vector<uint8_t> inwl;
    std::vector<std::pair<int32_t, int32_t>> work;
    inwl.assign(bstart.size() * (size_t)C, 1);
    for (int32_t b = 0; b < (int32_t)bstart.size(); ++b)
        for (int32_t k = 0; k < C; ++k) work.emplace_back(b, k);
    std::vector<int32_t> xs, touched;
    while (!work.empty()) {
        auto [B, k] = work.back();
        work.pop_back();
        inwl[(size_t)B * C + k] = 0;
        xs.clear();
        for (int32_t i = bstart[B]; i < bend[B]; ++i) {
            int32_t q = elems[i];
            size_t o = (size_t)k * (N + 1) + q;
            for (int32_t j = inv_off[o]; j < inv_off[o + 1]; ++j) xs.push_back(inv[j]);
        }
        touched.clear();
        for (int32_t p : xs) {  // each state has one successor per class: no duplicates
            int32_t y = blk[p];
            int32_t pos = loc[p], tgt = bstart[y] + bmark[y];
            int32_t other = elems[tgt];
            elems[tgt] = p; loc[p] = tgt;
            elems[pos] = other; loc[other] = pos;
            if (bmark[y]++ == 0) touched.push_back(y);
        }
        for (int32_t y : touched) {
            int32_t m = bmark[y];
            bmark[y] = 0;
            if (m == bend[y] - bstart[y]) continue;
            int32_t z = (int32_t)bstart.size();
            bstart.push_back(bstart[y]);
            bend.push_back(bstart[y] + m);
            bmark.push_back(0);
            bstart[y] += m;
            for (int32_t i = bstart[z]; i < bend[z]; ++i) blk[elems[i]] = z;
            inwl.resize(bstart.size() * (size_t)C, 0);
            int32_t sy = bend[y] - bstart[y], sz = bend[z] - bstart[z];
            for (int32_t a = 0; a < C; ++a) {
                if (inwl[(size_t)y * C + a]) {
                    inwl[(size_t)z * C + a] = 1;
                    work.emplace_back(z, a);
                } else {
                    int32_t w = sz <= sy ? z : y;
                    inwl[(size_t)w * C + a] = 1;
                    work.emplace_back(w, a);
                }
            }
        }
    }
    // renumbering (regex._minimize's breadth-first pass; the row's distinct targets are its classes' targets)
    const int32_t nb = (int32_t)bstart.size();
    std::vector<int32_t> rep(nb, -1), seen(nb, -1), order, queue;
    for (int32_t s = 0; s < n; ++s)
        if (rep[blk[s]] < 0) rep[blk[s]] = s;
    queue.push_back(blk[0]);
    std::vector<int32_t> row(K);
    for (size_t h = 0; h < queue.size(); ++h) {
        int32_t c = queue[h];
        if (seen[c] >= 0) continue;
        seen[c] = (int32_t)order.size();
        order.push_back(c);
        std::memcpy(row.data(), &trans[(size_t)rep[c] * K], K * sizeof(int32_t));
        std::sort(row.begin(), row.end());
        for (int32_t b = 0; b < K; ++b) {
            if (b && row[b] == row[b - 1]) continue;
            int32_t t = row[b];
            if (t >= 0 && seen[blk[t]] < 0) queue.push_back(blk[t]);
        }
    }
    const int32_t m = (int32_t)order.size();
    std::vector<int32_t> t2((size_t)m * K);
    std::vector<uint8_t> a2(m);
    for (int32_t k = 0; k < m; ++k) {
        const int32_t* src = &trans[(size_t)rep[order[k]] * K];
        int32_t* o = &t2[(size_t)k * K];
        for (int32_t b = 0; b < K; ++b) o[b] = src[b] >= 0 ? seen[blk[src[b]]] : -1;
        a2[k] = d.acc[rep[order[k]]];
    }
    d.t.swap(t2);
    d.acc.swap(a2);
}

// regex._product (difference = false) and regex._difference (difference = true): reachable pairs, discovered in
// state order then byte order (a class's first byte stands for the class). False past max_states.
bool product(const CDFA& a, const CDFA& b, bool difference, int64_t max_states, CDFA& out) {
    // common classes: the union of both cut sets; per class, the class index in a and in b
    std::vector<int32_t>& cuts = out.cuts;
    cuts.clear();
    std::merge(a.cuts.begin(), a.cuts.end(), b.cuts.begin(), b.cuts.end(), std::back_inserter(cuts));
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const int32_t K = (int32_t)cuts.size() - 1, Ka = a.K(), Kb = b.K();
    std::vector<int32_t> ca(K), cb(K);
    for (int32_t k = 0, ia = 0, ib = 0; k < K; ++k) {
        while (a.cuts[ia + 1] <= cuts[k]) ++ia;
        while (b.cuts[ib + 1] <= cuts[k]) ++ib;
        ca[k] = ia;
        cb[k] = ib;
    }
    std::unordered_map<int64_t, int32_t> index;
    std::vector<std::pair<int32_t, int32_t>> order{{0, 0}};
    auto key = [](int32_t u, int32_t v) { return ((int64_t)u << 32) | (uint32_t)(v + 2); };
    index.emplace(key(0, 0), 0);
    std::vector<int32_t>& trans = out.t;
    trans.clear();
    for (size_t q = 0; q < order.size(); ++q) {
        trans.resize((q + 1) * K, -1);
        auto [x, y] = order[q];
        const int32_t* ra = &a.t[(size_t)x * Ka];
        const int32_t* rb = y >= 0 ? &b.t[(size_t)y * Kb] : nullptr;
        for (int32_t c = 0; c < K; ++c) {
            int32_t u = ra[ca[c]], v;
            if (u < 0) continue;
            if (difference) {
                v = rb ? rb[cb[c]] : -2;
                if (v == -1) v = -2;
            } else {
                v = rb[cb[c]];
                if (v < 0) continue;
            }
            auto it = index.find(key(u, v));
            int32_t id;
            if (it == index.end()) {
                if ((int64_t)order.size() >= max_states) return false;
                id = (int32_t)order.size();
                index.emplace(key(u, v), id);
                order.emplace_back(u, v);
            } else {
                id = it->second;
            }
            trans[q * K + c] = id;
        }
    }
    out.acc.assign(order.size(), 0);
    for (size_t q = 0; q < order.size(); ++q) {
        auto [x, y] = order[q];
        out.acc[q] = difference ? (a.acc[x] && (y < 0 || !b.acc[y])) : (a.acc[x] && b.acc[y]);
    }
    return true;
}

// regex.parse + regex._NFA.build for the patterns that need no error message: a literal port (same AST, same
// NFA). Anything the port does not take (every error, and the corners where Python's int() or str.isalnum() decide)
// returns false, and regex.py runs the Python parser, which raises the error or builds the same NFA.
constexpr int32_t RX_MAX_CHAR = 0x10FFFF, RX_SUR_LO = 0xD800, RX_SUR_HI = 0xDFFF;
using Ranges = std::vector<std::pair<int32_t, int32_t>>;
Ranges g_perl[3];        // \d \s \w (set from Python: regex.perl_class)
bool g_perl_set[3] = {false, false, false};

void rx_normalize(Ranges& r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (auto& x : r) {
        if (!out.empty() && x.first <= out.back().second + 1) out.back().second = std::max(out.back().second, x.second);
        else out.push_back(x);
    }
    r.swap(out);
}
Ranges rx_negate(Ranges r) {
    rx_normalize(r);
    Ranges out;
    int32_t nxt = 0;
    for (auto& x : r) {
        if (x.first > nxt) out.emplace_back(nxt, x.first - 1);
        nxt = x.second + 1;
    }
    if (nxt <= RX_MAX_CHAR) out.emplace_back(nxt, RX_MAX_CHAR);
    return out;
}

struct RxNode {
    enum Kind : uint8_t { SET, CAT, ALT, REP } kind;
    Ranges ranges;
    std::vector<std::unique_ptr<RxNode>> subs;
    int32_t lo = 0, hi = -1;  // REP: hi -1 = unbounded
};

class RxParser {
  public:
    RxParser(const Py_UCS4* p, size_t n, int64_t max_repeat) : p_(p), n_(n), max_repeat_(max_repeat) {}
    bool ok = true;
    std::unique_ptr<RxNode> parse() {
        auto node = alt();
        if (ok && i_ != n_) ok = false;
        return node;
    }

  private:
    const Py_UCS4* p_;
    size_t n_, i_ = 0;
    int64_t max_repeat_;
    int32_t peek() const { return i_ < n_ ? (int32_t)p_[i_] : -1; }
    std::unique_ptr<RxNode> fail() { ok = false; return nullptr; }

    std::unique_ptr<RxNode> alt() {
        std::vector<std::unique_ptr<RxNode>> br;
        br.push_back(cat());
        if (!ok) return nullptr;
        while (peek() == '|') {
            ++i_;
            br.push_back(cat());
            if (!ok) return nullptr;
        }
        if (br.size() == 1) return std::move(br[0]);
        auto n = std::make_unique<RxNode>();
        n->kind = RxNode::ALT;
        n->subs = std::move(br);
        return n;
    }
    std::unique_ptr<RxNode> cat() {
        auto n = std::make_unique<RxNode>();
        n->kind = RxNode::CAT;
        while (peek() != -1 && peek() != '|' && peek() != ')') {
            n->subs.push_back(quantified());
            if (!ok) return nullptr;
        }
        return n;
    }
    std::unique_ptr<RxNode> quantified() {
        auto node = atom();
        if (!ok) return nullptr;
        while (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
            int32_t c = peek(), lo, hi;
            if (c == '{') {
                if (!counted(lo, hi)) return fail();
            } else {
                ++i_;
                lo = c == '+' ? 1 : 0;
                hi = c == '?' ? 1 : -1;
            }
            if (peek() == '?') ++i_;
            auto r = std::make_unique<RxNode>();
            r->kind = RxNode::REP;
            r->lo = lo;
            r->hi = hi;
            r->subs.push_back(std::move(node));
            node = std::move(r);
        }
        return node;
    }
    // plain ASCII digits only (Python's int() also takes signs, spaces and underscores: those go to Python)
    bool number(size_t a, size_t b, int64_t& v) const {
        if (a >= b || b - a > 9) return false;
        v = 0;
        for (size_t k = a; k < b; ++k) {
            if (p_[k] < '0' || p_[k] > '9') return false;
            v = v * 10 + (p_[k] - '0');
        }
        return true;
    }
    bool counted(int32_t& lo, int32_t& hi) {
        size_t j = i_;
        while (j < n_ && p_[j] != '}') ++j;
        if (j >= n_) return false;
        size_t comma = i_ + 1;
        while (comma < j && p_[comma] != ',') ++comma;
        int64_t a, b = -1;
        if (!number(i_ + 1, comma, a)) return false;
        if (comma < j) {
            if (comma + 1 < j && !number(comma + 1, j, b)) return false;
            if (comma + 1 < j && b < a) return false;
        } else {
            b = a;
        }
        if (std::max(a, b) > max_repeat_) return false;
        lo = (int32_t)a;
        hi = (int32_t)b;
        i_ = j + 1;
        return true;
    }
    static std::unique_ptr<RxNode> set(Ranges r) {
        auto n = std::make_unique<RxNode>();
        n->kind = RxNode::SET;
        n->ranges = std::move(r);
        return n;
    }
    std::unique_ptr<RxNode> atom() {
        int32_t c = peek();
        if (c == -1) return fail();
        if (c == '(') {
            ++i_;
            if (peek() == '?') {
                if (i_ + 1 < n_ && p_[i_ + 1] == ':') i_ += 2;
                else return fail();
            }
            auto node = alt();
            if (!ok || peek() != ')') return fail();
            ++i_;
            return node;
        }
        if (c == '[') {
            Ranges r;
            if (!klass(r)) return fail();
            return set(std::move(r));
        }
        if (c == '.') {
            ++i_;
            return set(Ranges{{0, 9}, {11, RX_MAX_CHAR}});
        }
        if (c == '^' || c == '$' || c == '*' || c == '+' || c == '?') return fail();
        if (c == '\\') {
            Ranges r;
            if (!escape(r)) return fail();
            return set(std::move(r));
        }
        ++i_;
        return set(Ranges{{c, c}});
    }
    bool escape(Ranges& out) {
        ++i_;
        int32_t c = peek();
        if (c == -1) return false;
        ++i_;
        switch (c) {
            case 'n': out = {{10, 10}}; return true;
            case 't': out = {{9, 9}}; return true;
            case 'r': out = {{13, 13}}; return true;
            case 'f': out = {{12, 12}}; return true;
            case 'v': out = {{11, 11}}; return true;
            case 'a': out = {{7, 7}}; return true;
            case '0': out = {{0, 0}}; return true;
            default: break;
        }
        const char* perl = "dswDSW";
        for (int k = 0; k < 6; ++k)
            if (c == perl[k]) {
                if (!g_perl_set[k % 3]) return false;
                out = k < 3 ? g_perl[k] : rx_negate(g_perl[k % 3]);
                return true;
            }
        if (c == 'x' || c == 'u' || c == 'U') {
            size_t width = c == 'x' ? 2 : c == 'u' ? 4 : 8, a, b;
            if (peek() == '{') {
                size_t j = i_;
                while (j < n_ && p_[j] != '}') ++j;
                if (j >= n_) return false;
                a = i_ + 1;
                b = j;
                i_ = j + 1;
            } else {
                a = i_;
                b = std::min(i_ + width, n_);
                if (i_ + width > n_) return false;
                i_ += width;
            }
            if (a >= b || b - a > 8) return false;
            int64_t v = 0;
            for (size_t k = a; k < b; ++k) {
                int32_t d = (int32_t)p_[k];
                int32_t x = d >= '0' && d <= '9' ? d - '0' : d >= 'a' && d <= 'f' ? d - 'a' + 10
                            : d >= 'A' && d <= 'F' ? d - 'A' + 10 : -1;
                if (x < 0) return false;
                v = v * 16 + x;
            }
            if (v > RX_MAX_CHAR || (v >= RX_SUR_LO && v <= RX_SUR_HI)) return false;
            out = {{(int32_t)v, (int32_t)v}};
            return true;
        }
        if (c >= 128) return false;  // str.isdigit / isalnum on non-ASCII: Python decides
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return false;
        out = {{c, c}};
        return true;
    }
    bool klass(Ranges& out) {
        ++i_;
        bool neg = peek() == '^';
        if (neg) ++i_;
        Ranges ranges, item;
        bool first = true;
        while (true) {
            int32_t c = peek();
            if (c == -1) return false;
            if (c == ']' && !first) { ++i_; break; }
            if (c == '[') return false;
            if (c == '\\') {
                if (!escape(item)) return false;
            } else {
                ++i_;
                item = {{c, c}};
            }
            first = false;
            if (item.size() == 1 && item[0].first == item[0].second && peek() == '-' && i_ + 1 < n_ &&
                p_[i_ + 1] != ']') {
                ++i_;
                Ranges hi_item;
                if (peek() == '\\') {
                    if (!escape(hi_item)) return false;
                } else {
                    hi_item = {{(int32_t)p_[i_], (int32_t)p_[i_]}};
                    ++i_;
                }
                if (hi_item.size() != 1 || hi_item[0].first != hi_item[0].second) return false;
                if (hi_item[0].first < item[0].first) return false;
                ranges.emplace_back(item[0].first, hi_item[0].first);
            } else {
                ranges.insert(ranges.end(), item.begin(), item.end());
            }
        }
        rx_normalize(ranges);
        out = neg ? rx_negate(ranges) : ranges;
        return true;
    }
};

int rx_utf8(int32_t cp, uint8_t* o) {
    if (cp < 0x80) { o[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { o[0] = (uint8_t)(0xC0 | (cp >> 6)); o[1] = (uint8_t)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12)); o[1] = (uint8_t)(0x80 | ((cp >> 6) & 63)); o[2] = (uint8_t)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18)); o[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)); o[3] = (uint8_t)(0x80 | (cp & 63));
    return 4;
}

// regex.utf8_sequences
using ByteSeq = std::vector<std::pair<uint8_t, uint8_t>>;
void rx_utf8_sequences(int32_t lo, int32_t hi, std::vector<ByteSeq>& out) {
    if (lo > hi) return;
    if (lo <= RX_SUR_HI && hi >= RX_SUR_LO) {
        rx_utf8_sequences(lo, RX_SUR_LO - 1, out);
        rx_utf8_sequences(RX_SUR_HI + 1, hi, out);
        return;
    }
    for (int32_t m : {0x7F, 0x7FF, 0xFFFF})
        if (lo <= m && m < hi) {
            rx_utf8_sequences(lo, m, out);
            rx_utf8_sequences(m + 1, hi, out);
            return;
        }
    if (hi <= 0x7F) {
        out.push_back(ByteSeq{{(uint8_t)lo, (uint8_t)hi}});
        return;
    }
    uint8_t a[4], b[4];
    int n = rx_utf8(lo, a);
    for (int i = 1; i < n; ++i) {
        int32_t mask = (1 << (6 * i)) - 1;
        if ((lo & ~mask) != (hi & ~mask)) {
            if (lo & mask) {
                rx_utf8_sequences(lo, lo | mask, out);
                rx_utf8_sequences((lo | mask) + 1, hi, out);
                return;
            }
            if ((hi & mask) != mask) {
                rx_utf8_sequences(lo, (hi & ~mask) - 1, out);
                rx_utf8_sequences(hi & ~mask, hi, out);
                return;
            }
        }
    }
    rx_utf8(hi, b);
    ByteSeq s;
    for (int i = 0; i < n; ++i) s.emplace_back(a[i], b[i]);
    out.push_back(std::move(s));
}

// regex._NFA
struct RxNFA {
    int32_t n = 0;
    std::vector<int32_t> eps_src, eps_tgt, e_src, e_lo, e_hi, e_tgt;
    int64_t limit;  // bound on NFA states (a guard: counted repetitions multiply the pattern)
    bool over = false;
    explicit RxNFA(int64_t lim) : limit(lim) {}
    int32_t state() {
        if (n >= limit) over = true;
        return n++;
    }
    void eps(int32_t a, int32_t b) { eps_src.push_back(a); eps_tgt.push_back(b); }
    void build(const RxNode& node, int32_t start, int32_t end) {
        if (over) return;
        switch (node.kind) {
            case RxNode::SET: {
                std::vector<ByteSeq> seqs;
                for (auto& r : node.ranges) rx_utf8_sequences(r.first, r.second, seqs);
                for (auto& seq : seqs) {
                    int32_t cur = start;
                    for (size_t k = 0; k < seq.size(); ++k) {
                        int32_t nxt = k + 1 == seq.size() ? end : state();
                        e_src.push_back(cur); e_lo.push_back(seq[k].first); e_hi.push_back(seq[k].second);
                        e_tgt.push_back(nxt);
                        cur = nxt;
                    }
                }
                break;
            }
            case RxNode::CAT: {
                int32_t cur = start;
                for (size_t k = 0; k < node.subs.size(); ++k) {
                    int32_t nxt = k + 1 == node.subs.size() ? end : state();
                    build(*node.subs[k], cur, nxt);
                    cur = nxt;
                }
                if (node.subs.empty()) eps(start, end);
                break;
            }
            case RxNode::ALT:
                for (auto& s : node.subs) build(*s, start, end);
                break;
            case RxNode::REP: {
                const RxNode& sub = *node.subs[0];
                int32_t cur = start;
                for (int32_t k = 0; k < node.lo && !over; ++k) {
                    int32_t nxt = state();
                    build(sub, cur, nxt);
                    cur = nxt;
                }
                if (node.hi < 0) {
                    int32_t loop = state();
                    eps(cur, loop);
                    int32_t inner = state();
                    build(sub, loop, inner);
                    eps(inner, loop);
                    eps(loop, end);
                } else {
                    for (int32_t k = 0; k < node.hi - node.lo && !over; ++k) {
                        int32_t nxt = state();
                        eps(cur, end);
                        build(sub, cur, nxt);
                        cur = nxt;
                    }
                    eps(cur, end);
                }
                break;
            }
        }
    }
};

// ------------------------------------------------------------------------------------------------ Python types
struct Buf {
    Py_buffer b{};
    bool ok = false;
    ~Buf() { if (ok) PyBuffer_Release(&b); }
};

bool get_buf(PyObject* o, Buf& out, int flags = PyBUF_SIMPLE) {
    if (PyObject_GetBuffer(o, &out.b, flags) < 0) return false;
    out.ok = true;
    return true;
}

template <class T>
bool to_vec(PyObject* o, std::vector<T>& out, const char* what) {
    Buf b;
    if (!get_buf(o, b)) return false;
    if (b.b.len % (Py_ssize_t)sizeof(T)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a multiple of %zu", what, b.b.len, sizeof(T));
        return false;
    }
    out.resize((size_t)b.b.len / sizeof(T));
    if (b.b.len) std::memcpy(out.data(), b.b.buf, (size_t)b.b.len);
    return true;
}

#define ZF_READY(ptr, ret)                                                                   \
    do {                                                                                     \
        if (!(ptr)) {                                                                        \
            PyErr_SetString(PyExc_RuntimeError, "_zfcore object used before __init__");      \
            return ret;                                                                      \
        }                                                                                    \
    } while (0)

typedef struct {
    PyObject_HEAD
    std::shared_ptr<VocabData>* v;
} VocabObject;

typedef struct {
    PyObject_HEAD
    std::shared_ptr<CoreData>* g;
} CoreObject;

typedef struct {
    PyObject_HEAD
    Recognizer* r;
} RecObject;

// ---- Vocab(pool: bytes, offsets: int64 buffer (n+1), ids: int64 buffer (n), size: int)
static int Vocab_init(VocabObject* self, PyObject* args, PyObject*) {
    PyObject *pool, *offs, *ids;
    long long size;
    if (!PyArg_ParseTuple(args, "OOOL", &pool, &offs, &ids, &size)) return -1;
    auto v = std::make_shared<VocabData>();
    {
        Buf b;
        if (!get_buf(pool, b)) return -1;
        v->pool.assign(static_cast<const char*>(b.b.buf), (size_t)b.b.len);
    }
    if (!to_vec(offs, v->off, "offsets") || !to_vec(ids, v->ids, "ids")) return -1;
    v->n = (int64_t)v->ids.size();
    if ((int64_t)v->off.size() != v->n + 1 || v->off.back() != (int64_t)v->pool.size()) {
        PyErr_SetString(PyExc_ValueError, "Vocab: offsets do not match the pool and ids");
        return -1;
    }
    v->size = size;
    v->words = (size_t)((v->n + 63) / 64);
    v->rank_of_id.assign((size_t)std::max<int64_t>(size, 0), -1);
    for (int64_t r = 0; r < v->n; ++r)
        if (v->ids[r] >= 0 && v->ids[r] < size) v->rank_of_id[(size_t)v->ids[r]] = (int32_t)r;
    for (int64_t r = 0; r < v->n; ++r) v->max_len = std::max(v->max_len, v->len(r));
    v->lcp.assign((size_t)v->n, 0);
    for (int64_t r = 1; r < v->n; ++r) {
        const uint8_t *a = v->tok(r - 1), *b = v->tok(r);
        int64_t m = std::min(v->len(r - 1), v->len(r)), k = 0;
        while (k < m && a[k] == b[k]) ++k;
        v->lcp[r] = (int32_t)k;
    }
    for (int b = 0; b < 256; ++b) { v->lo[b] = 0; v->hi[b] = 0; }
    // first bytes are non-decreasing in rank order: bucket b is [lo, hi)
    int64_t r = 0;
    for (int b = 0; b < 256; ++b) {
        while (r < v->n && v->len(r) > 0 && v->tok(r)[0] < b) ++r;
        v->lo[b] = (int32_t)r;
        int64_t q = r;
        while (q < v->n && v->len(q) > 0 && v->tok(q)[0] == b) ++q;
        v->hi[b] = (int32_t)q;
        r = q;
    }
    delete self->v;
    self->v = new std::shared_ptr<VocabData>(std::move(v));
    return 0;
}

static void Vocab_dealloc(VocabObject* self) {
    delete self->v;
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// pin_walks(): the shared eager walks made so far survive forget_walks(); returns how many are pinned
static PyObject* Vocab_pin_walks(VocabObject* self, PyObject*) {
    ZF_READY(self->v, nullptr);
    VocabData& v = **self->v;
    for (auto& kv : v.eager_shared) v.eager_pinned.insert(kv.first);
    for (auto& kv : v.loop_shared) v.loop_pinned.insert(kv.first);
    return PyLong_FromSize_t(v.eager_pinned.size());
}

// forget_walks(): drop the shared walks that are not pinned (grammars built before keep theirs); returns how many
static PyObject* Vocab_forget_walks(VocabObject* self, PyObject*) {
    ZF_READY(self->v, nullptr);
    VocabData& v = **self->v;
    size_t n = 0;
    for (auto it = v.eager_shared.begin(); it != v.eager_shared.end();) {
        if (v.eager_pinned.count(it->first)) { ++it; continue; }
        it = v.eager_shared.erase(it);
        ++n;
    }
    for (auto it = v.loop_shared.begin(); it != v.loop_shared.end();) {
        if (v.loop_pinned.count(it->first)) ++it;
        else it = v.loop_shared.erase(it);
    }
    return PyLong_FromSize_t(n);
}

static PyObject* Vocab_n_loop_tables(VocabObject* self, PyObject*) {
    ZF_READY(self->v, nullptr);
    return PyLong_FromSize_t((*self->v)->loop_shared.size());
}

static PyObject* Vocab_n_walks(VocabObject* self, PyObject*) {
    ZF_READY(self->v, nullptr);
    return PyLong_FromSize_t((*self->v)->eager_shared.size());
}

static PyMethodDef Vocab_methods[] = {
    {"pin_walks", (PyCFunction)Vocab_pin_walks, METH_NOARGS, "keep the shared eager walks made so far"},
    {"forget_walks", (PyCFunction)Vocab_forget_walks, METH_NOARGS, "drop the shared eager walks not pinned"},
    {"n_walks", (PyCFunction)Vocab_n_walks, METH_NOARGS, "shared eager walks held"},
    {"n_loop_tables", (PyCFunction)Vocab_n_loop_tables, METH_NOARGS, "loop-token tables held (free-string shortcut)"},
    {nullptr, nullptr, 0, nullptr}};

static PyTypeObject VocabType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- Core(vocab, kind, value, lhs, is_last, adv_off, adv, adv_done, pred_off, pred_dp, pred_st, lit_off, lit_len,
//           lit_pool, start, n_nt, regexes: list[(trans int32 bytes, accepting uint8 bytes)],
//           eager: bool, min_tokens, max_states, max_total)
static int Core_init(CoreObject* self, PyObject* args, PyObject*) {
    PyObject *vocab, *kind, *value, *lhs, *is_last, *adv_off, *adv, *adv_done, *pred_off, *pred_dp, *pred_st;
    PyObject *lit_off, *lit_len, *lit_pool, *regexes;
    int start, n_nt, eager;
    long long min_tokens, max_states, max_total;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOOOOOOiiO!pLLL", &VocabType, &vocab, &kind, &value, &lhs, &is_last, &adv_off,
                          &adv, &adv_done, &pred_off, &pred_dp, &pred_st, &lit_off, &lit_len, &lit_pool, &start, &n_nt,
                          &PyList_Type, &regexes, &eager, &min_tokens, &max_states, &max_total))
        return -1;
    auto g = std::make_shared<CoreData>();
    if (!to_vec(kind, g->kind, "kind") || !to_vec(value, g->value, "value") || !to_vec(lhs, g->lhs, "lhs") ||
        !to_vec(is_last, g->is_last, "is_last") || !to_vec(adv_off, g->adv_off, "adv_off") ||
        !to_vec(adv, g->adv, "adv") || !to_vec(adv_done, g->adv_done, "adv_done") ||
        !to_vec(pred_off, g->pred_off, "pred_off") || !to_vec(pred_dp, g->pred_dp, "pred_dp") ||
        !to_vec(pred_st, g->pred_st, "pred_st") || !to_vec(lit_off, g->lit_off, "lit_off") ||
        !to_vec(lit_len, g->lit_len, "lit_len"))
        return -1;
    {
        Buf b;
        if (!get_buf(lit_pool, b)) return -1;
        g->lit_pool.assign(static_cast<const char*>(b.b.buf), (size_t)b.b.len);
    }
    size_t n = g->kind.size();
    if (g->value.size() != n || g->lhs.size() != n || g->is_last.size() != n || g->adv_off.size() != n + 1 ||
        g->adv_done.size() != n || g->lit_off.size() != n || g->lit_len.size() != n ||
        (int)g->pred_off.size() != n_nt + 1 || start < 0 || start >= n_nt) {
        PyErr_SetString(PyExc_ValueError, "Core: inconsistent grammar tables");
        return -1;
    }
    g->start = start;
    g->n_nt = n_nt;
    for (int32_t st : g->pred_st) g->pred_st_zero = g->pred_st_zero && st == 0;
    for (int32_t dp : g->pred_dp)
        if (dp < 0 || (size_t)dp >= n) {
            PyErr_SetString(PyExc_ValueError, "Core: predicted position out of range");
            return -1;
        }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(regexes); ++i) {
        PyObject* t = PyList_GET_ITEM(regexes, i);
        PyObject *tr, *ac;
        if (!PyArg_ParseTuple(t, "OO", &tr, &ac)) return -1;
        DFAData d;
        if (!to_vec(tr, d.trans, "trans") || !to_vec(ac, d.accepting, "accepting")) return -1;
        d.n_states = (int32_t)d.accepting.size();
        if (d.trans.size() != (size_t)d.n_states * 256) {
            PyErr_SetString(PyExc_ValueError, "Core: DFA table size");
            return -1;
        }
        d.live_out.assign(d.n_states, 0);
        d.first.assign((size_t)d.n_states * 4, 0);
        for (int32_t s = 0; s < d.n_states; ++s)
            for (int b = 0; b < 256; ++b)
                if (d.trans[(size_t)s * 256 + b] >= 0) {
                    d.live_out[s] = 1;
                    d.first[(size_t)s * 4 + (b >> 6)] |= 1ULL << (b & 63);
                }
        g->dfas.push_back(std::move(d));
    }
    for (size_t dp = 0; dp < n; ++dp) {  // bounds: a bad table must not crash the process
        if (g->kind[dp] == K_RE && (g->value[dp] < 0 || (size_t)g->value[dp] >= g->dfas.size())) {
            PyErr_SetString(PyExc_ValueError, "Core: regex id out of range");
            return -1;
        }
        if (g->kind[dp] == K_NT && (g->value[dp] < 0 || g->value[dp] >= n_nt)) {
            PyErr_SetString(PyExc_ValueError, "Core: nonterminal id out of range");
            return -1;
        }
        if (g->kind[dp] == K_LIT && (g->lit_len[dp] <= 0 || (size_t)(g->lit_off[dp] + g->lit_len[dp]) > g->lit_pool.size())) {
            PyErr_SetString(PyExc_ValueError, "Core: literal out of range");
            return -1;
        }
    }
    ZF_READY(((VocabObject*)vocab)->v, -1);
    g->vocab = *((VocabObject*)vocab)->v;
    g->eager_min_tokens = min_tokens;
    if (eager) {
        plan_eager(*g, max_states, max_total);
        g->eager_planned = true;
    }
    delete self->g;
    self->g = new std::shared_ptr<CoreData>(std::move(g));
    return 0;
}

static void Core_dealloc(CoreObject* self) {
    delete self->g;
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* Core_n_eager(CoreObject* self, PyObject*) {
    ZF_READY(self->g, nullptr);
    return PyLong_FromSize_t((*self->g)->eager.size());
}

static PyMethodDef Core_methods[] = {
    {"n_eager", (PyCFunction)Core_n_eager, METH_NOARGS, "number of cached (regex, state) entries"},
    {nullptr, nullptr, 0, nullptr}};

static PyTypeObject CoreType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- Recognizer(core, compaction: bool, stop_at_first_accept: bool)
static int Rec_init(RecObject* self, PyObject* args, PyObject*) {
    PyObject* core;
    int compaction, stop_first;
    if (!PyArg_ParseTuple(args, "O!pp", &CoreType, &core, &compaction, &stop_first)) return -1;
    ZF_READY(((CoreObject*)core)->g, -1);
    delete self->r;
    self->r = new Recognizer(*((CoreObject*)core)->g, compaction != 0, stop_first != 0);
    return 0;
}

static void Rec_dealloc(RecObject* self) {
    delete self->r;
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* Rec_reset(RecObject* self, PyObject*) {
    ZF_READY(self->r, nullptr);
    self->r->reset();
    Py_RETURN_NONE;
}

static PyObject* Rec_accept_bytes(RecObject* self, PyObject* arg) {
    ZF_READY(self->r, nullptr);
    Buf b;
    if (!get_buf(arg, b)) return nullptr;
    bool ok = self->r->accept_bytes(static_cast<const uint8_t*>(b.b.buf), (size_t)b.b.len);
    return PyBool_FromLong(ok);
}

static PyObject* Rec_state_key(RecObject* self, PyObject*) {
    ZF_READY(self->r, nullptr);
    Recognizer& r = *self->r;
    std::vector<int32_t> k(r.cols.size());
    for (size_t i = 0; i < r.cols.size(); ++i) k[i] = r.col_key(*r.cols[i]);
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(k.data()), (Py_ssize_t)(k.size() * sizeof(int32_t)));
}

static PyObject* Rec_n_items(RecObject* self, PyObject*) {
    ZF_READY(self->r, nullptr);
    return PyLong_FromLongLong(self->r->n_items());
}
static PyObject* Rec_can_accept_more(RecObject* self, PyObject*) {
    ZF_READY(self->r, nullptr);
    return PyBool_FromLong(!self->r->cols.back()->scan.empty());
}

static PyObject* Rec_first_bytes(RecObject* self, PyObject*) {
    ZF_READY(self->r, nullptr);
    uint64_t fb[4];
    self->r->first_bytes(fb);
    PyObject* s = PySet_New(nullptr);
    if (!s) return nullptr;
    for (int b = 0; b < 256; ++b)
        if ((fb[b >> 6] >> (b & 63)) & 1) {
            PyObject* x = PyLong_FromLong(b);
            if (!x || PySet_Add(s, x) < 0) { Py_XDECREF(x); Py_DECREF(s); return nullptr; }
            Py_DECREF(x);
        }
    return s;
}

// compute_mask(out: writable uint8/bool buffer over token ids, use_eager, use_rpc)
//   -> (allowed count, candidates, simulated, eager_used); `out` must be zeroed by the caller
static PyObject* Rec_compute_mask(RecObject* self, PyObject* args) {
    ZF_READY(self->r, nullptr);
    PyObject* out;
    int use_eager, use_rpc;
    if (!PyArg_ParseTuple(args, "Opp", &out, &use_eager, &use_rpc)) return nullptr;
    Buf b;
    if (!get_buf(out, b, PyBUF_WRITABLE)) return nullptr;
    Recognizer& r = *self->r;
    const VocabData& v = *r.g_->vocab;
    if (b.b.len < v.size) {
        PyErr_SetString(PyExc_ValueError, "compute_mask: the output buffer is smaller than the vocabulary");
        return nullptr;
    }
    std::vector<uint64_t> allowed;
    int64_t cands = 0, sim = 0, count = 0;
    bool eager_used = false;
    r.allowed_ranks(use_eager != 0, use_rpc != 0, allowed, cands, sim, eager_used);
    uint8_t* o = static_cast<uint8_t*>(b.b.buf);
    int64_t nbits = 0;
    for (uint64_t x : allowed) nbits += __builtin_popcountll(x);
    if (nbits * 8 < v.n) {  // sparse: scatter the set ranks
        for (size_t w = 0; w < allowed.size(); ++w) {
            uint64_t x = allowed[w];
            while (x) {
                int64_t rank = (int64_t)(w * 64 + __builtin_ctzll(x));
                x &= x - 1;
                if (rank >= v.n) continue;
                int64_t id = v.ids[rank];
                if (id >= 0 && id < v.size && !o[id]) { o[id] = 1; ++count; }
            }
        }
    } else {  // dense: in token-id order (sequential writes; the rank bitset stays in cache)
        const int32_t* rk = v.rank_of_id.data();
        const uint64_t* al = allowed.data();
        for (int64_t id = 0; id < v.size; ++id) {
            int32_t rank = rk[id];
            uint8_t bit = rank >= 0 ? (uint8_t)((al[rank >> 6] >> (rank & 63)) & 1) : 0;
            count += bit & (uint8_t)!o[id];
            o[id] |= bit;
        }
    }
    return Py_BuildValue("LLLO", (long long)count, (long long)cands, (long long)sim, eager_used ? Py_True : Py_False);
}

static PyObject* Rec_get_finished(RecObject* self, void*) {
    ZF_READY(self->r, nullptr); return PyBool_FromLong(self->r->finished); }
static PyObject* Rec_get_accepting(RecObject* self, void*) {
    ZF_READY(self->r, nullptr); return PyBool_FromLong(self->r->accepting()); }
static PyObject* Rec_get_stats_before(RecObject* self, void*) {
    ZF_READY(self->r, nullptr);
    return Py_BuildValue("(LL)", (long long)self->r->sb_sets, (long long)self->r->sb_items);
}
static PyObject* Rec_get_stats_after(RecObject* self, void*) {
    ZF_READY(self->r, nullptr);
    return Py_BuildValue("(LL)", (long long)self->r->sa_sets, (long long)self->r->sa_items);
}
static PyObject* Rec_get_n_sets(RecObject* self, void*) {
    ZF_READY(self->r, nullptr); return PyLong_FromSize_t(self->r->cols.size()); }

static PyMethodDef Rec_methods[] = {
    {"reset", (PyCFunction)Rec_reset, METH_NOARGS, "back to the first Earley set"},
    {"accept_bytes", (PyCFunction)Rec_accept_bytes, METH_O, "advance by the bytes of one token"},
    {"state_key", (PyCFunction)Rec_state_key, METH_NOARGS, "the state cache's key (interned Earley sets)"},
    {"n_items", (PyCFunction)Rec_n_items, METH_NOARGS, "live items in all retained sets"},
    {"can_accept_more", (PyCFunction)Rec_can_accept_more, METH_NOARGS, "some terminal may scan a byte"},
    {"first_bytes", (PyCFunction)Rec_first_bytes, METH_NOARGS, "bytes some post-dot terminal accepts next"},
    {"compute_mask", (PyCFunction)Rec_compute_mask, METH_VARARGS, "write the allowed token ids into a bool buffer"},
    {nullptr, nullptr, 0, nullptr}};

static PyGetSetDef Rec_getset[] = {
    {"finished", (getter)Rec_get_finished, nullptr, "no byte may follow (kbnf's or our end policy)", nullptr},
    {"accepting", (getter)Rec_get_accepting, nullptr, "the text so far is a sentence of the grammar", nullptr},
    {"stats_before", (getter)Rec_get_stats_before, nullptr, "(sets, items) before the last compaction", nullptr},
    {"stats_after", (getter)Rec_get_stats_after, nullptr, "(sets, items) after the last token", nullptr},
    {"n_sets", (getter)Rec_get_n_sets, nullptr, "retained Earley sets", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyTypeObject RecType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- module functions: regex automata (regex.py calls them when the extension is built)
static PyObject* dfa_result(const CDFA& d) {
    std::vector<int32_t> trans;
    expand(d, trans);
    const std::vector<uint8_t>& accept = d.acc;
    return Py_BuildValue("(y#y#)", reinterpret_cast<const char*>(trans.data()),
                         (Py_ssize_t)(trans.size() * sizeof(int32_t)), reinterpret_cast<const char*>(accept.data()),
                         (Py_ssize_t)accept.size());
}

static bool dfa_args(PyObject* t, PyObject* a, std::vector<int32_t>& trans, std::vector<uint8_t>& accept) {
    if (!to_vec(t, trans, "trans") || !to_vec(a, accept, "accept")) return false;
    if (trans.size() != accept.size() * 256) {
        PyErr_SetString(PyExc_ValueError, "DFA: trans must hold 256 int32 per state");
        return false;
    }
    for (int32_t x : trans)
        if (x < -1 || x >= (int32_t)accept.size()) {
            PyErr_SetString(PyExc_ValueError, "DFA: transition out of range");
            return false;
        }
    return true;
}

// determinize(n_nfa, eps_src, eps_tgt, edge_src, edge_lo, edge_hi, edge_tgt, start, final, max_states)
//   int32 buffers -> (trans int32 bytes, accept uint8 bytes) | None past max_states
static PyObject* py_determinize(PyObject*, PyObject* args) {
    int n_nfa, start, final_;
    long long max_states;
    PyObject *es, *et, *s, *lo, *hi, *t;
    if (!PyArg_ParseTuple(args, "iOOOOOOiiL", &n_nfa, &es, &et, &s, &lo, &hi, &t, &start, &final_, &max_states))
        return nullptr;
    std::vector<int32_t> eps_src, eps_tgt, e_src, e_lo, e_hi, e_tgt;
    if (!to_vec(es, eps_src, "eps_src") || !to_vec(et, eps_tgt, "eps_tgt") || !to_vec(s, e_src, "edge_src") ||
        !to_vec(lo, e_lo, "edge_lo") || !to_vec(hi, e_hi, "edge_hi") || !to_vec(t, e_tgt, "edge_tgt"))
        return nullptr;
    bool ok = n_nfa > 0 && start >= 0 && start < n_nfa && final_ >= 0 && final_ < n_nfa &&
              eps_src.size() == eps_tgt.size() && e_src.size() == e_lo.size() && e_src.size() == e_hi.size() &&
              e_src.size() == e_tgt.size();
    for (size_t i = 0; ok && i < eps_src.size(); ++i)
        ok = eps_src[i] >= 0 && eps_src[i] < n_nfa && eps_tgt[i] >= 0 && eps_tgt[i] < n_nfa;
    for (size_t i = 0; ok && i < e_src.size(); ++i)
        ok = e_src[i] >= 0 && e_src[i] < n_nfa && e_tgt[i] >= 0 && e_tgt[i] < n_nfa && e_lo[i] >= 0 &&
             e_lo[i] <= e_hi[i] && e_hi[i] <= 255;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "determinize: inconsistent NFA");
        return nullptr;
    }
    CDFA d;
    if (!determinize(n_nfa, eps_src, eps_tgt, e_src, e_lo, e_hi, e_tgt, start, final_, max_states, d)) Py_RETURN_NONE;
    return dfa_result(d);
}

// trim_minimize(trans, accept) -> (trans, accept) | None when the start state cannot reach a match
static PyObject* py_trim_minimize(PyObject*, PyObject* args) {
    PyObject *t, *a;
    if (!PyArg_ParseTuple(args, "OO", &t, &a)) return nullptr;
    std::vector<int32_t> trans;
    std::vector<uint8_t> accept;
    if (!dfa_args(t, a, trans, accept)) return nullptr;
    CDFA d = compress(trans, accept);
    if (!trim(d)) Py_RETURN_NONE;
    minimize(d);
    return dfa_result(d);
}

// product(trans_a, accept_a, trans_b, accept_b, difference: bool, max_states) -> (trans, accept) | None past max
static PyObject* py_product(PyObject*, PyObject* args) {
    PyObject *ta, *aa, *tb, *ab;
    int difference;
    long long max_states;
    if (!PyArg_ParseTuple(args, "OOOOpL", &ta, &aa, &tb, &ab, &difference, &max_states)) return nullptr;
    std::vector<int32_t> t1, t2, trans;
    std::vector<uint8_t> a1, a2, accept;
    if (!dfa_args(ta, aa, t1, a1) || !dfa_args(tb, ab, t2, a2)) return nullptr;
    if (a1.empty() || a2.empty()) {
        PyErr_SetString(PyExc_ValueError, "product: empty DFA");
        return nullptr;
    }
    CDFA d;
    if (!product(compress(t1, a1), compress(t2, a2), difference != 0, max_states, d)) Py_RETURN_NONE;
    return dfa_result(d);
}

// set_perl_class(index 0..2 for \\d \\s \\w, ranges: int32 buffer of (lo, hi) pairs)
static PyObject* py_set_perl_class(PyObject*, PyObject* args) {
    int k;
    PyObject* buf;
    if (!PyArg_ParseTuple(args, "iO", &k, &buf)) return nullptr;
    std::vector<int32_t> v;
    if (!to_vec(buf, v, "ranges")) return nullptr;
    if (k < 0 || k > 2 || v.size() % 2) {
        PyErr_SetString(PyExc_ValueError, "set_perl_class: index 0..2 and (lo, hi) pairs");
        return nullptr;
    }
    g_perl[k].clear();
    for (size_t i = 0; i < v.size(); i += 2) g_perl[k].emplace_back(v[i], v[i + 1]);
    g_perl_set[k] = true;
    Py_RETURN_NONE;
}

// compile_pattern(pattern: str, max_repeat, max_states) -> (trans, accept) | 1 (let Python parse: an error or a
// corner the port leaves to Python) | 2 (DFA larger than max_states) | 3 (matches nothing)
static PyObject* py_compile_pattern(PyObject*, PyObject* args) {
    PyObject* pat;
    long long max_repeat, max_states;
    if (!PyArg_ParseTuple(args, "ULL", &pat, &max_repeat, &max_states)) return nullptr;
    Py_ssize_t n = PyUnicode_GetLength(pat);
    Py_UCS4* buf = PyUnicode_AsUCS4Copy(pat);
    if (!buf) return nullptr;
    std::unique_ptr<Py_UCS4, void (*)(void*)> guard(buf, PyMem_Free);
    RxParser parser(buf, (size_t)n, max_repeat);
    std::unique_ptr<RxNode> ast = parser.parse();
    if (!parser.ok || !ast) return PyLong_FromLong(1);
    RxNFA nfa(int64_t(1) << 24);
    int32_t start = nfa.state(), final_ = nfa.state();
    nfa.build(*ast, start, final_);
    if (nfa.over) return PyLong_FromLong(1);
    CDFA d;
    if (!determinize(nfa.n, nfa.eps_src, nfa.eps_tgt, nfa.e_src, nfa.e_lo, nfa.e_hi, nfa.e_tgt, start, final_,
                     max_states, d))
        return PyLong_FromLong(2);
    if (!trim(d)) return PyLong_FromLong(3);
    minimize(d);
    return dfa_result(d);
}

static PyMethodDef module_methods[] = {
    {"set_perl_class", (PyCFunction)py_set_perl_class, METH_VARARGS, "the ranges of \\d, \\s or \\w (regex.perl_class)"},
    {"compile_pattern", (PyCFunction)py_compile_pattern, METH_VARARGS, "regex.compile_regex for a plain pattern"},
    {"determinize", (PyCFunction)py_determinize, METH_VARARGS, "regex._subset_construction over a flat NFA"},
    {"trim_minimize", (PyCFunction)py_trim_minimize, METH_VARARGS, "regex._trim then regex._minimize"},
    {"product", (PyCFunction)py_product, METH_VARARGS, "regex._product / regex._difference"},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_zfcore",
                                       "ZapFormat's compiled core: Earley recogniser, token masks and regex automata (C++).",
                                       -1, module_methods};

}  // namespace

PyMODINIT_FUNC PyInit__zfcore(void) {
    VocabType.tp_name = "_zfcore.Vocab";
    VocabType.tp_basicsize = sizeof(VocabObject);
    VocabType.tp_flags = Py_TPFLAGS_DEFAULT;
    VocabType.tp_new = PyType_GenericNew;
    VocabType.tp_init = (initproc)Vocab_init;
    VocabType.tp_dealloc = (destructor)Vocab_dealloc;
    VocabType.tp_methods = Vocab_methods;
    VocabType.tp_doc = "token bytes in rank order";

    CoreType.tp_name = "_zfcore.Core";
    CoreType.tp_basicsize = sizeof(CoreObject);
    CoreType.tp_flags = Py_TPFLAGS_DEFAULT;
    CoreType.tp_new = PyType_GenericNew;
    CoreType.tp_init = (initproc)Core_init;
    CoreType.tp_dealloc = (destructor)Core_dealloc;
    CoreType.tp_methods = Core_methods;
    CoreType.tp_doc = "a grammar compiled against one vocabulary";

    RecType.tp_name = "_zfcore.Recognizer";
    RecType.tp_basicsize = sizeof(RecObject);
    RecType.tp_flags = Py_TPFLAGS_DEFAULT;
    RecType.tp_new = PyType_GenericNew;
    RecType.tp_init = (initproc)Rec_init;
    RecType.tp_dealloc = (destructor)Rec_dealloc;
    RecType.tp_methods = Rec_methods;
    RecType.tp_getset = Rec_getset;
    RecType.tp_doc = "the Earley-set stack of one constrained generation";

    if (PyType_Ready(&VocabType) < 0 || PyType_Ready(&CoreType) < 0 || PyType_Ready(&RecType) < 0) return nullptr;
    PyObject* m = PyModule_Create(&moduledef);
    if (!m) return nullptr;
    Py_INCREF(&VocabType);
    Py_INCREF(&CoreType);
    Py_INCREF(&RecType);
    if (PyModule_AddObject(m, "Vocab", (PyObject*)&VocabType) < 0 || PyModule_AddObject(m, "Core", (PyObject*)&CoreType) < 0 ||
        PyModule_AddObject(m, "Recognizer", (PyObject*)&RecType) < 0)
        return nullptr;
    return m;
}
