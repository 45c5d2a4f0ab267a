/* pickle.c - the plain-data pickle reader (pickle.h).
 *
 * Assumptions and choices:
 *  - One forward pass over the input, an explicit value stack and mark stack, no
 *    recursion: a deeply nested input cannot exhaust the C stack.
 *  - Every length field is checked against the bytes left before it is used, and no
 *    allocation is sized by a length field: strings stay in the input. So memory
 *    grows with the number of opcodes only (pickle.h states the bound).
 *  - Containers are singly linked chains of entries (first/last kept), so APPENDS
 *    and SETITEMS on a container that is shared through the memo are O(items) and
 *    every holder of the reference sees the items, as in Python.
 *  - The memo: keys are dense from 0 in what Python writes (MEMOIZE takes len(memo)),
 *    arbitrary in hostile input. Keys below the dense length live in a plain array
 *    that grows only by appending the next key (so it is never larger than the number
 *    of PUT opcodes read); any other key goes to an open-addressing hash. A GET of a
 *    key below the dense length reads the array only, so a hash entry left behind
 *    when the array grew over its key is never seen again.
 *  - Refused opcodes name themselves and their offset; the first error wins.
 */
#include "core/io/pickle.h"

#include "core/base/grow.h"

#include <stdio.h>
#include <string.h>

#define END32 UINT32_MAX

typedef struct memo_cell {
    uint32_t key; /* key + 1; 0: empty */
    remat_pk_ref value;
} memo_cell;

typedef struct parser {
    remat_pk_doc *doc;
    const char *origin;
    remat_error *err;
    remat_pk_ref *stack;
    uint32_t sp, cap_stack;
    uint32_t *marks;
    uint32_t n_marks, cap_marks;
    memo_cell *memo;
    uint32_t n_memo, cap_memo; /* hash: cells used, cap a power of two */
    remat_pk_ref *dense;
    uint32_t n_dense, cap_dense;
    uint32_t n_keys;           /* distinct keys (MEMOIZE's next key: len(memo)) */
    /* the opcode being read: its byte, its offset, the position after what is read so far */
    const uint8_t *data;
    size_t size, pos, off;
    uint8_t op;
} parser;

/* ---- opcode names ----------------------------------------------------------- */

static const char *op_name(uint8_t op) {
    switch (op) {
    case 0x80: return "PROTO";
    case 0x95: return "FRAME";
    case '.': return "STOP";
    case '}': return "EMPTY_DICT";
    case ']': return "EMPTY_LIST";
    case ')': return "EMPTY_TUPLE";
    case '(': return "MARK";
    case 'd': return "DICT";
    case 'l': return "LIST";
    case 't': return "TUPLE";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 'a': return "APPEND";
    case 'e': return "APPENDS";
    case 's': return "SETITEM";
    case 'u': return "SETITEMS";
    case 'N': return "NONE";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'M': return "BININT2";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 'G': return "BINFLOAT";
    case 0x8c: return "SHORT_BINUNICODE";
    case 'X': return "BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 'C': return "SHORT_BINBYTES";
    case 'B': return "BINBYTES";
    case 0x8e: return "BINBYTES8";
    case 0x96: return "BYTEARRAY8";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 0x94: return "MEMOIZE";
    case 'h': return "BINGET";
    case 'j': return "LONG_BINGET";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'p': return "PUT";
    case 'g': return "GET";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    default: return NULL;
    }
}

static remat_status fail(parser *p, remat_status st, size_t off, uint8_t op, const char *what) {
    const char *name = op_name(op);
    if (name)
        return remat_error_set(p->err, st, "%s: pickle: opcode %s (0x%02x) at offset %zu: %s", p->origin, name, op, off,
                               what);
    return remat_error_set(p->err, st, "%s: pickle: byte 0x%02x at offset %zu: %s", p->origin, op, off, what);
}

/* ---- growth --------------------------------------------------------------------- */

