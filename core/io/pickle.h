/* pickle.h - a reader for the plain-data subset of Python's pickle format
 * (protocols 2 to 5), as torch.cuda.memory._dump_snapshot() writes it.
 *
 * What it reads: dict, list, tuple, str, bytes (and bytearray, read as bytes), int
 * (BININT*, LONG1/LONG4 up to 64 bits), float, bool, None, the memo (PUT/GET/MEMOIZE),
 * FRAME, MARK/APPEND(S)/SETITEM(S), POP/POP_MARK/DUP. What it refuses, with one line
 * "<origin>: pickle: opcode NAME (0xNN) at offset K: ...": every opcode that would
 * import a name or call code (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
 * NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, NEXT_BUFFER, READONLY_BUFFER), the text
 * opcodes of protocols 0 and 1, sets, integers wider than 64 bits, a truncated file,
 * a length that runs past the end, and a stack that does not hold exactly one value
 * at STOP. Nothing is ever imported or called.
 *
 * Memory: strings and bytes are not copied (values point into the caller's buffer,
 * which must outlive the document); every allocation is in proportion to the number
 * of opcodes read, never to a length field, so a document costs at most
 * REMAT_PK_BYTES_PER_INPUT_BYTE bytes of memory per input byte (real snapshots:
 * about 2). The input is read in one forward pass (no seeking back), without recursion.
 * Shared values (the memo) stay shared: a memo GET is a reference, not a copy, so
 * the document is a graph and may even hold cycles; walk it with a depth limit.
 *
 *   remat_pk_doc doc;
 *   if (remat_pk_parse(buf, len, "snap.pickle", &doc, &err) != REMAT_OK) ...
 *   remat_pk_ref segs = remat_pk_dict_get(&doc, doc.root, "segments");
 *   for (remat_pk_iter it = remat_pk_iter_begin(&doc, segs); remat_pk_iter_next(&doc, &it);)
 *       ... it.value (it.key for dicts) ...
 *   remat_pk_free(&doc);
 */
#ifndef REMAT_PICKLE_H
#define REMAT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Worst case over all inputs (one 1-byte opcode per node plus its stack slot,
 * entry and memo cell); used by the fuzzer and the tests as a bound. */
#define REMAT_PK_BYTES_PER_INPUT_BYTE 64

typedef enum remat_pk_type {
    REMAT_PK_NONE = 0,
    REMAT_PK_BOOL,
    REMAT_PK_INT,
    REMAT_PK_FLOAT,
    REMAT_PK_STR,
    REMAT_PK_BYTES,
    REMAT_PK_LIST,
    REMAT_PK_TUPLE,
    REMAT_PK_DICT,
} remat_pk_type;

/* A value: an index into the document's nodes. REMAT_PK_NIL: no value. */
typedef uint32_t remat_pk_ref;
#define REMAT_PK_NIL UINT32_MAX

typedef struct remat_pk_node {
    uint8_t type;      /* remat_pk_type */
    uint8_t pad[3];
    uint32_t n;        /* str/bytes: length; containers: items (dict: pairs) */
    union {
        int64_t i;     /* bool (0/1), int */
        double f;      /* float */
        struct {
            uint32_t a, b; /* str/bytes: offset into the input (a) ; containers: first and last entry */
        } u;
    } v;
} remat_pk_node;

typedef struct remat_pk_entry {
    remat_pk_ref key;   /* dicts: the key; lists and tuples: REMAT_PK_NIL */
    remat_pk_ref value;
    uint32_t next;      /* next entry of the same container, UINT32_MAX at the end */
} remat_pk_entry;

typedef struct remat_pk_doc {
    const uint8_t *data; /* the input (not owned) */
    size_t size;
    remat_pk_node *nodes;
    uint32_t n_nodes, cap_nodes;
    remat_pk_entry *entries;
    uint32_t n_entries, cap_entries;
    remat_pk_ref root;
    int protocol;        /* from PROTO; 0 when the input had none */
} remat_pk_doc;

/* Parses data[0..size) (size < 4 GiB). On failure *doc is empty (remat_pk_free is
 * still safe) and err holds one line (for REMAT_ERR_INPUT starting "<origin>: pickle: ").
 * REMAT_ERR_INPUT for refused input, REMAT_ERR_NOMEM when memory runs out. */
remat_status remat_pk_parse(const uint8_t *data, size_t size, const char *origin, remat_pk_doc *doc,
                            remat_error *err);
void remat_pk_free(remat_pk_doc *doc);

/* Accessors. All accept REMAT_PK_NIL (type REMAT_PK_NONE, not found). */
remat_pk_type remat_pk_type_of(const remat_pk_doc *doc, remat_pk_ref v);
const char *remat_pk_type_name(remat_pk_type t);
/* 1 and *out set when v is an int or a bool. */
int remat_pk_int(const remat_pk_doc *doc, remat_pk_ref v, int64_t *out);
/* 1 and *out set when v is a float, an int or a bool. */
int remat_pk_number(const remat_pk_doc *doc, remat_pk_ref v, double *out);
/* str or bytes: pointer into the input (not NUL-terminated) and length; NULL otherwise. */
const char *remat_pk_str(const remat_pk_doc *doc, remat_pk_ref v, size_t *len);
/* 1 when v is a str equal to s. */
int remat_pk_str_eq(const remat_pk_doc *doc, remat_pk_ref v, const char *s);
/* Items of a list/tuple, pairs of a dict; 0 for anything else. */
uint32_t remat_pk_len(const remat_pk_doc *doc, remat_pk_ref v);
/* The value under the str key `key` of dict d (the last one, as Python keeps),
 * or REMAT_PK_NIL when d is not a dict or has no such key. O(pairs). */
remat_pk_ref remat_pk_dict_get(const remat_pk_doc *doc, remat_pk_ref d, const char *key);

/* Iteration over a list, tuple or dict (anything else: no items). */
typedef struct remat_pk_iter {
    uint32_t entry;          /* current entry (internal) */
    uint32_t started;        /* internal */
    remat_pk_ref key, value; /* the current item (key: dicts only, else REMAT_PK_NIL) */
} remat_pk_iter;
remat_pk_iter remat_pk_iter_begin(const remat_pk_doc *doc, remat_pk_ref container);
/* Advances to the next item; 0 at the end. */
int remat_pk_iter_next(const remat_pk_doc *doc, remat_pk_iter *it);

#ifdef __cplusplus
}
#endif
#endif