/* Grows *arr (elem bytes each, a 32-bit count: core/base/grow.h) to hold at least need
 * elements: 1, or 0 with err filled. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem, remat_error *err) {
    if (need > UINT32_MAX - 1) {
        remat_error_set(err, REMAT_ERR_NOMEM, "pickle: more than 2^32 values");
        return 0;
    }
    int64_t c = *cap;
    if (remat_grow(arr, &c, need, elem, 64, UINT32_MAX - 1, err)) return 0;
    *cap = (uint32_t)c;
    return 1;
}

static remat_pk_ref new_node(parser *p, remat_pk_type t) {
    remat_pk_doc *d = p->doc;
    if (!grow((void **)&d->nodes, &d->cap_nodes, d->n_nodes + 1, sizeof(remat_pk_node), p->err)) return REMAT_PK_NIL;
    remat_pk_node *n = &d->nodes[d->n_nodes];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)t;
    if (t >= REMAT_PK_LIST) n->v.u.a = n->v.u.b = END32;
    return d->n_nodes++;
}

static int push(parser *p, remat_pk_ref v) {
    if (v == REMAT_PK_NIL) return 0;
    if (!grow((void **)&p->stack, &p->cap_stack, p->sp + 1, sizeof(remat_pk_ref), p->err)) return 0;
    p->stack[p->sp++] = v;
    return 1;
}

/* Appends (key, value) to container c. */
static int add_entry(parser *p, remat_pk_ref c, remat_pk_ref key, remat_pk_ref value) {
    remat_pk_doc *d = p->doc;
    if (!grow((void **)&d->entries, &d->cap_entries, d->n_entries + 1, sizeof(remat_pk_entry), p->err)) return 0;
    uint32_t e = d->n_entries++;
    d->entries[e].key = key;
    d->entries[e].value = value;
    d->entries[e].next = END32;
    remat_pk_node *n = &d->nodes[c];
    if (n->v.u.b == END32) n->v.u.a = e;
    else d->entries[n->v.u.b].next = e;
    n->v.u.b = e;
    n->n++;
    return 1;
}

/* ---- memo ------------------------------------------------------------------------ */

static inline uint32_t memo_hash(uint32_t k) { return k * 2654435761u; }

static int memo_put_hash(parser *p, uint32_t key, remat_pk_ref v, int *added);

static int memo_put(parser *p, uint32_t key, remat_pk_ref v) {
    if (key < p->n_dense) {
        p->dense[key] = v;
        return 1;
    }
    if (key == p->n_dense) {
        int in_hash = 0;
        if (p->n_memo) { /* the key may sit in the hash from before: it was counted then */
            uint32_t mask = p->cap_memo - 1, h = memo_hash(key) & mask;
            while (p->memo[h].key && !in_hash) {
                in_hash = p->memo[h].key == key + 1;
                h = (h + 1) & mask;
            }
        }
        if (!grow((void **)&p->dense, &p->cap_dense, p->n_dense + 1, sizeof(remat_pk_ref), p->err)) return 0;
        p->dense[p->n_dense++] = v;
        if (!in_hash) p->n_keys++;
        return 1;
    }
    int added = 0;
    if (!memo_put_hash(p, key, v, &added)) return 0;
    p->n_keys += (uint32_t)added;
    return 1;
}

static int memo_put_hash(parser *p, uint32_t key, remat_pk_ref v, int *added) {
    if ((uint64_t)(p->n_memo + 1) * 2 > p->cap_memo) {
        uint32_t nc = p->cap_memo ? p->cap_memo * 2 : 256;
        if (nc == 0 || nc > (UINT32_MAX >> 1)) {
            remat_error_set(p->err, REMAT_ERR_NOMEM, "%s: pickle: memo over 2^30 entries", p->origin);
            return 0;
        }
        memo_cell *cells = remat_xcalloc(nc, sizeof(memo_cell), p->err);
        if (!cells) return 0;
        for (uint32_t i = 0; i < p->cap_memo; i++) {
            if (!p->memo[i].key) continue;
            uint32_t h = memo_hash(p->memo[i].key - 1) & (nc - 1);
            while (cells[h].key) h = (h + 1) & (nc - 1);
            cells[h] = p->memo[i];
        }
        remat_xfree(p->memo);
        p->memo = cells;
        p->cap_memo = nc;
    }
    uint32_t mask = p->cap_memo - 1, h = memo_hash(key) & mask;
    while (p->memo[h].key && p->memo[h].key != key + 1) h = (h + 1) & mask;
    if (!p->memo[h].key) p->n_memo++, *added = 1;
    p->memo[h].key = key + 1;
    p->memo[h].value = v;
    return 1;
}

static remat_pk_ref memo_get(const parser *p, uint32_t key) {
    if (key < p->n_dense) return p->dense[key];
    if (!p->cap_memo) return REMAT_PK_NIL;
    uint32_t mask = p->cap_memo - 1, h = memo_hash(key) & mask;
    while (p->memo[h].key) {
        if (p->memo[h].key == key + 1) return p->memo[h].value;
        h = (h + 1) & mask;
    }
    return REMAT_PK_NIL;
}

/* ---- little-endian reads ---------------------------------------------------------- */

static inline uint64_t rd_le(const uint8_t *s, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | s[i];
    return v;
}

/* ---- the opcodes, by kind ------------------------------------------------------------ */

/* Each returns REMAT_OK or the error it set; p->pos moves past the opcode's argument. */
#define NEED(k)                                                                                          \
    do {                                                                                                 \
        if ((size_t)(k) > p->size - p->pos)                                                              \
            return fail(p, REMAT_ERR_INPUT, p->off, p->op, "truncated (the file ends inside its argument)"); \
    } while (0)
#define REFUSE(what) return fail(p, REMAT_ERR_INPUT, p->off, p->op, what)
#define CHECK(x)                                                              \
    do {                                                                      \
        if (!(x)) return p->err && p->err->status ? p->err->status : REMAT_ERR_NOMEM; \
    } while (0)

/* The position of the innermost mark, popped. UINT32_MAX if none. */
static uint32_t pop_mark(parser *p) { return p->n_marks ? p->marks[--p->n_marks] : END32; }

static remat_status push_int(parser *p, int64_t i) {
    remat_pk_ref v = new_node(p, REMAT_PK_INT);
    CHECK(v != REMAT_PK_NIL);
    p->doc->nodes[v].v.i = i;
    CHECK(push(p, v));
    return REMAT_OK;
}

/* BININT, BININT1, BININT2; LONG1, LONG4 (little-endian two's complement of n bytes). */
static remat_status op_int(parser *p) {
    const uint8_t op = p->op;
    if (op == 'J' || op == 'K' || op == 'M') {
        int k = op == 'J' ? 4 : op == 'K' ? 1 : 2;
        NEED(k);
        uint64_t u = rd_le(p->data + p->pos, k);
        p->pos += (size_t)k;
        return push_int(p, op == 'J' ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u);
    }
    size_t k = op == 0x8a ? 1 : 4;
    NEED(k);
    uint64_t n = rd_le(p->data + p->pos, (int)k);
    p->pos += k;
    NEED(n);
    const uint8_t *s = p->data + p->pos;
    /* bytes beyond 8 must be pure sign extension */
    int neg = n > 0 && (s[n - 1] & 0x80);
    for (uint64_t i = 8; i < n; i++)
        if (s[i] != (neg ? 0xff : 0x00)) REFUSE("integer wider than 64 bits");
    uint64_t u = 0;
    int used = n < 8 ? (int)n : 8;
    for (int i = used - 1; i >= 0; i--) u = u << 8 | s[i];
    if (neg && used < 8) u |= ~(uint64_t)0 << (8 * used);
    if (n > 8 && ((u >> 63) != (uint64_t)neg)) REFUSE("integer wider than 64 bits");
    p->pos += (size_t)n;
    return push_int(p, (int64_t)u);
}

/* NEWTRUE, NEWFALSE; BINFLOAT (big-endian IEEE double); the strings and bytes (a length of
 * 1, 4 or 8 bytes, then the bytes, kept in place). */
static remat_status op_scalar(parser *p) {
    const uint8_t op = p->op;
    remat_pk_ref v;
    if (op == 0x88 || op == 0x89) {
        CHECK((v = new_node(p, REMAT_PK_BOOL)) != REMAT_PK_NIL);
        p->doc->nodes[v].v.i = op == 0x88;
    } else if (op == 'G') {
        NEED(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | p->data[p->pos + (size_t)i];
        p->pos += 8;
        CHECK((v = new_node(p, REMAT_PK_FLOAT)) != REMAT_PK_NIL);
        memcpy(&p->doc->nodes[v].v.f, &u, 8);
    } else {
        int k = (op == 0x8c || op == 'C') ? 1 : (op == 'X' || op == 'B') ? 4 : 8;
        NEED(k);
        uint64_t n = rd_le(p->data + p->pos, k);
        p->pos += (size_t)k;
        if (n > p->size - p->pos) REFUSE("length runs past the end of the file");
        v = new_node(p, (op == 0x8c || op == 'X' || op == 0x8d) ? REMAT_PK_STR : REMAT_PK_BYTES);
        CHECK(v != REMAT_PK_NIL);
        p->doc->nodes[v].n = (uint32_t)n;
        p->doc->nodes[v].v.u.a = (uint32_t)p->pos;
        p->pos += (size_t)n;
    }
    CHECK(push(p, v));
    return REMAT_OK;
}

/* BINPUT, LONG_BINPUT, MEMOIZE (key = len(memo)); BINGET, LONG_BINGET. */
static remat_status op_memo(parser *p) {
    const uint8_t op = p->op;
    if (op == 0x94) {
        if (!p->sp) REFUSE("nothing on the stack to memoize");
        CHECK(memo_put(p, p->n_keys, p->stack[p->sp - 1]));
        return REMAT_OK;
    }
    int k = op == 'q' || op == 'h' ? 1 : 4;
    NEED(k);
    uint32_t key = (uint32_t)rd_le(p->data + p->pos, k);
    p->pos += (size_t)k;
    if (op == 'q' || op == 'r') {
        if (!p->sp) REFUSE("nothing on the stack to memoize");
        if (key == UINT32_MAX) REFUSE("memo key out of range");
        CHECK(memo_put(p, key, p->stack[p->sp - 1]));
        return REMAT_OK;
    }
    remat_pk_ref v = key == UINT32_MAX ? REMAT_PK_NIL : memo_get(p, key);
    if (v == REMAT_PK_NIL) REFUSE("memo key not defined");
    CHECK(push(p, v));
    return REMAT_OK;
}

/* The stack: empty containers and None pushed, MARK, POP (the top value, or the innermost
 * mark when it is on top), POP_MARK, DUP. */
static remat_status op_stack(parser *p) {
    switch (p->op) {
    case '}': CHECK(push(p, new_node(p, REMAT_PK_DICT))); break;
    case ']': CHECK(push(p, new_node(p, REMAT_PK_LIST))); break;
    case ')': CHECK(push(p, new_node(p, REMAT_PK_TUPLE))); break;
    case 'N': CHECK(push(p, new_node(p, REMAT_PK_NONE))); break;
    case '(':
        CHECK(grow((void **)&p->marks, &p->cap_marks, p->n_marks + 1, sizeof(uint32_t), p->err));
        p->marks[p->n_marks++] = p->sp;
        break;
    case '0':
        if (p->n_marks && p->marks[p->n_marks - 1] == p->sp) p->n_marks--;
        else if (p->sp) p->sp--;
        else REFUSE("nothing on the stack");
        break;
    case '1': {
        uint32_t m = pop_mark(p);
        if (m == END32) REFUSE("no mark");
        p->sp = m;
        break;
    }
    default: /* '2' */
        if (!p->sp) REFUSE("nothing on the stack");
        CHECK(push(p, p->stack[p->sp - 1]));
        break;
    }
    return REMAT_OK;
}

/* The values stack[first..sp) into container c: key/value pairs for a dict. */
static remat_status add_items(parser *p, remat_pk_ref c, int is_dict, uint32_t first) {
    if (is_dict) {
        if ((p->sp - first) % 2) REFUSE("odd number of values for a dict");
        for (uint32_t i = first; i < p->sp; i += 2) CHECK(add_entry(p, c, p->stack[i], p->stack[i + 1]));
    } else {
        for (uint32_t i = first; i < p->sp; i++) CHECK(add_entry(p, c, REMAT_PK_NIL, p->stack[i]));
    }
    p->sp = first;
    return REMAT_OK;
}

/* TUPLE1-3 (the top values), TUPLE, LIST, DICT (the values above the mark): a new container. */
static remat_status op_build(parser *p) {
    const uint8_t op = p->op;
    uint32_t first;
    if (op == 't' || op == 'l' || op == 'd') {
        first = pop_mark(p);
        if (first == END32) REFUSE("no mark");
    } else {
        uint32_t k = (uint32_t)(op - 0x84);
        if (p->sp < k) REFUSE("not enough values on the stack");
        first = p->sp - k;
    }
    remat_pk_type t = op == 'l' ? REMAT_PK_LIST : op == 'd' ? REMAT_PK_DICT : REMAT_PK_TUPLE;
    if (t == REMAT_PK_DICT && (p->sp - first) % 2) REFUSE("odd number of values for a dict");
    remat_pk_ref c = new_node(p, t);
    CHECK(c != REMAT_PK_NIL);
    remat_status st = add_items(p, c, t == REMAT_PK_DICT, first);
    if (st != REMAT_OK) return st;
    CHECK(push(p, c));
    return REMAT_OK;
}

/* APPEND, APPENDS, SETITEM, SETITEMS: values into the list or dict under them. */
static remat_status op_append(parser *p) {
    const uint8_t op = p->op;
    uint32_t first;
    if (op == 'a') {
        if (p->sp < 2) REFUSE("not enough values on the stack");
        first = p->sp - 1;
    } else if (op == 's') {
        if (p->sp < 3) REFUSE("not enough values on the stack");
        first = p->sp - 2;
    } else {
        first = pop_mark(p);
        if (first == END32) REFUSE("no mark");
        if (first == 0) REFUSE("no container under the mark");
    }
    remat_pk_ref c = p->stack[first - 1];
    int is_dict = op == 's' || op == 'u';
    remat_pk_type want = is_dict ? REMAT_PK_DICT : REMAT_PK_LIST;
    if (p->doc->nodes[c].type != want)
        REFUSE(is_dict ? "expected a dict under the items" : "expected a list under the items");
    return add_items(p, c, is_dict, first);
}

/* One opcode at p->pos. *stopped set by STOP. */
static remat_status op_step(parser *p, int *stopped) {
    p->off = p->pos;
    const uint8_t op = p->op = p->data[p->pos++];
    switch (op) {
    case 0x80: /* PROTO */
        NEED(1);
        if (p->data[p->pos] < 2 || p->data[p->pos] > 5) REFUSE("expected protocol 2 to 5");
        p->doc->protocol = p->data[p->pos++];
        return REMAT_OK;
    case 0x95: /* FRAME: an 8-byte length; frames only group opcodes */
        NEED(8);
        if (rd_le(p->data + p->pos, 8) > p->size - p->pos - 8)
            REFUSE("frame length runs past the end of the file (truncated?)");
        p->pos += 8;
        return REMAT_OK;
    case '.': /* STOP */
        if (p->sp != 1) REFUSE(p->sp ? "expected one value on the stack, found several" : "nothing on the stack");
        p->doc->root = p->stack[0];
        *stopped = 1;
        return REMAT_OK;
    case '}': case ']': case ')': case 'N': case '(': case '0': case '1': case '2':
        return op_stack(p);
    case 'J': case 'K': case 'M': case 0x8a: case 0x8b:
        return op_int(p);
    case 0x88: case 0x89: case 'G': case 0x8c: case 'X': case 0x8d: case 'C': case 'B': case 0x8e: case 0x96:
        return op_scalar(p);
    case 'q': case 'r': case 0x94: case 'h': case 'j':
        return op_memo(p);
    case 0x85: case 0x86: case 0x87: case 't': case 'l': case 'd':
        return op_build(p);
    case 'a': case 'e': case 's': case 'u':
        return op_append(p);
    case 'c': case 0x93: case 'R': case 'b': case 'i': case 'o': case 0x81: case 0x92:
    case 0x82: case 0x83: case 0x84: case 'P': case 'Q': case 0x97: case 0x98:
        REFUSE("refused: it would import a name or call code (a memory snapshot holds plain data only)");
    case 'I': case 'L': case 'F': case 'S': case 'T': case 'U': case 'V': case 'p': case 'g':
        REFUSE("refused: a protocol 0/1 text opcode (expected protocol 2 to 5)");
    case 0x8f: case 0x90: case 0x91:
        REFUSE("refused: sets are not part of a memory snapshot");
    default:
        REFUSE("not a pickle opcode");
    }
}

#undef NEED
#undef REFUSE
#undef CHECK

remat_status remat_pk_parse(const uint8_t *data, size_t size, const char *origin, remat_pk_doc *doc,
                            remat_error *err) {
    memset(doc, 0, sizeof *doc);
    doc->root = REMAT_PK_NIL;
    doc->data = data;
    doc->size = size;
    parser p;
    memset(&p, 0, sizeof p);
    p.doc = doc;
    p.origin = origin ? origin : "pickle";
    remat_error local = {REMAT_OK, {0}};
    p.err = err ? err : &local;
    p.data = data;
    p.size = size;
    remat_status st = REMAT_OK;
    int stopped = 0;
    if (size >= UINT32_MAX)
        st = remat_error_set(p.err, REMAT_ERR_INPUT, "%s: pickle: %zu bytes, expected under 4 GiB", p.origin, size);
    else if (size == 0)
        st = remat_error_set(p.err, REMAT_ERR_INPUT, "%s: pickle: empty file, expected a pickle", p.origin);
    while (st == REMAT_OK && !stopped) {
        if (p.pos >= size)
            st = remat_error_set(p.err, REMAT_ERR_INPUT, "%s: pickle: truncated at offset %zu (no STOP opcode)",
                                 p.origin, size);
        else st = op_step(&p, &stopped);
    }
    remat_xfree(p.stack);
    remat_xfree(p.marks);
    remat_xfree(p.memo);
    remat_xfree(p.dense);
    if (st != REMAT_OK) {
        remat_pk_free(doc);
        doc->data = data;
        doc->size = size;
    }
    return st;
}

void remat_pk_free(remat_pk_doc *doc) {
    if (!doc) return;
    remat_xfree(doc->nodes);
    remat_xfree(doc->entries);
    memset(doc, 0, sizeof *doc);
    doc->root = REMAT_PK_NIL;
}

/* ---- accessors ----------------------------------------------------------------- */

remat_pk_type remat_pk_type_of(const remat_pk_doc *doc, remat_pk_ref v) {
    if (v == REMAT_PK_NIL || v >= doc->n_nodes) return REMAT_PK_NONE;
    return (remat_pk_type)doc->nodes[v].type;
}

const char *remat_pk_type_name(remat_pk_type t) {
    static const char *names[] = {"None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

int remat_pk_int(const remat_pk_doc *doc, remat_pk_ref v, int64_t *out) {
    remat_pk_type t = remat_pk_type_of(doc, v);
    if (v == REMAT_PK_NIL || (t != REMAT_PK_INT && t != REMAT_PK_BOOL)) return 0;
    *out = doc->nodes[v].v.i;
    return 1;
}

int remat_pk_number(const remat_pk_doc *doc, remat_pk_ref v, double *out) {
    if (remat_pk_type_of(doc, v) == REMAT_PK_FLOAT && v != REMAT_PK_NIL) {
        *out = doc->nodes[v].v.f;
        return 1;
    }
    int64_t i;
    if (!remat_pk_int(doc, v, &i)) return 0;
    *out = (double)i;
    return 1;
}

const char *remat_pk_str(const remat_pk_doc *doc, remat_pk_ref v, size_t *len) {
    remat_pk_type t = remat_pk_type_of(doc, v);
    if (v == REMAT_PK_NIL || (t != REMAT_PK_STR && t != REMAT_PK_BYTES)) return NULL;
    *len = doc->nodes[v].n;
    return (const char *)doc->data + doc->nodes[v].v.u.a;
}

int remat_pk_str_eq(const remat_pk_doc *doc, remat_pk_ref v, const char *s) {
    if (remat_pk_type_of(doc, v) != REMAT_PK_STR || v == REMAT_PK_NIL) return 0;
    size_t n = strlen(s);
    return doc->nodes[v].n == n && memcmp(doc->data + doc->nodes[v].v.u.a, s, n) == 0;
}

uint32_t remat_pk_len(const remat_pk_doc *doc, remat_pk_ref v) {
    return remat_pk_type_of(doc, v) >= REMAT_PK_LIST && v != REMAT_PK_NIL ? doc->nodes[v].n : 0;
}

remat_pk_iter remat_pk_iter_begin(const remat_pk_doc *doc, remat_pk_ref container) {
    remat_pk_iter it = {END32, 0, REMAT_PK_NIL, REMAT_PK_NIL};
    if (remat_pk_type_of(doc, container) >= REMAT_PK_LIST && container != REMAT_PK_NIL)
        it.entry = doc->nodes[container].v.u.a; /* first entry; consumed by the first next() */
    return it;
}

int remat_pk_iter_next(const remat_pk_doc *doc, remat_pk_iter *it) {
    uint32_t e;
    if (!it->started) e = it->entry; /* first call */
    else e = it->entry == END32 ? END32 : doc->entries[it->entry].next;
    if (e == END32 || e >= doc->n_entries) {
        it->entry = END32;
        it->key = it->value = REMAT_PK_NIL;
        return 0;
    }
    it->entry = e;
    it->started = 1;
    it->key = doc->entries[e].key;
    it->value = doc->entries[e].value;
    return 1;
}

remat_pk_ref remat_pk_dict_get(const remat_pk_doc *doc, remat_pk_ref d, const char *key) {
    if (remat_pk_type_of(doc, d) != REMAT_PK_DICT || d == REMAT_PK_NIL) return REMAT_PK_NIL;
    remat_pk_ref found = REMAT_PK_NIL;
    for (remat_pk_iter it = remat_pk_iter_begin(doc, d); remat_pk_iter_next(doc, &it);)
        if (remat_pk_str_eq(doc, it.key, key)) found = it.value;
    return found;
}
