/*
 * godot_rag._gdchunk: the native fast path of godot_rag.domain.gdscript.
 *
 * parse(source_file, source_bytes, sha256) is parse_gdscript's fast path: it
 * validates the bytes, parses them with tree-sitter and returns the same
 * ChunkingResult as the Python reference implementation (_Chunker in
 * gdscript.py), or None when Python must decide.  chunk(source_file,
 * source_bytes, body_start) returns the chunks alone, or a str naming why
 * the file is left to the reference implementation:
 *
 *   - the tree has syntax errors (error regions are cut and re-parsed piece
 *     by piece in Python; rare, and correctness matters more than speed);
 *   - code outside comments and string bodies is not ASCII (the candidate
 *     rules use Python's Unicode identifier and whitespace classes);
 *   - a non-blank line is outside every class-level node (never seen; the
 *     Python safety net turns such lines into statement chunks);
 *   - a tree shape the chunker does not expect (never seen either).
 *
 * The rules are documented once, in gdscript.py's module docstring; this file
 * follows _Chunker step by step (pieces, attachment, grouping, captures,
 * candidates, surrounding context, invariants) and the unit tests compare
 * both implementations chunk by chunk on the corpus, the samples and seeded
 * mutations of them (tests/unit/test_native_chunker.py).  Word lists come
 * from gdscript_candidates.py through configure(): one source of truth.
 *
 * Offsets: the tree speaks bytes; the Python rules speak characters relative
 * to a chunk's start.  Every candidate position here is a character offset
 * relative to the chunk (byte_to_char below), so ties sort exactly as there.
 *
 * Memory: names, facts and candidate values are slices of the source or of
 * a per-call string pool (Str); Python objects are created only for what
 * ends up in a chunk.  A few scratch vectors are kept from call to call
 * (BORROW/GIVE_BACK below, at most 1 MB each); every other C allocation of a
 * call is freed before it returns.  Python's allocator is used throughout
 * (see below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "tree_sitter/api.h"
/* Internal runtime headers (vendored, same release): the capture walk reads
 * subtrees directly, which costs a fraction of a TSTreeCursor walk. */
#include "language.h"
#include "subtree.h"
#include "tree.h"

/* Python's small-object allocator for everything, the tree-sitter runtime
 * included (set in PyInit, as py-tree-sitter does): much faster than libc
 * malloc for the many small allocations of a parse.  The GIL is held
 * throughout, as PyMem_* requires. */
#define malloc PyMem_Malloc
#define calloc PyMem_Calloc
#define realloc PyMem_Realloc
#define free PyMem_Free

/* `cold`: rare paths (errors, growth, typed collections, reference calls,
 * inner classes) stay out of line, so the per-chunk path is compact in the
 * instruction cache (measured: about 1.5 points less chunking overhead
 * when many different files run back to back). */

/* ------------------------------------------------------------ vectors */
__attribute__((noinline, cold)) static int grow(void **items, size_t *cap, size_t elem) {
    size_t new_cap = *cap ? *cap * 2 : 8;
    void *moved = realloc(*items, new_cap * elem);
    if (moved == NULL) return -1;
    *items = moved;
    *cap = new_cap;
    return 0;
}
#define VEC(T) struct { T *items; size_t len, cap; }
#define PUSH(v, x) \
    (((v).len < (v).cap || grow((void **)&(v).items, &(v).cap, sizeof(*(v).items)) == 0) \
         ? ((v).items[(v).len++] = (x), 0) : -1)
#define VFREE(v) (free((v).items), (v).items = NULL, (v).len = (v).cap = 0)
/* Scratch vectors live on from call to call (no allocation and growth per
 * file).  A call borrows one (the stored copy is emptied, so a nested call,
 * should the GC run Python code that parses, starts from nothing) and gives
 * it back at the end; a vector grown past SCRATCH_LIMIT bytes (a huge file)
 * is freed instead of kept. */
#define SCRATCH_LIMIT ((size_t)1 << 20)
#define BORROW(v, stored) ((v) = (stored), memset(&(stored), 0, sizeof(stored)), (v).len = 0)
#define GIVE_BACK(v, stored)                                                        \
    do {                                                                            \
        VFREE(stored);                                                              \
        if ((v).cap * sizeof(*(v).items) <= SCRATCH_LIMIT) (stored) = (v);          \
        else VFREE(v);                                                              \
        memset(&(v), 0, sizeof(v));                                                 \
    } while (0)

/* ------------------------------------------------------------- kinds */
enum { K_TOOL, K_CLASS_NAME, K_CLASS_EXTENDS, K_SIGNAL, K_ENUM, K_CONST, K_VARIABLE,
       K_FUNCTION, K_INNER_CLASS, K_STATEMENT, K_COUNT, K_NONE = -1 };
static const char *KIND_NAMES[K_COUNT] = {"tool", "class_name", "class_extends", "signal", "enum",
                                          "const", "variable", "function", "inner_class", "statement"};
static int kind_groupable(int k) {
    return k == K_SIGNAL || k == K_ENUM || k == K_CONST || k == K_VARIABLE || k == K_STATEMENT;
}
static int kind_header(int k) { return k == K_TOOL || k == K_CLASS_NAME || k == K_CLASS_EXTENDS; }
static int kind_ordinal(int k) { return k == K_TOOL || k == K_CLASS_EXTENDS || k == K_STATEMENT; }

enum { A_DECL, A_COMMENT, A_ANNOTATION, A_CLOSER };

/* Capture kinds, numbered in the alphabetical order of the Python query's
 * capture names: captures sort by (start, end, name) there. */
enum { C_NONE = -1, C_AWAIT, C_BASE_CALL, C_GET_NODE, C_LITERAL, C_MASK, C_NODE_PATH, C_STRING };

/* ------------------------------------------------------- word sets */
/* The word lists of gdscript_candidates.py, copied into open-addressing
 * tables at configure(): a lookup needs no Python string. */
typedef struct {
    char **keys;
    uint32_t *lengths;
    uint32_t mask;          /* capacity - 1, capacity a power of two */
    uint64_t length_bits;   /* bit n: some word has n bytes (n >= 63: bit 63) */
} WordSet;

/* Identifier-sized keys (word lists, member names): length and three bytes
 * spread enough for these small tables; FNV below for anything longer. */
static inline uint32_t hash_word(const char *s, size_t n) {
    if (n == 0) return 0;
    uint32_t h = (uint32_t)n * 0x9E3779B1u;
    h ^= (uint32_t)(unsigned char)s[0] * 0x85EBCA77u;
    h ^= (uint32_t)(unsigned char)s[n - 1] * 0xC2B2AE3Du;
    h ^= (uint32_t)(unsigned char)s[n >> 1] * 0x27D4EB2Fu;
    return h ^ (h >> 15);
}
/* Chunk ids and candidate values: eight bytes per multiply (a byte-at-a-time
 * FNV loop was the chunker's single most expensive line). */
static uint32_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, s, 8);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    for (size_t i = 0; i < n; i++) tail |= (uint64_t)(unsigned char)s[i] << (8 * i);
    h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
    return (uint32_t)(h ^ (h >> 29));
}
static int wordset_has(const WordSet *set, const char *s, size_t n) {
    if (!(set->length_bits & (1ull << (n < 63 ? n : 63)))) return 0;
    for (uint32_t i = hash_word(s, n) & set->mask;; i = (i + 1) & set->mask) {
        if (set->keys[i] == NULL) return 0;
        if (set->lengths[i] == n && memcmp(set->keys[i], s, n) == 0) return 1;
    }
}
static void wordset_free(WordSet *set) {
    if (set->keys != NULL)
        for (uint32_t i = 0; i <= set->mask; i++) PyMem_Free(set->keys[i]);
    PyMem_Free(set->keys);
    PyMem_Free(set->lengths);
    memset(set, 0, sizeof *set);
}
static int wordset_from(WordSet *set, PyObject *frozenset) {
    Py_ssize_t count = PySet_GET_SIZE(frozenset);
    uint32_t capacity = 8;
    while (capacity < (uint32_t)count * 2 + 2) capacity *= 2;
    WordSet fresh = {PyMem_Calloc(capacity, sizeof(char *)), PyMem_Calloc(capacity, sizeof(uint32_t)), capacity - 1, 0};
    if (fresh.keys == NULL || fresh.lengths == NULL) {
        wordset_free(&fresh);
        PyErr_NoMemory();
        return -1;
    }
    PyObject *iterator = PyObject_GetIter(frozenset), *item;
    if (iterator == NULL) return wordset_free(&fresh), -1;
    while ((item = PyIter_Next(iterator)) != NULL) {
        Py_ssize_t n;
        const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &n) : NULL;
        if (text == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "word lists hold str");
            Py_DECREF(item);
            Py_DECREF(iterator);
            wordset_free(&fresh);
            return -1;
        }
        uint32_t i = hash_word(text, n) & fresh.mask;
        while (fresh.keys[i] != NULL) i = (i + 1) & fresh.mask;
        fresh.keys[i] = PyMem_Malloc(n + 1);
        if (fresh.keys[i] == NULL) {
            Py_DECREF(item);
            Py_DECREF(iterator);
            wordset_free(&fresh);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(fresh.keys[i], text, n + 1);
        fresh.lengths[i] = (uint32_t)n;
        fresh.length_bits |= 1ull << (n < 63 ? n : 63);
        Py_DECREF(item);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) return wordset_free(&fresh), -1;
    wordset_free(set);
    *set = fresh;
    return 0;
}

/* ------------------------------------------------------ module state */
typedef struct {
    TSParser *parser;
    int8_t *capture_of_symbol; /* indexed by TSSymbol */
    uint32_t symbol_count;
    PyObject *chunk_cls, *span_cls;
    WordSet singletons, caps_types, stop_methods, known_calls, reference_calls, node_path_calls, node_classes;
    PyObject *kind_str[K_COUNT];
    Py_ssize_t chunk_offsets[12], span_offsets[4], result_offsets[7];
    PyObject *result_cls, *source_kind, *status_ok, *producer_version;
    PyObject *empty_tuple, *empty_str;
} State;

static State S;

/* ---------------------------------------------------- char classes */
/* Character classes of ASCII bytes, filled in PyInit: \w, identifier start,
 * Python's str \s (which includes \x1c-\x1f) and bytes.strip()'s whitespace. */
enum { CC_WORD = 1, CC_IDSTART = 2, CC_SPACE = 4, CC_BSPACE = 8, CC_TRIGGER = 16 };
static unsigned char CHAR_CLASS[256];
static void init_char_classes(void) {
    for (int c = 0; c < 128; c++) {
        int lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z', digit = c >= '0' && c <= '9';
        unsigned char cls = 0;
        if (lower || upper || digit || c == '_') cls |= CC_WORD;
        if (lower || upper || c == '_') cls |= CC_IDSTART;
        if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) cls |= CC_SPACE;
        if (c == ' ' || (c >= '\t' && c <= '\r')) cls |= CC_BSPACE;
        if (c == '#' || c == '"' || c == '\'' || c == '$' || c == '%' || c == '.' || c == 'a') cls |= CC_TRIGGER;
        CHAR_CLASS[c] = cls;
    }
}
static inline int is_word(unsigned char c) { return CHAR_CLASS[c] & CC_WORD; }
static inline int is_ident_start(unsigned char c) { return CHAR_CLASS[c] & CC_IDSTART; }
static inline int is_space(unsigned char c) { return CHAR_CLASS[c] & CC_SPACE; }
static inline int is_bspace(unsigned char c) { return CHAR_CLASS[c] & CC_BSPACE; }

/* Bit i set when p[i] is of class `cls`, for up to 64 bytes, without a
 * branch per byte: text scans then visit only the interesting positions
 * (a data-dependent branch per byte mispredicts at every word boundary). */
static inline uint64_t class_bits_scalar(const unsigned char *p, size_t n, unsigned char cls) {
    uint64_t bits = 0;
    for (size_t i = 0; i < n; i++) bits |= (uint64_t)((CHAR_CLASS[p[i]] & cls) != 0) << i;
    return bits;
}
#ifdef __SSE2__
/* 16 bytes at a time for the two classes the scans use (every x86-64 CPU
 * has SSE2); bytes >= 0x80 are negative as signed bytes: in neither class. */
static inline __m128i in_range(__m128i v, char lo, char hi) {
    return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)(lo - 1))), _mm_cmplt_epi8(v, _mm_set1_epi8((char)(hi + 1))));
}
static inline uint64_t class_bits_in(const unsigned char *p, size_t n, size_t avail, unsigned char cls) {
    if (cls != CC_WORD && cls != CC_TRIGGER) return class_bits_scalar(p, n, cls);
    uint64_t bits = 0;
    size_t i = 0;
    /* CC_TRIGGER reads one byte ahead (the `w` after an `a`): its vector loop
     * needs that byte inside the buffer (`avail` bytes from p); the scalar
     * tail takes every `a`, a superset the caller narrows to `await`. */
    for (; i + 16 <= n && (cls != CC_TRIGGER || i + 16 < avail); i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i)), hit;
        if (cls == CC_WORD) {
            hit = _mm_or_si128(_mm_or_si128(in_range(v, 'a', 'z'), in_range(v, 'A', 'Z')),
                               _mm_or_si128(in_range(v, '0', '9'), _mm_cmpeq_epi8(v, _mm_set1_epi8('_'))));
        } else {
            hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('#')), _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
                               _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')), _mm_cmpeq_epi8(v, _mm_set1_epi8('$'))));
            hit = _mm_or_si128(hit, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('%')),
                                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('.'))),
                                                 _mm_and_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('a')),
                                                               _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i + 1)),
                                                                              _mm_set1_epi8('w')))));
        }
        bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(hit) << i;
    }
    if (i < n) bits |= class_bits_scalar(p + i, n - i, cls) << i;
    return bits;
}
#define class_bits(p, n, cls) class_bits_in((p), (n), (n), (cls))
/* Which of `@`, `.`, `(` and `)` occur in p[0:n] (bits 1, 2, 4, 8): one
 * pass instead of a library call per character for every chunk. */
enum { P_AT = 1, P_DOT = 2, P_OPEN = 4, P_CLOSE = 8 };
static inline unsigned punct_present(const unsigned char *p, size_t n) {
    __m128i at = _mm_setzero_si128(), dot = at, open = at, close = at;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        at = _mm_or_si128(at, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
        dot = _mm_or_si128(dot, _mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
        open = _mm_or_si128(open, _mm_cmpeq_epi8(v, _mm_set1_epi8('(')));
        close = _mm_or_si128(close, _mm_cmpeq_epi8(v, _mm_set1_epi8(')')));
    }
    unsigned found = (_mm_movemask_epi8(at) ? P_AT : 0) | (_mm_movemask_epi8(dot) ? P_DOT : 0) |
                     (_mm_movemask_epi8(open) ? P_OPEN : 0) | (_mm_movemask_epi8(close) ? P_CLOSE : 0);
    for (; i < n; i++)
        found |= p[i] == '@' ? P_AT : p[i] == '.' ? P_DOT : p[i] == '(' ? P_OPEN : p[i] == ')' ? P_CLOSE : 0;
    return found;
}
static inline uint64_t newline_bits(const unsigned char *p, size_t n) {
    uint64_t bits = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))) << i;
    }
    for (; i < n; i++) bits |= (uint64_t)(p[i] == '\n') << i;
    return bits;
}
#else
#define class_bits class_bits_scalar
#define class_bits_in(p, n, avail, cls) class_bits_scalar((p), (n), (cls))
static inline uint64_t newline_bits(const unsigned char *p, size_t n) {
    uint64_t bits = 0;
    for (size_t i = 0; i < n; i++) bits |= (uint64_t)(p[i] == '\n') << i;
    return bits;
}
enum { P_AT = 1, P_DOT = 2, P_OPEN = 4, P_CLOSE = 8 };
static inline unsigned punct_present(const unsigned char *p, size_t n) {
    unsigned found = 0;
    for (size_t i = 0; i < n; i++)
        found |= p[i] == '@' ? P_AT : p[i] == '.' ? P_DOT : p[i] == '(' ? P_OPEN : p[i] == ')' ? P_CLOSE : 0;
    return found;
}
#endif
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }

/* Python's str.isspace() for one code point. */
static int is_unicode_space(uint32_t cp) {
    if (cp < 0x80) return is_space((unsigned char)cp);
    return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}
/* Decode one UTF-8 code point of valid input; returns its byte length. */
static int utf8_next(const unsigned char *p, const unsigned char *end, uint32_t *cp) {
    unsigned char c = p[0];
    if (c < 0x80 || p + 1 >= end) { *cp = c; return 1; }
    if ((c & 0xe0) == 0xc0 && p + 1 < end) { *cp = ((uint32_t)(c & 0x1f) << 6) | (p[1] & 0x3f); return 2; }
    if ((c & 0xf0) == 0xe0 && p + 2 < end) {
        *cp = ((uint32_t)(c & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
        return 3;
    }
    if ((c & 0xf8) == 0xf0 && p + 3 < end) {
        *cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) | ((uint32_t)(p[2] & 0x3f) << 6) |
              (p[3] & 0x3f);
        return 4;
    }
    *cp = c;
    return 1;
}
static int utf8_len(unsigned char c) {
    return c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
}

/* --------------------------------------------------------- data types */
/* A slice of the source (or a literal): names and fact values need no
 * Python string until they end up in a chunk. */
typedef struct {
    const char *s; /* NULL: none */
    uint32_t len;
} Str;
static int str_eq(Str a, Str b) { return a.len == b.len && memcmp(a.s, b.s, a.len) == 0; }
#define LIT(text) ((Str){(text), sizeof(text) - 1})
typedef struct {
    uint32_t pos; /* absolute byte offset */
    Str value;
} Fact;
typedef VEC(Fact) FactVec;
typedef VEC(const char *) TypeVec;

typedef struct {
    int kind, attach, start_line, end_line, scope;
    TypeVec node_types;
    Str name; /* .s NULL: none */
    FactVec symbols, refs;
} Piece;
typedef VEC(Piece) PieceVec;

typedef struct {
    int start, end;
} LineRange;
typedef VEC(LineRange) RangeVec;

typedef struct {
    Str name;
    LineRange lines;
    int used_by; /* serial of the last chunk that named it */
} Member;
typedef VEC(Member) MemberVec;

typedef struct {
    int parent;
    Str name;
    int depth;
    MemberVec members;       /* first declaration of each name wins */
    int has_header;          /* inner classes: their header lines */
    LineRange header;
    int visible_ready;
    MemberVec visible;       /* outer scopes first, inner ones override */
    int32_t *visible_table;  /* name hash -> index into visible, -1 empty */
    uint64_t visible_lengths; /* bit n: a visible name has n characters (n >= 63: bit 63) */
    uint32_t visible_capacity;
} Scope;
typedef VEC(Scope) ScopeVec;

typedef struct {
    uint32_t start, end;
    int kind;
} Capture;
typedef VEC(Capture) CaptureVec;
static CaptureVec CAPTURE_SCRATCH;

typedef struct {
    int rank, pos, seq;
    uint32_t len;
    const char *s;  /* the value's UTF-8 bytes */
    PyObject *obj;  /* the value as a str when it already is one (borrowed) */
} Cand;
typedef VEC(Cand) CandVec;

typedef struct {
    LineRange *ranges;
    size_t count;
    PyObject *text;
} ContextEntry;
typedef struct {
    const char *type; /* interned by the language: compared by pointer */
    PyObject *text;
} KindEntry;

typedef struct {
    PyObject *source_file;
    const unsigned char *src;
    uint32_t len, body_start;
    uint32_t *starts; /* line_count + 1 entries */
    uint32_t *ends;
    int line_count;
    PieceVec pieces;
    ScopeVec scopes;
    RangeVec header_lines;
    VEC(Str) local_types;  /* enums, inner classes, constants of the file */
    const char *bail;      /* why the file goes to the Python implementation */
    int failed;            /* a Python exception is set */
    struct Block *pool;    /* candidate strings */
    RangeVec ranges;       /* scratch of context_text */
    VEC(ContextEntry) contexts;
    VEC(KindEntry) kinds;
    int chunk_serial;
} Ctx;

/* ------------------------------------------------------------ helpers */
static int is_ascii(const unsigned char *s, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        if (word & 0x8080808080808080ull) return 0;
    }
    for (; i < n; i++)
        if (s[i] & 0x80) return 0;
    return 1;
}
/* A str of known-ASCII bytes: the same object PyUnicode_DecodeUTF8 makes,
 * without its decoding pass. */
static PyObject *ascii_str(const char *s, size_t n) {
    PyObject *text = PyUnicode_New((Py_ssize_t)n, 127);
    if (text != NULL && n) memcpy(PyUnicode_DATA(text), s, n);
    return text;
}
/* UTF-8 bytes as a str, checked for ASCII first (almost always). */
static PyObject *utf8_str(const char *s, size_t n, const char *errors) {
    if (is_ascii((const unsigned char *)s, n)) return ascii_str(s, n);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, errors);
}
static Str src_str(Ctx *ctx, uint32_t start, uint32_t end) {
    Str out = {(const char *)ctx->src + start, end > start ? end - start : 0};
    return out;
}
__attribute__((noinline, cold)) static int nomem(Ctx *ctx) {
    if (!ctx->failed) PyErr_NoMemory();
    ctx->failed = 1;
    return -1;
}

static uint32_t line_start(Ctx *ctx, int line) { return line ? ctx->starts[line] : ctx->body_start; }
static int range_blank(const unsigned char *src, uint32_t start, uint32_t end) {
    for (uint32_t i = start; i < end; i++)
        if (!is_bspace(src[i])) return 0;
    return 1;
}
static int is_blank(Ctx *ctx, int line) { return range_blank(ctx->src, line_start(ctx, line), ctx->ends[line]); }

/* Lines of a node's first and last byte.  tree-sitter counts rows at '\n'
 * exactly as the line table does, so rows replace two binary searches: the
 * last byte's row is the end row, less one when that byte is the '\n'. */
static void node_lines(Ctx *ctx, TSNode node, int *out_start, int *out_end) {
    uint32_t first = ts_node_start_byte(node), end_byte = ts_node_end_byte(node);
    uint32_t last = end_byte > first ? end_byte - 1 : first;
    int start = (int)ts_node_start_point(node).row;
    int end = end_byte > first ? (int)ts_node_end_point(node).row - (ctx->src[last] == '\n') : start;
    if (first < ctx->len && is_bspace(ctx->src[first]))
        while (start < end && is_blank(ctx, start)) start++;
    if (last < ctx->len && is_bspace(ctx->src[last]))
        while (end > start && is_blank(ctx, end)) end--;
    *out_start = start;
    *out_end = end;
}

static const char *type_of(TSNode node) { return ts_node_type(node); }
static int type_is(TSNode node, const char *name) { return strcmp(ts_node_type(node), name) == 0; }

typedef VEC(TSNode) NodeVec;
/* The visible children of a subtree, as TSTreeCursor's first-child /
 * next-sibling walk yields them (invisible children are flattened into
 * their own visible children), read from the subtrees directly: the cursor
 * costs several times more per child. */
__attribute__((noinline, cold)) static int visible_children(Ctx *ctx, const TSTree *tree, Subtree parent, Length position, NodeVec *out, int depth) {
    uint32_t count = ts_subtree_child_count(parent);
    if (count == 0) return 0;
    if (depth > 64) { /* invisible nesting this deep does not occur in the grammar */
        ctx->bail = "unexpected tree shape";
        return 0;
    }
    const TSSymbol *aliases = ts_language_alias_sequence(tree->language, ts_subtree_production_id(parent));
    const Subtree *children = ts_subtree_children(parent);
    uint32_t structural = 0;
    for (uint32_t i = 0; i < count; i++) {
        const Subtree *child = &children[i];
        TSSymbol alias = 0;
        if (!ts_subtree_extra(*child)) {
            if (aliases) alias = aliases[structural];
            structural++;
        }
        if (i > 0) position = length_add(position, ts_subtree_padding(*child));
        if (ts_subtree_visible(*child) || alias) {
            if (PUSH(*out, ts_node_new(tree, child, position, alias)) < 0) return nomem(ctx);
        } else if (visible_children(ctx, tree, *child, position, out, depth + 1) < 0) {
            return -1;
        }
        position = length_add(position, ts_subtree_size(*child));
    }
    return 0;
}

static int children_of(Ctx *ctx, TSNode node, NodeVec *out) {
    out->len = 0;
    Length position = {ts_node_start_byte(node), ts_node_start_point(node)};
    return visible_children(ctx, node.tree, *(const Subtree *)node.id, position, out, 0);
}
/* Field ids are looked up once, in configure(): by name the runtime scans
 * every field name of the grammar. */
enum { FIELD_NAME, FIELD_BODY, FIELD_LEFT, FIELD_EXTENDS, FIELD_COUNT };
static const char *FIELD_NAMES[FIELD_COUNT] = {"name", "body", "left", "extends"};
static TSFieldId FIELD_IDS[FIELD_COUNT];
static TSNode field(TSNode node, int which) { return ts_node_child_by_field_id(node, FIELD_IDS[which]); }

/* Byte range between the quotes of a string-like literal (0 when none).
 * Like the Python version it reads the three bytes at the quote from the whole
 * file, not only from the node. */
static int string_content(const unsigned char *src, uint32_t total, uint32_t start, uint32_t end, uint32_t *cs,
                          uint32_t *ce) {
    uint32_t p = start;
    while (p < end && (src[p] == 'r' || src[p] == '&' || src[p] == '^')) p++;
    if (p >= total || (src[p] != '"' && src[p] != '\'')) return 0;
    unsigned char q = src[p];
    uint32_t width = (p + 3 <= total && src[p + 1] == q && src[p + 2] == q) ? 3 : 1;
    uint32_t content_start = p + width;
    int closed = end >= width && end - width >= content_start;
    for (uint32_t i = 0; closed && i < width; i++)
        if (src[end - width + i] != q) closed = 0;
    uint32_t content_end = closed ? end - width : end;
    *cs = content_start;
    *ce = content_end > content_start ? content_end : content_start;
    return 1;
}

/* ------------------------------------------------------------- scopes */
static int scope_child(Ctx *ctx, int parent, Str name) {
    for (size_t i = 1; i < ctx->scopes.len; i++) {
        Scope *s = &ctx->scopes.items[i];
        if (s->parent == parent && str_eq(s->name, name)) return (int)i;
    }
    Scope scope = {0};
    scope.parent = parent;
    scope.name = name;
    scope.depth = ctx->scopes.items[parent].depth + 1;
    if (scope.depth > 200) {
        /* Bounds the C recursion of build() and the scope chains below;
         * such a file is left to Python. */
        ctx->bail = "inner classes nested more than 200 deep";
        return -1;
    }
    if (PUSH(ctx->scopes, scope) < 0) return nomem(ctx);
    return (int)ctx->scopes.len - 1;
}

static int add_member(Ctx *ctx, int scope_index, Str name, int start, int end) {
    Scope *scope = &ctx->scopes.items[scope_index];
    for (size_t i = 0; i < scope->members.len; i++)
        if (str_eq(scope->members.items[i].name, name)) return 0; /* setdefault */
    Member m;
    memset(&m, 0, sizeof m);
    m.name = name;
    m.lines.start = start;
    m.lines.end = end;
    if (PUSH(scope->members, m) < 0) return nomem(ctx);
    return 0;
}

/* ------------------------------------------------------------- pieces */
static Piece *new_piece(Ctx *ctx, int kind, int attach, int start, int end, int scope, const char *node_type) {
    Piece piece;
    memset(&piece, 0, sizeof piece);
    piece.kind = kind;
    piece.attach = attach;
    piece.start_line = start;
    piece.end_line = end;
    piece.scope = scope;
    if (node_type != NULL && PUSH(piece.node_types, node_type) < 0) return nomem(ctx), NULL;
    if (PUSH(ctx->pieces, piece) < 0) {
        VFREE(piece.node_types);
        return nomem(ctx), NULL;
    }
    return &ctx->pieces.items[ctx->pieces.len - 1];
}
static Piece *node_piece(Ctx *ctx, TSNode node, int kind, int scope, int attach) {
    int start, end;
    node_lines(ctx, node, &start, &end);
    return new_piece(ctx, kind, attach, start, end, scope, type_of(node));
}
static int add_local_type(Ctx *ctx, Str name) {
    if (PUSH(ctx->local_types, name) < 0) return nomem(ctx);
    return 0;
}
static int is_local_type(Ctx *ctx, const char *s, size_t len) {
    Str name = {s, (uint32_t)len};
    for (size_t i = 0; i < ctx->local_types.len; i++)
        if (str_eq(ctx->local_types.items[i], name)) return 1;
    return 0;
}
static int add_fact(Ctx *ctx, FactVec *facts, uint32_t pos, Str value) {
    Fact fact = {pos, value};
    if (PUSH(*facts, fact) < 0) return nomem(ctx);
    return 0;
}
#define CHECK(expr) do { if ((expr) < 0 || ctx->failed) return -1; } while (0)

/* The last piece pointer is invalidated by any later push: re-fetch by index. */
#define LAST_PIECE(ctx) (&(ctx)->pieces.items[(ctx)->pieces.len - 1])

static int declare(Ctx *ctx, TSNode node, int scope, int member) {
    TSNode name_node = field(node, FIELD_NAME);
    if (ts_node_is_null(name_node)) return 0;
    Str name = src_str(ctx, ts_node_start_byte(name_node), ts_node_end_byte(name_node));
    Piece *piece = LAST_PIECE(ctx);
    if (piece->name.s == NULL) piece->name = name;
    CHECK(add_fact(ctx, &piece->symbols, ts_node_start_byte(name_node), name));
    if (member) CHECK(add_member(ctx, scope, name, piece->start_line, piece->end_line));
    if (type_is(node, "const_statement")) CHECK(add_local_type(ctx, name));
    return 0;
}

static int extends_target(Ctx *ctx, TSNode node) {
    uint32_t count = ts_node_named_child_count(node);
    for (uint32_t i = 0; i < count; i++) {
        TSNode child = ts_node_named_child(node, i);
        if (!type_is(child, "string")) continue;
        uint32_t cs, ce;
        if (string_content(ctx->src, ctx->len, ts_node_start_byte(child), ts_node_end_byte(child), &cs, &ce) &&
            cs < ce)
            CHECK(add_fact(ctx, &LAST_PIECE(ctx)->refs, ts_node_start_byte(child), src_str(ctx, cs, ce)));
    }
    return 0;
}

/* Whether a variable's text holds `remote`, `master`, `puppet` or `setget`
 * (Python's _VARIABLE_KEYWORDS): only then are its children read. */
static int contains_variable_keyword(const unsigned char *src, uint32_t start, uint32_t end) {
    for (uint32_t i = start; i + 6 <= end; i++) {
        switch (src[i]) {
        case 'r': if (memcmp(src + i, "remote", 6) == 0) return 1; break;
        case 'm': if (memcmp(src + i, "master", 6) == 0) return 1; break;
        case 'p': if (memcmp(src + i, "puppet", 6) == 0) return 1; break;
        case 's': if (memcmp(src + i, "setget", 6) == 0) return 1; break;
        default: break;
        }
    }
    return 0;
}

static int build(Ctx *ctx, TSNode *nodes, size_t count, int scope);

static int build_variable(Ctx *ctx, TSNode node, int scope) {
    Piece *piece = node_piece(ctx, node, K_VARIABLE, scope, A_DECL);
    if (piece == NULL) return -1;
    const char *type = type_of(node);
    if (strcmp(type, "export_variable_statement") == 0)
        CHECK(add_fact(ctx, &piece->symbols, ts_node_start_byte(node), LIT("export")));
    else if (strcmp(type, "onready_variable_statement") == 0)
        CHECK(add_fact(ctx, &piece->symbols, ts_node_start_byte(node), LIT("onready")));
    if (contains_variable_keyword(ctx->src, ts_node_start_byte(node), ts_node_end_byte(node))) {
        uint32_t n = ts_node_child_count(node);
        for (uint32_t i = 0; i < n; i++) {
            TSNode child = ts_node_child(node, i);
            if (type_is(child, "remote_keyword")) {
                CHECK(add_fact(ctx, &LAST_PIECE(ctx)->symbols, ts_node_start_byte(child),
                               src_str(ctx, ts_node_start_byte(child), ts_node_end_byte(child))));
            } else if (type_is(child, "setget")) {
                TSNode first = ts_node_child(child, 0);
                if (!ts_node_is_null(first) && type_is(first, "setget"))
                    CHECK(add_fact(ctx, &LAST_PIECE(ctx)->symbols, ts_node_start_byte(first),
                                   LIT("setget")));
            }
        }
    }
    return declare(ctx, node, scope, 1);
}

static int build_function(Ctx *ctx, TSNode node, int scope) {
    Piece *piece = node_piece(ctx, node, K_FUNCTION, scope, A_DECL);
    if (piece == NULL) return -1;
    TSNode name_node = field(node, FIELD_NAME);
    if (!ts_node_is_null(name_node)) {
        LAST_PIECE(ctx)->name = src_str(ctx, ts_node_start_byte(name_node), ts_node_end_byte(name_node));
    } else if (type_is(node, "constructor_definition")) {
        LAST_PIECE(ctx)->name = LIT("_init");
    }
    TSNode first = ts_node_child(node, 0);
    if (!ts_node_is_null(first) && type_is(first, "remote_keyword"))
        CHECK(add_fact(ctx, &LAST_PIECE(ctx)->symbols, ts_node_start_byte(first),
                       src_str(ctx, ts_node_start_byte(first), ts_node_end_byte(first))));
    if (LAST_PIECE(ctx)->name.s == NULL) LAST_PIECE(ctx)->kind = K_STATEMENT;
    return 0;
}

__attribute__((noinline, cold)) static int build_enum(Ctx *ctx, TSNode node, int scope) {
    if (node_piece(ctx, node, K_ENUM, scope, A_DECL) == NULL) return -1;
    CHECK(declare(ctx, node, scope, 1));
    Piece *piece = LAST_PIECE(ctx);
    for (size_t i = 0; i < piece->symbols.len; i++)
        CHECK(add_local_type(ctx, piece->symbols.items[i].value));
    piece = LAST_PIECE(ctx);
    if (piece->name.s == NULL) {
        TSNode body = field(node, FIELD_BODY);
        uint32_t n = ts_node_is_null(body) ? 0 : ts_node_named_child_count(body);
        for (uint32_t i = 0; i < n; i++) {
            TSNode enumerator = ts_node_named_child(body, i);
            TSNode left = field(enumerator, FIELD_LEFT);
            if (ts_node_is_null(left)) continue;
            Str name = src_str(ctx, ts_node_start_byte(left), ts_node_end_byte(left));
            piece = LAST_PIECE(ctx);
            if (piece->name.s == NULL) piece->name = name;
            CHECK(add_fact(ctx, &piece->symbols, ts_node_start_byte(left), name));
            CHECK(add_member(ctx, scope, name, piece->start_line, piece->end_line));
        }
    }
    if (LAST_PIECE(ctx)->name.s == NULL) LAST_PIECE(ctx)->kind = K_STATEMENT;
    return 0;
}

__attribute__((noinline, cold)) static int build_class(Ctx *ctx, TSNode node, int scope) {
    TSNode name_node = field(node, FIELD_NAME);
    TSNode body = field(node, FIELD_BODY);
    int start, end;
    node_lines(ctx, node, &start, &end);
    if (new_piece(ctx, K_INNER_CLASS, A_DECL, start, end, scope, type_of(node)) == NULL) return -1;
    if (ts_node_is_null(name_node)) {
        LAST_PIECE(ctx)->kind = K_STATEMENT;
        return 0;
    }
    Str name = src_str(ctx, ts_node_start_byte(name_node), ts_node_end_byte(name_node));
    LAST_PIECE(ctx)->name = name;
    CHECK(add_fact(ctx, &LAST_PIECE(ctx)->symbols, ts_node_start_byte(name_node), name));
    CHECK(add_local_type(ctx, name));
    int inner = scope_child(ctx, scope, name);
    if (inner < 0) return -1;
    NodeVec members = {0};
    if (!ts_node_is_null(body)) {
        NodeVec all = {0};
        if (children_of(ctx, body, &all) < 0) return VFREE(all), -1;
        for (size_t i = 0; i < all.len; i++)
            if (ts_node_end_byte(all.items[i]) > ts_node_start_byte(all.items[i]) && PUSH(members, all.items[i]) < 0) {
                VFREE(all);
                VFREE(members);
                return nomem(ctx);
            }
        VFREE(all);
    }
    int body_line = members.len ? (int)ts_node_start_point(members.items[0]).row : start;
    int recurse = body_line > start;
    Piece *piece = LAST_PIECE(ctx);
    if (recurse) {
        piece->end_line = body_line - 1;
        while (piece->end_line > start && is_blank(ctx, piece->end_line)) piece->end_line--;
    }
    Scope *inner_scope = &ctx->scopes.items[inner];
    inner_scope->has_header = 1;
    inner_scope->header.start = piece->start_line;
    inner_scope->header.end = piece->end_line;
    int rc = add_member(ctx, scope, name, piece->start_line, piece->end_line);
    if (rc == 0 && recurse) rc = build(ctx, members.items, members.len, inner);
    VFREE(members);
    return rc;
}

static int is_bare_tool(Ctx *ctx, TSNode node) {
    if (ts_node_named_child_count(node) != 1) return 0;
    TSNode child = ts_node_named_child(node, 0);
    uint32_t s = ts_node_start_byte(child), e = ts_node_end_byte(child);
    return type_is(child, "identifier") && e - s == 4 && memcmp(ctx->src + s, "tool", 4) == 0;
}

static int annotation_is_tool(Ctx *ctx, TSNode node) {
    uint32_t n = ts_node_child_count(node);
    for (uint32_t i = 0; i < n; i++) {
        TSNode child = ts_node_child(node, i);
        if (type_is(child, "identifier")) {
            uint32_t s = ts_node_start_byte(child), e = ts_node_end_byte(child);
            return e - s == 4 && memcmp(ctx->src + s, "tool", 4) == 0;
        }
    }
    return 0;
}

static int push_header(Ctx *ctx) {
    Piece *piece = LAST_PIECE(ctx);
    LineRange r = {piece->start_line, piece->end_line};
    if (PUSH(ctx->header_lines, r) < 0) return nomem(ctx);
    return 0;
}

static int build(Ctx *ctx, TSNode *nodes, size_t count, int scope) {
    for (size_t i = 0; i < count; i++) {
        TSNode node = nodes[i];
        if (ts_node_start_byte(node) == ts_node_end_byte(node)) continue;
        const char *type = type_of(node);
        if (strcmp(type, "comment") == 0 || strcmp(type, "region_start") == 0) {
            if (node_piece(ctx, node, K_NONE, scope, A_COMMENT) == NULL) return -1;
        } else if (strcmp(type, "region_end") == 0) {
            if (node_piece(ctx, node, K_NONE, scope, A_CLOSER) == NULL) return -1;
        } else if (strcmp(type, "annotation") == 0) {
            if (scope == 0 && annotation_is_tool(ctx, node)) {
                if (node_piece(ctx, node, K_TOOL, scope, A_DECL) == NULL) return -1;
                CHECK(push_header(ctx));
            } else if (node_piece(ctx, node, K_NONE, scope, A_ANNOTATION) == NULL) {
                return -1;
            }
        } else if (strcmp(type, "variable_statement") == 0 || strcmp(type, "export_variable_statement") == 0 ||
                   strcmp(type, "onready_variable_statement") == 0) {
            CHECK(build_variable(ctx, node, scope));
        } else if (strcmp(type, "function_definition") == 0 || strcmp(type, "constructor_definition") == 0) {
            CHECK(build_function(ctx, node, scope));
        } else if (strcmp(type, "class_definition") == 0) {
            CHECK(build_class(ctx, node, scope));
        } else if (strcmp(type, "signal_statement") == 0 || strcmp(type, "const_statement") == 0) {
            int kind = type[0] == 's' ? K_SIGNAL : K_CONST;
            if (node_piece(ctx, node, kind, scope, A_DECL) == NULL) return -1;
            CHECK(declare(ctx, node, scope, 1));
        } else if (strcmp(type, "enum_definition") == 0) {
            CHECK(build_enum(ctx, node, scope));
        } else if (strcmp(type, "extends_statement") == 0) {
            if (node_piece(ctx, node, K_CLASS_EXTENDS, scope, A_DECL) == NULL) return -1;
            CHECK(extends_target(ctx, node));
            if (scope == 0) CHECK(push_header(ctx));
        } else if (strcmp(type, "class_name_statement") == 0) {
            if (node_piece(ctx, node, K_CLASS_NAME, scope, A_DECL) == NULL) return -1;
            CHECK(declare(ctx, node, scope, 0));
            TSNode extends = field(node, FIELD_EXTENDS);
            if (!ts_node_is_null(extends)) CHECK(extends_target(ctx, extends));
            if (scope == 0) CHECK(push_header(ctx));
        } else if (strcmp(type, "expression_statement") == 0 && scope == 0 && is_bare_tool(ctx, node)) {
            if (node_piece(ctx, node, K_TOOL, scope, A_DECL) == NULL) return -1;
            CHECK(add_fact(ctx, &LAST_PIECE(ctx)->symbols, ts_node_start_byte(node), LIT("tool")));
            CHECK(push_header(ctx));
        } else {
            if (node_piece(ctx, node, K_STATEMENT, scope, A_DECL) == NULL) return -1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------- assembly */
static int types_add(Ctx *ctx, TypeVec *types, const char *type) {
    for (size_t i = 0; i < types->len; i++)
        if (strcmp(types->items[i], type) == 0) return 0;
    if (PUSH(*types, type) < 0) return nomem(ctx);
    return 0;
}
static int facts_extend(Ctx *ctx, FactVec *target, FactVec *source) {
    for (size_t i = 0; i < source->len; i++)
        if (PUSH(*target, source->items[i]) < 0) return nomem(ctx);
    return 0;
}
static void piece_free(Piece *p) {
    VFREE(p->node_types);
    VFREE(p->symbols);
    VFREE(p->refs);
}

/* _absorb: merge a piece that shares a line with target into it. */
static int absorb(Ctx *ctx, Piece *target, Piece *piece) {
    if (target->attach != A_DECL && piece->attach == A_DECL) {
        target->kind = piece->kind;
        target->attach = A_DECL;
        target->name = piece->name;
        target->scope = piece->scope;
        target->node_types.len = 0;
    }
    if (piece->end_line > target->end_line) target->end_line = piece->end_line;
    if (piece->attach == A_DECL)
        for (size_t i = 0; i < piece->node_types.len; i++) CHECK(types_add(ctx, &target->node_types, piece->node_types.items[i]));
    CHECK(facts_extend(ctx, &target->symbols, &piece->symbols));
    CHECK(facts_extend(ctx, &target->refs, &piece->refs));
    return 0;
}

static int by_lines(const void *a, const void *b) {
    const Piece *x = a, *y = b;
    if (x->start_line != y->start_line) return x->start_line < y->start_line ? -1 : 1;
    if (x->end_line != y->end_line) return x->end_line < y->end_line ? -1 : 1;
    return 0;
}

/* Sort (stably), merge pieces that share a line; bail out on uncovered text. */
static int normalise(Ctx *ctx) {
    PieceVec *pieces = &ctx->pieces;
    /* Insertion sort: stable, and pieces arrive nearly sorted (inner class
     * members follow their header). */
    for (size_t i = 1; i < pieces->len; i++) {
        Piece moving = pieces->items[i];
        size_t j = i;
        while (j > 0 && by_lines(&pieces->items[j - 1], &moving) > 0) {
            pieces->items[j] = pieces->items[j - 1];
            j--;
        }
        pieces->items[j] = moving;
    }
    size_t kept = 0;
    for (size_t i = 0; i < pieces->len; i++) {
        if (kept && pieces->items[i].start_line <= pieces->items[kept - 1].end_line) {
            CHECK(absorb(ctx, &pieces->items[kept - 1], &pieces->items[i]));
            piece_free(&pieces->items[i]);
        } else {
            pieces->items[kept++] = pieces->items[i];
        }
    }
    pieces->len = kept;
    int previous_end = -1;
    for (size_t i = 0; i <= kept; i++) {
        int next_start = i < kept ? pieces->items[i].start_line : ctx->line_count;
        if (next_start - previous_end > 1) {
            uint32_t gap_start = line_start(ctx, previous_end + 1);
            uint32_t gap_end = ctx->ends[next_start - 1];
            if (gap_end > gap_start && !range_blank(ctx->src, gap_start, gap_end)) {
                ctx->bail = "text outside every class-level node";
                return 0;
            }
        }
        if (i < kept) previous_end = pieces->items[i].end_line;
    }
    return 0;
}

/* _attach: fold comment and annotation pieces into declaration pieces. */
static int attach(Ctx *ctx, PieceVec *decls) {
    PieceVec *pieces = &ctx->pieces;
    size_t pending_from = 0, pending_len = 0; /* indexes into pieces */
    size_t *pend = NULL, pend_cap = 0, pend_len = 0;
    int rc = 0;
    for (size_t i = 0; i <= pieces->len && rc == 0; i++) {
        Piece *next = i < pieces->len ? &pieces->items[i] : NULL;
        if (next != NULL && next->attach != A_DECL) {
            if (pend_len == pend_cap && grow((void **)&pend, &pend_cap, sizeof *pend) < 0) { rc = nomem(ctx); break; }
            pend[pend_len++] = i;
            continue;
        }
        /* flush(next) */
        if (pend_len) {
            Piece *previous = decls->len ? &decls->items[decls->len - 1] : NULL;
            if (previous == NULL && next == NULL) {
                Piece stmt;
                memset(&stmt, 0, sizeof stmt);
                stmt.kind = K_STATEMENT;
                stmt.attach = A_DECL;
                stmt.start_line = pieces->items[pend[0]].start_line;
                stmt.end_line = pieces->items[pend[pend_len - 1]].end_line;
                stmt.scope = 0;
                if (PUSH(stmt.node_types, "comment") < 0 || PUSH(*decls, stmt) < 0) { rc = nomem(ctx); break; }
            } else {
                /* blocks of consecutive lines */
                size_t b = 0;
                while (b < pend_len) {
                    size_t e = b + 1;
                    while (e < pend_len &&
                           pieces->items[pend[e]].start_line == pieces->items[pend[e - 1]].end_line + 1)
                        e++;
                    int block_start = pieces->items[pend[b]].start_line;
                    int block_end = pieces->items[pend[e - 1]].end_line;
                    int first_block = b == 0;
                    int all_closers = 1, has_annotation = 0;
                    for (size_t k = b; k < e; k++) {
                        if (pieces->items[pend[k]].attach != A_CLOSER) all_closers = 0;
                        if (pieces->items[pend[k]].attach == A_ANNOTATION) has_annotation = 1;
                    }
                    int to_previous = next == NULL || (first_block && previous != NULL && all_closers);
                    if (previous != NULL && next != NULL && first_block && !to_previous) {
                        int touches_previous = block_start == previous->end_line + 1;
                        int follow = e < pend_len ? pieces->items[pend[e]].start_line : next->start_line;
                        to_previous = touches_previous && follow > block_end + 1 && !has_annotation;
                    }
                    if (next == NULL || (to_previous && previous != NULL)) {
                        if (previous != NULL && block_end > previous->end_line) previous->end_line = block_end;
                    } else if (block_start < next->start_line) {
                        next->start_line = block_start;
                    }
                    b = e;
                }
            }
            for (size_t k = 0; k < pend_len; k++) piece_free(&pieces->items[pend[k]]);
            pend_len = 0;
        }
        if (next != NULL) {
            if (PUSH(*decls, *next) < 0) { rc = nomem(ctx); break; }
            memset(next, 0, sizeof *next); /* ownership moved */
        }
    }
    (void)pending_from;
    (void)pending_len;
    free(pend);
    return rc;
}

/* _group: consecutive groupable declarations of one kind and scope. */
static int group(Ctx *ctx, PieceVec *decls, PieceVec *groups) {
    for (size_t i = 0; i < decls->len; i++) {
        Piece *piece = &decls->items[i];
        Piece *last = groups->len ? &groups->items[groups->len - 1] : NULL;
        if (last != NULL && kind_groupable(piece->kind) && piece->kind == last->kind && piece->scope == last->scope &&
            piece->start_line == last->end_line + 1) {
            last->end_line = piece->end_line;
            for (size_t k = 0; k < piece->node_types.len; k++) CHECK(types_add(ctx, &last->node_types, piece->node_types.items[k]));
            CHECK(facts_extend(ctx, &last->symbols, &piece->symbols));
            CHECK(facts_extend(ctx, &last->refs, &piece->refs));
            piece_free(piece);
            continue;
        }
        if (PUSH(*groups, *piece) < 0) return nomem(ctx);
        memset(piece, 0, sizeof *piece);
    }
    return 0;
}

/* ----------------------------------------------------------- captures */
static int by_capture(const void *a, const void *b) {
    const Capture *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->kind - y->kind;
}

/* Every named node of a captured type, as the Python query finds them.
 * Walks the subtrees with an explicit stack (deeply nested expressions must
 * not overflow the C stack) and applies aliases exactly as TSTreeCursor
 * does: a child's alias comes from its parent's production, indexed by the
 * count of non-extra children before it. */
typedef struct {
    Subtree parent;
    uint32_t index, structural, position, end;
    const TSSymbol *aliases;
} Frame;

/* Words after which a `.` may still begin an expression (and so a base
 * call): GDScript keywords that precede an expression. */
#define KEYWORD(text) {text, sizeof(text) - 1}
static const struct {
    const char *text;
    uint32_t len;
} EXPRESSION_KEYWORDS[] = {KEYWORD("return"), KEYWORD("and"),   KEYWORD("or"),    KEYWORD("not"),  KEYWORD("in"),
                           KEYWORD("is"),     KEYWORD("as"),    KEYWORD("await"), KEYWORD("yield"), KEYWORD("if"),
                           KEYWORD("elif"),   KEYWORD("else"),  KEYWORD("while"), KEYWORD("for"),  KEYWORD("match"),
                           KEYWORD("assert"), KEYWORD("when"),  {NULL, 0}};
#undef KEYWORD

static int dot_may_start_base_call(const unsigned char *src, uint32_t dot) {
    unsigned char before = src[dot - 1];
    if (before == ')' || before == ']' || before == '}' || before == '"' || before == '\'') return 0;
    if (!is_word(before)) return 1;
    switch (before) { /* the last letters of the keywords: anything else is an attribute */
    case 'n': case 'd': case 'r': case 't': case 's': case 'f': case 'e': case 'h': break;
    default: return 0;
    }
    /* The word ending at the dot, when it has 2 to 6 characters (the
     * keywords' lengths); longer words are attributes. */
    uint32_t n = 1;
    while (n <= 6 && n < dot && is_word(src[dot - 1 - n])) n++;
    if (n < 2 || n > 6) return 0;
    const unsigned char *word = src + dot - n;
    for (int k = 0; EXPRESSION_KEYWORDS[k].text != NULL; k++)
        if (EXPRESSION_KEYWORDS[k].len == n && (unsigned char)EXPRESSION_KEYWORDS[k].text[0] == word[0] &&
            memcmp(EXPRESSION_KEYWORDS[k].text, word, n) == 0)
            return 1;
    /* A word after a multi-byte character is a non-ASCII identifier: such a
     * file is left to Python anyway (its code is not ASCII). */
    return 0;
}


typedef VEC(Frame) FrameVec;
typedef VEC(uint32_t) OffsetVec;
static FrameVec STACK_SCRATCH;
static OffsetVec TRIGGER_SCRATCH;

static int collect_captures(Ctx *ctx, const TSTree *tree, CaptureVec *out) {
    const TSLanguage *language = tree->language;
    Subtree root = tree->root;
    FrameVec stack;
    BORROW(stack, STACK_SCRATCH);
    /* Every captured node holds a trigger byte: `#` (comments and regions),
     * a quote (strings, StringName and NodePath literals), `$` or `%` (node
     * paths), the `aw` of `await`, or the `.` of a base call, so a subtree
     * whose bytes hold no trigger holds no capture and is not walked, and a
     * parent is left as soon as no trigger remains before its end.
     * A base call's `.` begins an expression: a `.` right after a word
     * character, a closing bracket or a quote is an attribute access (or a
     * decimal point), unless the word is a keyword; every other `.` counts
     * as a trigger.  The walk meets subtrees in increasing start order, so
     * one cursor into the sorted trigger positions serves the whole walk. */
    OffsetVec triggers;
    BORROW(triggers, TRIGGER_SCRATCH);
    {
        const unsigned char *src = ctx->src;
        const uint32_t len = ctx->len;
        for (uint32_t base = 0; base < len; base += 64) {
            size_t block = len - base < 64 ? len - base : 64;
            for (uint64_t bits = class_bits_in(src + base, block, len - base, CC_TRIGGER); bits; bits &= bits - 1) {
                uint32_t i = base + (uint32_t)__builtin_ctzll(bits);
                unsigned char c = src[i];
                if (c == 'a' && !(i + 5 <= len && src[i + 1] == 'w' && src[i + 2] == 'a' && src[i + 3] == 'i' &&
                                  src[i + 4] == 't'))
                    continue;
                if (c == '.' && i > 0 && !dot_may_start_base_call(src, i)) continue;
                if (PUSH(triggers, i) < 0) return VFREE(stack), VFREE(triggers), nomem(ctx);
            }
        }
        if (PUSH(triggers, UINT32_MAX) < 0) return VFREE(stack), VFREE(triggers), nomem(ctx);
    }
    size_t next_trigger = 0;
    if (ts_subtree_child_count(root) > 0) {
        uint32_t padding = ts_subtree_padding(root).bytes;
        Frame top = {root, 0, 0, padding, padding + ts_subtree_size(root).bytes,
                     ts_language_alias_sequence(language, ts_subtree_production_id(root))};
        if (PUSH(stack, top) < 0) return VFREE(stack), VFREE(triggers), nomem(ctx);
    }
    while (stack.len) {
        Frame *frame = &stack.items[stack.len - 1];
        uint32_t count = ts_subtree_child_count(frame->parent);
        if (frame->index >= count) {
            stack.len--;
            continue;
        }
        const Subtree *children = ts_subtree_children(frame->parent);
        Subtree child = children[frame->index];
        uint32_t start = frame->position, end = start + ts_subtree_size(child).bytes;
        while (triggers.items[next_trigger] < start) next_trigger++;
        const uint32_t next = triggers.items[next_trigger];
        if (next >= frame->end) { /* no trigger left in the parent: neither are captures */
            stack.len--;
            continue;
        }
        TSSymbol alias = 0;
        if (!ts_subtree_extra(child)) {
            if (frame->aliases) alias = frame->aliases[frame->structural];
            frame->structural++;
        }
        frame->index++;
        frame->position = end;
        if (frame->index < count) frame->position += ts_subtree_padding(children[frame->index]).bytes;
        if (next >= end && end > start) continue; /* holds no trigger: is no capture and holds none */
        TSSymbol symbol = alias ? alias : ts_subtree_symbol(child);
        int kind = symbol < S.symbol_count ? S.capture_of_symbol[symbol] : C_NONE;
        if (kind != C_NONE) {
            Capture c = {start, end, kind};
            if (PUSH(*out, c) < 0) return VFREE(stack), VFREE(triggers), nomem(ctx);
        }
        if (ts_subtree_child_count(child) > 0 && next < end) {
            Frame inner = {child, 0, 0, start, end, ts_language_alias_sequence(language, ts_subtree_production_id(child))};
            if (PUSH(stack, inner) < 0) return VFREE(stack), VFREE(triggers), nomem(ctx);
        }
    }
    GIVE_BACK(stack, STACK_SCRATCH);
    GIVE_BACK(triggers, TRIGGER_SCRATCH);
    /* Pre-order is sorted by start already, except that a parent comes before
     * a child starting at the same byte: an insertion sort is linear here. */
    Capture *items = out->items;
    for (size_t i = 1; i < out->len; i++) {
        Capture moving = items[i];
        size_t j = i;
        while (j > 0 && by_capture(&items[j - 1], &moving) > 0) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = moving;
    }
    return 0;
}

/* ---------------------------------------------------------- candidates */
typedef VEC(int) IntVec;

/* Bump allocator for the strings one file's candidates need (never moves a
 * string once written: candidates point into it). */
typedef struct Block {
    struct Block *next;
    size_t used, size;
    char data[];
} Block;

static char *pool_alloc(Ctx *ctx, size_t n) {
    Block *head = ctx->pool;
    if (head == NULL || head->size - head->used < n) {
        /* The first block fits Python's small-object allocator (<= 512 bytes
         * with its header); later ones grow. */
        size_t size = head == NULL ? 480 - sizeof(Block) : head->size * 4;
        if (size < n) size = n;
        Block *block = malloc(sizeof(Block) + size);
        if (block == NULL) return nomem(ctx), NULL;
        block->next = head;
        block->used = 0;
        block->size = size;
        ctx->pool = head = block;
    }
    char *out = head->data + head->used;
    head->used += n;
    return out;
}

typedef struct {
    int start, end;
} Run;
typedef VEC(Run) RunVec;

typedef struct {
    Ctx *ctx;
    const unsigned char *scan; /* one ASCII byte per character of code_text */
    int n;
    const unsigned char *code; /* code_text's bytes */
    uint32_t code_len;
    const int *c2b; /* character -> byte offset in code; NULL when ASCII */
    CandVec symbols, refs, apis;
    IntVec handled;
    RunVec runs; /* maximal runs of word characters in scan */
    int seq;
} Ex;

/* A candidate value: bytes (scan, source or pool) or a Python str. */
static int add(Ex *ex, CandVec *vec, int rank, int pos, const char *s, size_t len) {
    if (s == NULL) return -1;
    Cand c = {rank, pos, ex->seq++, (uint32_t)len, s, NULL};
    if (PUSH(*vec, c) < 0) return nomem(ex->ctx);
    return 0;
}
#define SCAN(ex, a, b) ((const char *)(ex)->scan + (a)), (size_t)((b) - (a))

static int int_in(IntVec *v, int x) {
    for (size_t i = 0; i < v->len; i++)
        if (v->items[i] == x) return 1;
    return 0;
}
static inline int skip_space(const Ex *ex, int k) {
    const unsigned char *scan = ex->scan;
    const int n = ex->n;
    while (k < n && is_space(scan[k])) k++;
    return k;
}
static inline int ident_end(const Ex *ex, int k) {
    const unsigned char *scan = ex->scan;
    const int n = ex->n;
    while (k < n && is_word(scan[k])) k++;
    return k;
}
static int sigil_before(Ex *ex, int i) {
    if (i == 0) return 0;
    unsigned char c = ex->scan[i - 1];
    return is_word(c) || c == '.' || c == '$' || c == '%' || c == '@' || c == '&' || c == '^';
}

/* Whether the identifier at `start` is the name in `func name(` (R_AFTER_FUNC).
 * Python gates this on `"func" in scan`; without a `func` this finds none,
 * so the gate changes nothing and is left out. */
static int after_func(Ex *ex, int start) {
    int window = start > 16 ? start - 16 : 0;
    int q = start - 1;
    while (q >= window && is_space(ex->scan[q])) q--;
    if (q == start - 1) return 0;
    int f = q - 3;
    if (f < window || memcmp(ex->scan + f, "func", 4) != 0) return 0;
    return f == 0 || !is_word(ex->scan[f - 1]);
}

static int is_type_name(Ex *ex, int start, int end) {
    const char *name = (const char *)ex->scan + start;
    if (wordset_has(&S.singletons, name, end - start)) return 0;
    if (wordset_has(&S.caps_types, name, end - start)) return 1;
    if (!is_upper(ex->scan[start])) return 0;
    for (int i = start; i < end; i++)
        if (is_lower(ex->scan[i])) return 1;
    return 0;
}

/* path.lstrip("$%^").strip("\"'").rsplit("/", 1)[-1].lstrip("%") when it
 * names a node class; NULL otherwise. */
__attribute__((noinline, cold)) static const char *node_path_class(const unsigned char *s, size_t n, size_t *out_len) {
    size_t a = 0, b = n;
    while (a < b && (s[a] == '$' || s[a] == '%' || s[a] == '^')) a++;
    while (a < b && (s[a] == '"' || s[a] == '\'')) a++;
    while (b > a && (s[b - 1] == '"' || s[b - 1] == '\'')) b--;
    size_t last = a;
    for (size_t i = a; i < b; i++)
        if (s[i] == '/') last = i + 1;
    while (last < b && s[last] == '%') last++;
    if (!wordset_has(&S.node_classes, (const char *)s + last, b - last)) return NULL;
    *out_len = b - last;
    return (const char *)s + last;
}

/* _reference_call: the first string argument of preload/load/get_node... */
__attribute__((noinline, cold)) static int reference_call(Ex *ex, int start, int paren_end, int node_call) {
    uint32_t p = ex->c2b ? (uint32_t)ex->c2b[paren_end] : (uint32_t)paren_end;
    const unsigned char *code = ex->code, *end = ex->code + ex->code_len;
    uint32_t cp;
    while (p < ex->code_len) {
        int l = utf8_next(code + p, end, &cp);
        if (!is_unicode_space(cp)) break;
        p += l;
    }
    if (p >= ex->code_len || (code[p] != '"' && code[p] != '\'')) return 0;
    unsigned char q = code[p];
    uint32_t content = ++p;
    for (;;) {
        if (p >= ex->code_len || code[p] == '\n') return 0;
        if (code[p] == q) break;
        if (code[p] == '\\') {
            if (p + 1 >= ex->code_len || code[p + 1] == '\n') return 0;
            p += 1 + utf8_len(code[p + 1]);
        } else {
            p += utf8_len(code[p]);
        }
    }
    if (p == content) return 0;
    if (add(ex, &ex->refs, 0, start, (const char *)code + content, p - content) < 0) return -1;
    if (node_call) {
        size_t len;
        const char *node_class = node_path_class(code + content, p - content, &len);
        if (node_class != NULL && add(ex, &ex->symbols, 0, start, node_class, len) < 0) return -1;
    }
    return 0;
}

enum { CAT_CLASS_CALL, CAT_CLASS_ACCESS, CAT_METHOD_CALL, CAT_BARE_CALL };

/* scan[a0:a1] + sep + scan[b0:b1], written to the pool. */
static int add_joined(Ex *ex, CandVec *vec, int rank, int pos, int a0, int a1, const char *sep, int b0, int b1) {
    size_t sl = strlen(sep), n = (size_t)(a1 - a0) + sl + (size_t)(b1 - b0);
    char *out = pool_alloc(ex->ctx, n);
    if (out == NULL) return -1;
    memcpy(out, ex->scan + a0, a1 - a0);
    memcpy(out + (a1 - a0), sep, sl);
    memcpy(out + (a1 - a0) + sl, ex->scan + b0, b1 - b0);
    return add(ex, vec, rank, pos, out, n);
}

/* R_TYPED_COLLECTION at the run [i, j): `Array` or `Dictionary` then `\s*[`
 * is always a whole run of word characters, not preceded by a word
 * character or `.`; the symbol is written as in Python, whitespace
 * normalised: f"{name}[{', '.join(part.strip() for part in inner.split(','))}]". */
__attribute__((noinline, cold)) static int typed_at(Ex *ex, int i, int j) {
    const unsigned char *scan = ex->scan;
    const int n = ex->n;
    int name_len = j - i;
    if (!((name_len == 5 && memcmp(scan + i, "Array", 5) == 0) ||
          (name_len == 10 && memcmp(scan + i, "Dictionary", 10) == 0)) ||
        (i > 0 && scan[i - 1] == '.'))
        return 0;
    int k = skip_space(ex, i + name_len);
    if (k >= n || scan[k] != '[') return 0;
    int inner = k + 1, e = inner;
    while (e < n && scan[e] != '[' && scan[e] != ']' && scan[e] != '\n') e++;
    if (e - inner > 200 || e >= n || scan[e] != ']') return 0;
    /* f"{name}[{', '.join(part.strip() for part in inner.split(','))}]" */
    char *buf = pool_alloc(ex->ctx, (size_t)name_len + 2 + 2 * (size_t)(e - inner) + 2);
    if (buf == NULL) return -1;
    int w = name_len;
    memcpy(buf, scan + i, name_len);
    buf[w++] = '[';
    int part = inner;
    for (int c = inner; c <= e; c++) {
        if (c < e && scan[c] != ',') continue;
        int a = part, b = c;
        while (a < b && is_space(scan[a])) a++;
        while (b > a && is_space(scan[b - 1])) b--;
        if (part != inner) {
            buf[w++] = ',';
            buf[w++] = ' ';
        }
        memcpy(buf + w, scan + a, b - a);
        w += b - a;
        part = c + 1;
    }
    buf[w++] = ']';
    if (add(ex, &ex->symbols, 0, i, buf, (size_t)w) < 0) return -1;
    return 0;
}

/* R_HEAD at the run [i, j): a chain head followed by `.member` and/or `(`
 * (dotted accesses and bare calls in one pattern); a match moves *resume
 * to its end, where the next head may start. */
static int head_at(Ex *ex, int i, int j, int *resume) {
    const unsigned char *scan = ex->scan;
    const int n = ex->n;
    if (!is_ident_start(scan[i]) || sigil_before(ex, i)) return 0;
    int k = skip_space(ex, j);
    if (k >= n || (scan[k] != '.' && scan[k] != '(')) return 0;
    int member = -1, member_end = -1, paren = 0, match_end = j;
    if (scan[k] == '.') {
        int m = skip_space(ex, k + 1);
        if (m < n && is_ident_start(scan[m])) {
            member = m;
            member_end = ident_end(ex, m);
            match_end = member_end;
        }
    }
    int p = skip_space(ex, match_end);
    if (p < n && scan[p] == '(') {
        paren = 1;
        match_end = p + 1;
    }
    *resume = match_end;
    const char *head = (const char *)scan + i;
    if (member < 0) {
        if (!paren) return 0;
        if (wordset_has(&S.known_calls, head, j - i)) {
            if (!after_func(ex, i) && add(ex, &ex->apis, CAT_BARE_CALL, i, SCAN(ex, i, j)) < 0)
                return -1;
        } else if (wordset_has(&S.reference_calls, head, j - i) &&
                   reference_call(ex, i, match_end, wordset_has(&S.node_path_calls, head, j - i)) < 0) {
            return -1;
        }
        return 0;
    }
    if (PUSH(ex->handled, member) < 0) return nomem(ex->ctx);
    int upper = is_upper(scan[i]);
    int local = upper && is_local_type(ex->ctx, head, (size_t)(j - i));
    const char *member_name = (const char *)scan + member;
    if (upper && !local) {
        if (add_joined(ex, &ex->apis, paren ? CAT_CLASS_CALL : CAT_CLASS_ACCESS, i, i, j, ".", member, member_end) < 0)
            return -1;
    } else if (paren) {
        if ((j - i == 4 && memcmp(head, "self", 4) == 0) || upper) {
            if (wordset_has(&S.known_calls, member_name, member_end - member) &&
                add(ex, &ex->apis, CAT_BARE_CALL, member, SCAN(ex, member, member_end)) < 0)
                return -1;
        } else if (!wordset_has(&S.stop_methods, member_name, member_end - member) &&
                   add_joined(ex, &ex->apis, CAT_METHOD_CALL, i, i, j, ".", member, member_end) < 0) {
            return -1;
        }
    }
    return 0;
}

static int extract(Ex *ex) {
    const unsigned char *scan = ex->scan;
    int n = ex->n;
    ex->runs.len = 0;
    if (ex->runs.cap < (size_t)n / 2 + 1) {
        /* At most one run per two characters: no growth inside the loop. */
        Run *grown = realloc(ex->runs.items, ((size_t)n / 2 + 1) * sizeof(Run));
        if (grown == NULL) return nomem(ex->ctx);
        ex->runs.items = grown;
        ex->runs.cap = (size_t)n / 2 + 1;
    }
    {
        /* Run starts and ends are the edges of the word-character bit mask. */
        Run *out = ex->runs.items;
        size_t starts = 0, ends = 0;
        uint64_t carry = 0; /* whether the byte before the block is a word byte */
        for (int base = 0; base < n; base += 64) {
            size_t block = n - base < 64 ? (size_t)(n - base) : 64;
            uint64_t word = class_bits(scan + base, block, CC_WORD);
            uint64_t before = (word << 1) | carry;
            uint64_t edges = word ^ before; /* a start where word, an end where not */
            if (block < 64) edges &= (1ull << block) - 1;
            for (; edges; edges &= edges - 1) {
                int bit = __builtin_ctzll(edges);
                if (word >> bit & 1) out[starts++].start = base + bit;
                else out[ends++].end = base + bit;
            }
            carry = block == 64 ? word >> 63 : 0;
        }
        if (ends < starts) out[ends++].end = n;
        ex->runs.len = starts;
    }
    Run *runs = ex->runs.items;
    size_t run_count = ex->runs.len;
    const unsigned punct = punct_present(scan, (size_t)n);
    /* R_ANNOTATION */
    for (const unsigned char *at = (punct & P_AT) ? memchr(scan, '@', n) : NULL; at != NULL;
         at = (at - scan + 1 < n) ? memchr(at + 1, '@', n - (at - scan) - 1) : NULL) {
        int i = (int)(at - scan);
        if (i + 1 >= n || !is_ident_start(scan[i + 1])) continue;
        int j = ident_end(ex, i + 1);
        if (add(ex, &ex->symbols, 0, i, SCAN(ex, i, j)) < 0) return -1;
    }
    const int has_dot = (punct & P_DOT) != 0;
    const int heads = (punct & (P_DOT | P_OPEN)) != 0; /* R_HEAD needs `.` or `(` */
    int resume = 0;
    /* One pass over the runs for R_PASCAL, R_TYPED_COLLECTION and R_HEAD.
     * Candidates sort by position, arrival breaking ties; at one position
     * the type name comes before the typed collection as in Python, and no
     * other pattern of this pass starts where those do. */
    for (size_t r = 0; r < run_count; r++) {
        int i = runs[r].start, j = runs[r].end;
        /* R_PASCAL: type names */
        if (is_upper(scan[i]) && !sigil_before(ex, i) && is_type_name(ex, i, j) && !after_func(ex, i) &&
            add(ex, &ex->symbols, 0, i, SCAN(ex, i, j)) < 0)
            return -1;
        /* R_TYPED_COLLECTION */
        if (((j - i == 5 && scan[i] == 'A') || (j - i == 10 && scan[i] == 'D')) && typed_at(ex, i, j) < 0) return -1;
        if (heads && i >= resume && head_at(ex, i, j, &resume) < 0) return -1;
    }
    if (!has_dot) return 0;
    /* R_RECV_CALL: f(args).method(; it needs `)` then `.` (R_CLOSE_DOT). */
    int close_dot = 0;
    for (const unsigned char *close = (punct & P_CLOSE) ? memchr(scan, ')', n) : NULL; close != NULL && !close_dot;
         close = memchr(close + 1, ')', n - (close - scan) - 1)) {
        int k = skip_space(ex, (int)(close - scan) + 1);
        close_dot = k < n && scan[k] == '.';
        if (close - scan + 1 >= n) break;
    }
    if (close_dot) {
        resume = 0;
        for (size_t r = 0; r < run_count; r++) {
            int i = runs[r].start, j = runs[r].end;
            if (i < resume || !(is_lower(scan[i]) || scan[i] == '_') || sigil_before(ex, i)) continue;
            int k = skip_space(ex, j);
            if (k >= n || scan[k] != '(') continue;
            k++;
            int items = 0, ok = 1;
            while (items < 200 && k < n && scan[k] != ')') {
                if (scan[k] == '\n') {
                    ok = 0;
                    break;
                }
                if (scan[k] == '(') {
                    int e = k + 1;
                    while (e < n && scan[e] != '(' && scan[e] != ')' && scan[e] != '\n') e++;
                    if (e - (k + 1) > 200 || e >= n || scan[e] != ')') {
                        ok = 0;
                        break;
                    }
                    k = e + 1;
                } else {
                    k++;
                }
                items++;
            }
            if (!ok || k >= n || scan[k] != ')') continue;
            k = skip_space(ex, k + 1);
            if (k >= n || scan[k] != '.') continue;
            int m = skip_space(ex, k + 1);
            if (m >= n || !is_ident_start(scan[m])) continue;
            int me = ident_end(ex, m);
            int p = skip_space(ex, me);
            if (p >= n || scan[p] != '(') continue;
            resume = p + 1;
            if (wordset_has(&S.reference_calls, (const char *)scan + i, j - i)) continue;
            if (PUSH(ex->handled, m) < 0) return nomem(ex->ctx);
            if (!wordset_has(&S.stop_methods, (const char *)scan + m, me - m) &&
                add_joined(ex, &ex->apis, CAT_METHOD_CALL, i, i, j, "().", m, me) < 0)
                return -1;
        }
    }
    /* R_MEMBER_CALL: .method( anywhere, known engine calls only */
    for (int i = 0; i < n; i++) {
        const unsigned char *dot = memchr(scan + i, '.', n - i);
        if (dot == NULL) break;
        i = (int)(dot - scan);
        int m = skip_space(ex, i + 1);
        if (m >= n || !is_ident_start(scan[m])) continue;
        int me = ident_end(ex, m);
        int p = skip_space(ex, me);
        if (p >= n || scan[p] != '(') continue;
        if (wordset_has(&S.known_calls, (const char *)scan + m, me - m) && !int_in(&ex->handled, m) &&
            !int_in(&ex->handled, i) && add(ex, &ex->apis, CAT_BARE_CALL, m, SCAN(ex, m, me)) < 0)
            return -1;
        i = p; /* resume after the paren */
    }
    return 0;
}

static int by_rank_pos_seq(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->pos != y->pos) return x->pos - y->pos;
    return x->seq - y->seq;
}

/* Candidate values repeat across chunks and files (Vector2, @export,
 * Input.is_action_pressed...): one shared str per value, from a bounded
 * table that is emptied when full.  Values are immutable, so sharing them
 * changes nothing but allocations. */
#define SHARED_CAPACITY 1024 /* slots (24 KB: stays in cache); emptied at half full */
static struct {
    uint32_t hash, len;
    const char *utf8; /* the str's own UTF-8 buffer (ASCII: its data) */
    PyObject *text;   /* NULL: empty slot */
} SHARED[SHARED_CAPACITY];
static uint32_t shared_used;

static PyObject *shared_str(const char *s, size_t n) {
    if (n > 64) return utf8_str(s, n, "replace");
    uint32_t hash = hash_bytes(s, n);
    for (uint32_t h = hash & (SHARED_CAPACITY - 1);; h = (h + 1) & (SHARED_CAPACITY - 1)) {
        PyObject *text = SHARED[h].text;
        if (text == NULL) break;
        if (SHARED[h].hash == hash && SHARED[h].len == n && memcmp(SHARED[h].utf8, s, n) == 0)
            return Py_NewRef(text);
    }
    PyObject *text = utf8_str(s, n, "replace");
    if (text == NULL) return NULL;
    if (shared_used >= SHARED_CAPACITY / 2) {
        for (uint32_t i = 0; i < SHARED_CAPACITY; i++) Py_CLEAR(SHARED[i].text);
        shared_used = 0;
    }
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
    if (utf8 == NULL) {
        Py_DECREF(text);
        return NULL;
    }
    uint32_t h = hash & (SHARED_CAPACITY - 1);
    while (SHARED[h].text != NULL) h = (h + 1) & (SHARED_CAPACITY - 1);
    SHARED[h].hash = hash;
    SHARED[h].len = (uint32_t)len;
    SHARED[h].utf8 = utf8;
    SHARED[h].text = Py_NewRef(text);
    shared_used++;
    return text;
}

/* Values in (rank, position, arrival) order, first occurrence kept. */
static PyObject *unique_tuple(Ctx *ctx, CandVec *vec) {
    size_t n = vec->len;
    if (n == 0) return Py_NewRef(S.empty_tuple);
    Cand *items = vec->items;
    if (n > 16) {
        qsort(items, n, sizeof(Cand), by_rank_pos_seq);
    } else {
        for (size_t i = 1; i < n; i++) { /* insertion sort: few, nearly sorted */
            Cand moving = items[i];
            size_t j = i;
            while (j > 0 && by_rank_pos_seq(&items[j - 1], &moving) > 0) {
                items[j] = items[j - 1];
                j--;
            }
            items[j] = moving;
        }
    }
    size_t kept = 0;
    if (n <= 24) {
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            for (; k < kept; k++)
                if (items[k].len == items[i].len && memcmp(items[k].s, items[i].s, items[i].len) == 0) break;
            if (k == kept) items[kept++] = items[i];
        }
    } else {
        uint32_t capacity = 64;
        while (capacity < n * 2) capacity *= 2;
        int32_t *slots = malloc(capacity * sizeof(int32_t));
        if (slots == NULL) return nomem(ctx), NULL;
        memset(slots, 0xff, capacity * sizeof(int32_t));
        for (size_t i = 0; i < n; i++) {
            Cand c = items[i];
            uint32_t h = hash_bytes(c.s, c.len) & (capacity - 1);
            int duplicate = 0;
            for (; slots[h] >= 0; h = (h + 1) & (capacity - 1))
                if (items[slots[h]].len == c.len && memcmp(items[slots[h]].s, c.s, c.len) == 0) {
                    duplicate = 1;
                    break;
                }
            if (duplicate) continue;
            items[kept] = c;
            slots[h] = (int32_t)kept++;
        }
        free(slots);
    }
    PyObject *tuple = PyTuple_New((Py_ssize_t)kept);
    if (tuple == NULL) return ctx->failed = 1, NULL;
    for (size_t i = 0; i < kept; i++) {
        PyObject *value = items[i].obj ? Py_NewRef(items[i].obj) : shared_str(items[i].s, items[i].len);
        if (value == NULL) {
            Py_DECREF(tuple);
            return ctx->failed = 1, NULL;
        }
        PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, value);
    }
    return tuple;
}

/* ------------------------------------------------------------- context */
/* Members a chunk of `scope` can name (outer scopes first, an inner class's
 * member shadows an outer one, as dict.update), hashed by name. */
__attribute__((noinline, cold)) static MemberVec *visible_members(Ctx *ctx, int scope_index) {
    Scope *scope = &ctx->scopes.items[scope_index];
    if (scope->visible_ready) return &scope->visible;
    int chain[256], depth = 0;
    for (int s = scope_index; s >= 0 && depth < 256; s = s ? ctx->scopes.items[s].parent : -1) chain[depth++] = s;
    MemberVec merged = {0};
    for (int d = depth - 1; d >= 0; d--) {
        MemberVec *members = &ctx->scopes.items[chain[d]].members;
        for (size_t i = 0; i < members->len; i++) {
            size_t k = 0;
            for (; k < merged.len; k++)
                if (str_eq(merged.items[k].name, members->items[i].name)) break;
            if (k < merged.len) merged.items[k].lines = members->items[i].lines; /* dict.update keeps the slot */
            else if (PUSH(merged, members->items[i]) < 0) return VFREE(merged), nomem(ctx), NULL;
        }
    }
    uint32_t capacity = 16;
    while (capacity < merged.len * 2 + 2) capacity *= 2;
    int32_t *table = malloc(capacity * sizeof(int32_t));
    if (table == NULL) return VFREE(merged), nomem(ctx), NULL;
    memset(table, 0xff, capacity * sizeof(int32_t));
    uint64_t lengths = 0;
    for (size_t i = 0; i < merged.len; i++) {
        uint32_t h = hash_word(merged.items[i].name.s, merged.items[i].name.len) & (capacity - 1);
        while (table[h] >= 0) h = (h + 1) & (capacity - 1);
        table[h] = (int32_t)i;
        uint32_t len = merged.items[i].name.len;
        lengths |= 1ull << (len < 63 ? len : 63);
    }
    scope = &ctx->scopes.items[scope_index];
    scope->visible = merged;
    scope->visible_table = table;
    scope->visible_lengths = lengths;
    scope->visible_capacity = capacity;
    scope->visible_ready = 1;
    return &scope->visible;
}

static int by_range(const void *a, const void *b) {
    const LineRange *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* surrounding_context: header lines, enclosing class headers and the
 * declarations of the members the chunk's code names (a member name occurs
 * with no word character on either side: it is one of the scan's runs). */
static PyObject *context_text(Ctx *ctx, Ex *ex, Piece *g) {
    RangeVec *ranges = &ctx->ranges;
    ranges->len = 0;
    Str own_name = g->kind == K_FUNCTION ? g->name : (Str){NULL, 0};
    MemberVec *visible = visible_members(ctx, g->scope);
    if (visible == NULL) return NULL;
    Scope *scope = &ctx->scopes.items[g->scope];
    if (visible->len) {
        uint32_t mask = scope->visible_capacity - 1;
        for (size_t r = 0; r < ex->runs.len; r++) {
            const char *word = (const char *)ex->scan + ex->runs.items[r].start;
            size_t size = (size_t)(ex->runs.items[r].end - ex->runs.items[r].start);
            if (!(scope->visible_lengths & (1ull << (size < 63 ? size : 63)))) continue;
            for (uint32_t h = hash_word(word, size) & mask; scope->visible_table[h] >= 0; h = (h + 1) & mask) {
                Member *m = &visible->items[scope->visible_table[h]];
                if ((size_t)m->name.len != size || memcmp(m->name.s, word, size) != 0) continue;
                if (m->used_by != ctx->chunk_serial && !(own_name.s != NULL && str_eq(own_name, m->name))) {
                    m->used_by = ctx->chunk_serial;
                    if (PUSH(*ranges, m->lines) < 0) return nomem(ctx), NULL;
                }
                break;
            }
        }
    }
    for (size_t i = 0; i < ctx->header_lines.len; i++)
        if (PUSH(*ranges, ctx->header_lines.items[i]) < 0) return nomem(ctx), NULL;
    for (int s = g->scope; s > 0; s = ctx->scopes.items[s].parent)
        if (ctx->scopes.items[s].has_header && PUSH(*ranges, ctx->scopes.items[s].header) < 0) return nomem(ctx), NULL;
    /* outside the chunk, unique, sorted */
    size_t kept = 0;
    for (size_t i = 0; i < ranges->len; i++)
        if (ranges->items[i].start < g->start_line || ranges->items[i].end > g->end_line)
            ranges->items[kept++] = ranges->items[i];
    if (kept > 16) {
        qsort(ranges->items, kept, sizeof(LineRange), by_range);
    } else {
        for (size_t i = 1; i < kept; i++) { /* insertion sort: a handful of ranges */
            LineRange moving = ranges->items[i];
            size_t j = i;
            while (j > 0 && by_range(&ranges->items[j - 1], &moving) > 0) {
                ranges->items[j] = ranges->items[j - 1];
                j--;
            }
            ranges->items[j] = moving;
        }
    }
    size_t unique = 0;
    for (size_t i = 0; i < kept; i++)
        if (!unique || by_range(&ranges->items[unique - 1], &ranges->items[i]) != 0) ranges->items[unique++] = ranges->items[i];
    ranges->len = unique;
    if (unique == 0) return Py_NewRef(S.empty_str);
    /* Chunks of one class usually share their context: reuse the string. */
    for (size_t c = 0; c < ctx->contexts.len; c++) {
        ContextEntry *entry = &ctx->contexts.items[c];
        if (entry->count == unique && memcmp(entry->ranges, ranges->items, unique * sizeof(LineRange)) == 0)
            return Py_NewRef(entry->text);
    }
    size_t total = 0;
    for (size_t i = 0; i < unique; i++)
        total += ctx->ends[ranges->items[i].end] - line_start(ctx, ranges->items[i].start) + 1;
    char *buf = malloc(total);
    if (buf == NULL) return nomem(ctx), NULL;
    size_t w = 0;
    for (size_t i = 0; i < unique; i++) {
        uint32_t a = line_start(ctx, ranges->items[i].start), b = ctx->ends[ranges->items[i].end];
        if (i) buf[w++] = '\n';
        if (b > a) {
            memcpy(buf + w, ctx->src + a, b - a);
            w += b - a;
        }
    }
    PyObject *text = utf8_str(buf, w, "replace");
    free(buf);
    if (text == NULL) return ctx->failed = 1, NULL;
    ContextEntry entry = {malloc(unique * sizeof(LineRange)), unique, text};
    if (entry.ranges == NULL || PUSH(ctx->contexts, entry) < 0) {
        free(entry.ranges);
        Py_DECREF(text);
        return nomem(ctx), NULL;
    }
    memcpy(entry.ranges, ranges->items, unique * sizeof(LineRange));
    return Py_NewRef(text); /* one reference stays with the cache */
}

/* ------------------------------------------------------------- chunks */
enum { F_MASK = 1, F_DOLLAR = 2 };

static int flag_range(unsigned char *flags, uint32_t sb, uint32_t eb, uint32_t start, uint32_t end, unsigned char bit) {
    if (start < sb) start = sb;
    if (end > eb) end = eb;
    for (uint32_t b = start; b < end; b++) flags[b - sb] |= bit;
    return end > start;
}

/* A Chunk or Span without running __init__: the instance's slots are
 * written directly, which is what the frozen dataclass's __init__ does
 * through object.__setattr__.  Takes the references in `values`. */
static PyObject *make_object(PyObject *cls, const Py_ssize_t *offsets, PyObject **values, int count) {
    PyObject *obj = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (obj == NULL) {
        for (int i = 0; i < count; i++) Py_XDECREF(values[i]);
        return NULL;
    }
    for (int i = 0; i < count; i++) *(PyObject **)((char *)obj + offsets[i]) = values[i];
    return obj;
}

/* Chunks and spans hold only strings, ints, tuples of strings and a span:
 * they cannot be part of a reference cycle, so the cyclic GC need not
 * track them (CPython untracks such tuples the same way). */
static void untrack(PyObject *obj) {
    if (PyObject_IS_GC(obj) && PyObject_GC_IsTracked(obj)) PyObject_GC_UnTrack(obj);
}

typedef struct {
    int scope, kind, count;
} Ordinal;

__attribute__((noinline, cold)) static int resource_paths(Ctx *ctx, Ex *ex, int pos, uint32_t cs, uint32_t ce) {
    /* R_RESOURCE_PATH = (?:res|user|uid)://[^\s"'()\[\]{},;]* */
    static const char *schemes[] = {"res://", "user://", "uid://"};
    const unsigned char *src = ctx->src;
    uint32_t p = cs;
    while (p < ce) {
        int matched = 0;
        for (int s = 0; s < 3 && !matched; s++) {
            size_t l = strlen(schemes[s]);
            if (p + l > ce || memcmp(src + p, schemes[s], l) != 0) continue;
            uint32_t e = p + (uint32_t)l;
            while (e < ce) {
                unsigned char c = src[e];
                uint32_t cp;
                int len = utf8_next(src + e, src + ce, &cp);
                if (is_unicode_space(cp) || c == '"' || c == '\'' || c == '(' || c == ')' || c == '[' || c == ']' ||
                    c == '{' || c == '}' || c == ',' || c == ';')
                    break;
                e += len;
            }
            if (add(ex, &ex->refs, 0, pos, (const char *)src + p, e - p) < 0) return -1;
            p = e;
            matched = 1;
        }
        if (!matched) p++;
    }
    return 0;
}

/* Facts of one chunk from its group and the captures that start in it;
 * returns whether any byte of the chunk is masked (-1 on error). */
static int chunk_facts(Ctx *ctx, Ex *ex, Piece *g, CaptureVec *caps, size_t *ci, uint32_t sb, uint32_t eb,
                       const int *b2c, unsigned char *flags) {
#define REL(byte) (b2c ? b2c[(byte) - sb] : (int)((byte) - sb))
    int flagged = 0;
    for (size_t i = 0; i < g->symbols.len; i++)
        if (add(ex, &ex->symbols, 0, REL(g->symbols.items[i].pos), g->symbols.items[i].value.s,
                g->symbols.items[i].value.len) < 0)
            return -1;
    for (size_t i = 0; i < g->refs.len; i++)
        if (add(ex, &ex->refs, 0, REL(g->refs.items[i].pos), g->refs.items[i].value.s, g->refs.items[i].value.len) < 0)
            return -1;
    while (*ci < caps->len && caps->items[*ci].start < sb) (*ci)++;
    while (*ci < caps->len && caps->items[*ci].start < eb) {
        Capture c = caps->items[(*ci)++];
        uint32_t start = c.start, end = c.end > eb ? eb : c.end;
        int pos = REL(start);
        uint32_t cs, ce;
        const char *text = (const char *)ctx->src + start;
        switch (c.kind) {
        case C_MASK:
            flagged |= flag_range(flags, sb, eb, start, end, F_MASK);
            break;
        case C_STRING:
        case C_LITERAL:
        case C_NODE_PATH:
            if (!string_content(ctx->src, ctx->len, start, end, &cs, &ce)) break;
            if (cs < ce) flagged |= flag_range(flags, sb, eb, cs, ce, F_MASK);
            if (c.kind == C_STRING && ce - cs >= 3 && memmem(ctx->src + cs, ce - cs, "://", 3) != NULL) {
                if (resource_paths(ctx, ex, pos, cs, ce) < 0) return -1;
            } else if (c.kind == C_NODE_PATH) {
                if (add(ex, &ex->refs, 0, pos, text, end - start) < 0) return -1;
            }
            break;
        case C_GET_NODE: {
            if (add(ex, &ex->refs, 0, pos, text, end - start) < 0) return -1;
            flagged |= flag_range(flags, sb, eb, start, end, F_DOLLAR);
            if (end - start > 2 && (text[1] == '"' || text[1] == '\''))
                flagged |= flag_range(flags, sb, eb, start + 2, end - 1, F_MASK);
            size_t len;
            const char *node_class = node_path_class(ctx->src + start, end - start, &len);
            if (node_class != NULL && add(ex, &ex->symbols, 0, pos, node_class, len) < 0) return -1;
            break;
        }
        case C_BASE_CALL: {
            /* "." + text[1:].split("(", 1)[0].strip() */
            uint32_t a = start + utf8_len(ctx->src[start]), b = a;
            while (b < end && ctx->src[b] != '(') b++;
            while (a < b && is_space(ctx->src[a])) a++;
            while (b > a && is_space(ctx->src[b - 1])) b--;
            char *value = pool_alloc(ctx, b - a + 1);
            if (value == NULL) return -1;
            value[0] = '.';
            memcpy(value + 1, ctx->src + a, b - a);
            if (add(ex, &ex->apis, CAT_BARE_CALL, pos, value, b - a + 1) < 0) return -1;
            if (PUSH(ex->handled, pos) < 0) return nomem(ctx);
            break;
        }
        case C_AWAIT:
            if (add(ex, &ex->symbols, 0, pos, "await", 5) < 0) return -1;
            break;
        }
    }
    return flagged;
#undef REL
}

static const char *invariant_problem(Ctx *ctx, uint32_t sb, uint32_t eb, uint32_t previous_end, size_t code_chars,
                                     size_t mask_chars) {
    const unsigned char *src = ctx->src;
    if (sb < previous_end) return "overlaps the previous chunk";
    if (!range_blank(src, previous_end, sb)) return "non-blank text before it belongs to no chunk";
    const unsigned char *nl = memchr(src + sb, '\n', eb - sb);
    uint32_t first_end = nl ? (uint32_t)(nl - src) : eb;
    uint32_t last_start = sb;
    for (uint32_t b = eb; b > sb; b--)
        if (src[b - 1] == '\n') {
            last_start = b;
            break;
        }
    if (range_blank(src, sb, first_end) || range_blank(src, last_start, eb)) return "span starts or ends on a blank line";
    if (code_chars != mask_chars) return "code_mask length differs from code_text";
    return NULL;
}

static size_t count_chars(const unsigned char *s, size_t n) {
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) chars++;
    return chars;
}


/* The decimal digits of a positive int, as "%d" writes them (no
 * terminator); returns their count. */
static size_t decimal(char *out, int value) {
    char reversed[12];
    size_t n = 0;
    unsigned v = (unsigned)value;
    do {
        reversed[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = reversed[n - 1 - i];
    return n;
}

/* A growable byte buffer for ids and names. */
typedef VEC(char) Bytes;
static int bytes_add(Bytes *b, const char *s, size_t n) {
    while (b->cap - b->len < n)
        if (grow((void **)&b->items, &b->cap, 1) < 0) return -1;
    memcpy(b->items + b->len, s, n);
    b->len += n;
    return 0;
}

/* Occurrence counts of byte strings (chunk ids), without Python objects. */
typedef struct {
    uint32_t hash, offset, len;
    int count; /* 0: empty slot */
} IdSlot;
typedef struct {
    IdSlot *slots;
    uint32_t capacity, used;
    Bytes keys;
} IdTable;

static void idtable_free(IdTable *t) {
    free(t->slots);
    VFREE(t->keys);
    memset(t, 0, sizeof *t);
}
__attribute__((noinline, cold)) static int idtable_grow(IdTable *t) {
    uint32_t capacity = t->capacity ? t->capacity * 2 : 16;
    IdSlot *slots = calloc(capacity, sizeof(IdSlot));
    if (slots == NULL) return -1;
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i].count) continue;
        uint32_t h = t->slots[i].hash & (capacity - 1);
        while (slots[h].count) h = (h + 1) & (capacity - 1);
        slots[h] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->capacity = capacity;
    return 0;
}
/* Counts one more occurrence of s; returns the count so far (-1: no memory). */
static int idtable_bump(IdTable *t, const char *s, size_t n) {
    if ((t->used + 1) * 2 > t->capacity && idtable_grow(t) < 0) return -1;
    uint32_t hash = hash_bytes(s, n), mask = t->capacity - 1;
    for (uint32_t h = hash & mask;; h = (h + 1) & mask) {
        IdSlot *slot = &t->slots[h];
        if (!slot->count) {
            slot->hash = hash;
            slot->offset = (uint32_t)t->keys.len;
            slot->len = (uint32_t)n;
            if (bytes_add(&t->keys, s, n) < 0) return -1;
            slot->count = 1;
            t->used++;
            return 1;
        }
        if (slot->hash == hash && slot->len == n && memcmp(t->keys.items + slot->offset, s, n) == 0)
            return ++slot->count;
    }
}

/* node_kind strings: one per distinct list of node types in the file. */
static PyObject *node_kind_of(Ctx *ctx, TypeVec *types) {
    if (types->len == 1)
        for (size_t i = 0; i < ctx->kinds.len; i++)
            if (ctx->kinds.items[i].type == types->items[0]) return Py_NewRef(ctx->kinds.items[i].text);
    Bytes joined = {0};
    for (size_t t = 0; t < types->len; t++)
        if ((t && bytes_add(&joined, "+", 1) < 0) || bytes_add(&joined, types->items[t], strlen(types->items[t])) < 0) {
            VFREE(joined);
            return nomem(ctx), NULL;
        }
    PyObject *text = PyUnicode_FromStringAndSize(joined.items ? joined.items : "", (Py_ssize_t)joined.len);
    VFREE(joined);
    if (text == NULL) return ctx->failed = 1, NULL;
    if (types->len == 1) {
        KindEntry entry = {types->items[0], text};
        if (PUSH(ctx->kinds, entry) < 0) {
            Py_DECREF(text);
            return nomem(ctx), NULL;
        }
        Py_INCREF(text); /* one reference stays with the cache */
    }
    return text;
}

typedef VEC(Ordinal) OrdinalVec;
static struct {
    CandVec symbols, refs, apis;
    IntVec handled;
    RunVec runs;
    OrdinalVec ordinals;
    Bytes id, block;
} CHUNK_SCRATCH;

static PyObject *build_chunks(Ctx *ctx, PieceVec *groups, CaptureVec *caps) {
    PyObject *result = PyTuple_New((Py_ssize_t)groups->len);
    IdTable base_ids = {0}, final_ids = {0};
    OrdinalVec ordinals;
    Bytes id, block;
    BORROW(ordinals, CHUNK_SCRATCH.ordinals);
    BORROW(id, CHUNK_SCRATCH.id);
    BORROW(block, CHUNK_SCRATCH.block);
    size_t ci = 0;
    uint32_t previous_end = ctx->body_start;
    Ex ex;
    memset(&ex, 0, sizeof ex);
    ex.ctx = ctx;
    BORROW(ex.symbols, CHUNK_SCRATCH.symbols);
    BORROW(ex.refs, CHUNK_SCRATCH.refs);
    BORROW(ex.apis, CHUNK_SCRATCH.apis);
    BORROW(ex.handled, CHUNK_SCRATCH.handled);
    BORROW(ex.runs, CHUNK_SCRATCH.runs);
    unsigned char *flags = NULL, *mask = NULL, *scan = NULL;
    int *b2c = NULL, *c2b = NULL;
    if (result == NULL) goto fail;
    Py_ssize_t source_len;
    const char *source_utf8 = PyUnicode_AsUTF8AndSize(ctx->source_file, &source_len); /* every id starts with it */
    if (source_utf8 == NULL) goto python_error;
    /* Scratch for the largest possible chunk, reused by every chunk: one
     * block for flags, mask and scan. */
    if (block.cap < 3 * ((size_t)ctx->len + 1)) {
        VFREE(block);
        block.items = malloc(3 * ((size_t)ctx->len + 1));
        if (block.items == NULL) {
            nomem(ctx);
            goto fail;
        }
        block.cap = 3 * ((size_t)ctx->len + 1);
    }
    flags = (unsigned char *)block.items;
    mask = flags + ctx->len + 1;
    scan = mask + ctx->len + 1;
    for (size_t gi = 0; gi < groups->len; gi++) {
        Piece *g = &groups->items[gi];
        ctx->chunk_serial = (int)gi + 1;
        uint32_t sb = line_start(ctx, g->start_line), eb = ctx->ends[g->end_line];
        uint32_t nb = eb > sb ? eb - sb : 0;
        const unsigned char *code = ctx->src + sb;
        int ascii = is_ascii(code, nb);
        memset(flags, 0, nb + 1);
        size_t nchars = nb;
        if (!ascii) {
            if (b2c == NULL) {
                b2c = malloc((ctx->len + 1) * sizeof(int));
                c2b = malloc((ctx->len + 1) * sizeof(int));
                if (b2c == NULL || c2b == NULL) {
                    nomem(ctx);
                    goto fail;
                }
            }
            int k = 0;
            for (uint32_t b = 0; b < nb;) {
                int l = utf8_len(code[b]);
                for (int x = 0; x < l && b + x < nb; x++) b2c[b + x] = k;
                c2b[k++] = (int)b;
                b += l;
            }
            b2c[nb] = k;
            c2b[k] = (int)nb;
            nchars = (size_t)k;
        }
        ex.symbols.len = ex.refs.len = ex.apis.len = ex.handled.len = 0;
        ex.seq = 0;
        int flagged = chunk_facts(ctx, &ex, g, caps, &ci, sb, eb, ascii ? NULL : b2c, flags);
        if (flagged < 0) goto fail;
        /* Code mask (UTF-8) and scan text (one ASCII byte per character). */
        size_t mw = 0, sw = 0;
        const unsigned char *scan_text = scan, *mask_text = mask;
        if (ascii && !flagged) {
            scan_text = mask_text = code;
            mw = sw = nb;
        } else if (ascii) {
            for (uint32_t b = 0; b < nb; b++) {
                unsigned char c = code[b], f = flags[b];
                if (f == 0 || c == '\n' || c == '\r') {
                    mask[b] = scan[b] = c;
                } else {
                    mask[b] = (f & F_MASK) ? ' ' : c;
                    scan[b] = (f & F_DOLLAR) ? '$' : (f & F_MASK) ? ' ' : c;
                }
            }
            mw = sw = nb;
        } else {
            for (uint32_t b = 0; b < nb;) {
                unsigned char c = code[b];
                int l = utf8_len(c);
                if (b + l > nb) l = (int)(nb - b);
                if (c == '\n' || c == '\r') {
                    mask[mw++] = c;
                    scan[sw++] = c;
                } else {
                    if (flags[b] & F_MASK) mask[mw++] = ' ';
                    else {
                        memcpy(mask + mw, code + b, l);
                        mw += l;
                    }
                    if (flags[b] & F_DOLLAR) scan[sw++] = '$';
                    else if (flags[b] & F_MASK) scan[sw++] = ' ';
                    else if (l == 1) scan[sw++] = c;
                    else {
                        ctx->bail = "code outside comments and strings is not ASCII";
                        goto fail;
                    }
                }
                b += l;
            }
        }
        ex.scan = scan_text;
        ex.n = (int)sw;
        ex.code = code;
        ex.code_len = nb;
        ex.c2b = ascii ? NULL : c2b;
        if (extract(&ex) < 0 || ctx->failed) goto fail;

        /* name and id */
        int kind = g->kind;
        id.len = 0;
        if (bytes_add(&id, source_utf8, (size_t)source_len) < 0 || bytes_add(&id, ":", 1) < 0 || bytes_add(&id, KIND_NAMES[kind], strlen(KIND_NAMES[kind])) < 0 ||
            bytes_add(&id, ":", 1) < 0)
            goto memory_error;
        size_t name_start = id.len;
        int depth = ctx->scopes.items[g->scope].depth;
        for (int d = 1; d <= depth; d++) { /* outermost class first */
            int s = g->scope;
            for (int up = depth; up > d; up--) s = ctx->scopes.items[s].parent;
            if (bytes_add(&id, ctx->scopes.items[s].name.s, ctx->scopes.items[s].name.len) < 0) goto memory_error;
            if (bytes_add(&id, ".", 1) < 0) goto memory_error;
        }
        if (kind_ordinal(kind) || g->name.s == NULL) {
            size_t o = 0;
            for (; o < ordinals.len; o++)
                if (ordinals.items[o].scope == g->scope && ordinals.items[o].kind == kind) break;
            if (o == ordinals.len) {
                Ordinal fresh = {g->scope, kind, 0};
                if (PUSH(ordinals, fresh) < 0) goto memory_error;
            }
            char digits[16];
            size_t w = decimal(digits, ++ordinals.items[o].count);
            if (bytes_add(&id, digits, w) < 0) goto memory_error;
        } else if (bytes_add(&id, g->name.s, g->name.len) < 0) {
            goto memory_error;
        }
        size_t name_end = id.len;
        /* A repeated id gets #2, #3... in file order. */
        int seen = idtable_bump(&base_ids, id.items, id.len);
        if (seen < 0) goto memory_error;
        if (seen > 1) {
            char suffix[16];
            suffix[0] = '#';
            size_t w = 1 + decimal(suffix + 1, seen);
            if (bytes_add(&id, suffix, w) < 0) goto memory_error;
        }
        int occurrences = idtable_bump(&final_ids, id.items, id.len);
        if (occurrences < 0) goto memory_error;
        int duplicate = occurrences > 1;
        PyObject *chunk_id = utf8_str(id.items, id.len, "strict");
        if (chunk_id == NULL) goto python_error;

        /* Every object below is a new reference handed to the chunk. */
        PyObject *values[12] = {chunk_id};
        values[1] = PyLong_FromSize_t(gi + 1);
        values[2] = Py_NewRef(S.kind_str[kind]);
        values[3] = node_kind_of(ctx, &g->node_types);
        values[4] = utf8_str(id.items + name_start, name_end - name_start, "strict");
        PyObject *span_values[4] = {PyLong_FromLong(g->start_line + 1), PyLong_FromLong(g->end_line + 1),
                                    PyLong_FromUnsignedLong(sb), PyLong_FromUnsignedLong(eb)};
        values[5] = (span_values[0] && span_values[1] && span_values[2] && span_values[3])
                        ? make_object(S.span_cls, S.span_offsets, span_values, 4)
                        : NULL;
        if (values[5] == NULL)
            for (int i = 0; i < 4; i++) Py_XDECREF(span_values[i]);
        values[6] = ascii ? ascii_str((const char *)code, nb) : PyUnicode_DecodeUTF8((const char *)code, nb, "strict");
        values[7] = unique_tuple(ctx, &ex.symbols);
        values[8] = unique_tuple(ctx, &ex.apis);
        values[9] = unique_tuple(ctx, &ex.refs);
        values[10] = mask_text == code ? Py_XNewRef(values[6])
                     : ascii           ? ascii_str((const char *)mask, mw)
                                       : PyUnicode_DecodeUTF8((const char *)mask, mw, "strict");
        values[11] = kind_header(kind) ? Py_NewRef(S.empty_str) : context_text(ctx, &ex, g);
        int complete = 1;
        for (int i = 0; i < 12; i++)
            if (values[i] == NULL) complete = 0;
        if (!complete) {
            for (int i = 0; i < 12; i++) Py_XDECREF(values[i]);
            goto python_error;
        }
        for (int i = 5; i <= 9; i++) untrack(values[i]);
        PyObject *chunk = make_object(S.chunk_cls, S.chunk_offsets, values, 12);
        if (chunk == NULL) goto python_error;
        untrack(chunk);
        PyTuple_SET_ITEM(result, (Py_ssize_t)gi, chunk);

        /* ASCII code gets an ASCII mask of one byte per byte: mw counts it. */
        size_t mask_chars = mask_text == code ? nchars : ascii ? mw : count_chars(mask_text, mw);
        const char *problem = invariant_problem(ctx, sb, eb, previous_end, nchars, mask_chars);
        if (problem == NULL && duplicate) problem = "duplicate chunk_id";
        if (problem != NULL) {
            PyErr_Format(PyExc_AssertionError, "%U chunk %U: %s", ctx->source_file, chunk_id, problem);
            goto python_error;
        }
        previous_end = eb;
    }
    if (!range_blank(ctx->src, previous_end, ctx->len)) {
        PyErr_Format(PyExc_AssertionError, "%U: non-blank text after the last chunk is in no chunk", ctx->source_file);
        goto python_error;
    }
    goto done;
memory_error:
    nomem(ctx);
    goto fail;
python_error:
    ctx->failed = 1;
fail:
    Py_CLEAR(result);
done:
    GIVE_BACK(block, CHUNK_SCRATCH.block); /* flags, mask and scan */
    free(b2c);
    free(c2b);
    GIVE_BACK(ex.symbols, CHUNK_SCRATCH.symbols);
    GIVE_BACK(ex.refs, CHUNK_SCRATCH.refs);
    GIVE_BACK(ex.apis, CHUNK_SCRATCH.apis);
    GIVE_BACK(ex.handled, CHUNK_SCRATCH.handled);
    GIVE_BACK(ex.runs, CHUNK_SCRATCH.runs);
    GIVE_BACK(ordinals, CHUNK_SCRATCH.ordinals);
    GIVE_BACK(id, CHUNK_SCRATCH.id);
    idtable_free(&base_ids);
    idtable_free(&final_ids);
    return result;
}

/* --------------------------------------------------------------- entry */
static void ctx_free(Ctx *ctx) {
    for (size_t i = 0; i < ctx->pieces.len; i++) piece_free(&ctx->pieces.items[i]);
    VFREE(ctx->pieces);
    for (size_t i = 0; i < ctx->scopes.len; i++) {
        VFREE(ctx->scopes.items[i].members);
        VFREE(ctx->scopes.items[i].visible);
        free(ctx->scopes.items[i].visible_table);
    }
    while (ctx->pool != NULL) {
        struct Block *next = ctx->pool->next;
        free(ctx->pool);
        ctx->pool = next;
    }
    VFREE(ctx->ranges);
    for (size_t i = 0; i < ctx->contexts.len; i++) {
        free(ctx->contexts.items[i].ranges);
        Py_DECREF(ctx->contexts.items[i].text);
    }
    VFREE(ctx->contexts);
    for (size_t i = 0; i < ctx->kinds.len; i++) Py_DECREF(ctx->kinds.items[i].text);
    VFREE(ctx->kinds);
    VFREE(ctx->scopes);
    VFREE(ctx->header_lines);
    free(ctx->starts);
    free(ctx->ends);
    VFREE(ctx->local_types);
}
static void pieces_free(PieceVec *v) {
    for (size_t i = 0; i < v->len; i++) piece_free(&v->items[i]);
    VFREE(*v);
}

/* The chunks of one file (tuple), why it is left to Python (str), or NULL
 * with an exception set. */
static PyObject *chunk_source(PyObject *source_file, const unsigned char *src, Py_ssize_t len, Py_ssize_t body_start) {
    if (len > (Py_ssize_t)UINT32_MAX / 2 || body_start < 0 || body_start > len) {
        PyErr_SetString(PyExc_ValueError, "source too large or body_start out of range");
        return NULL;
    }
    Ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.source_file = source_file;
    ctx.src = src;
    ctx.len = (uint32_t)len;
    ctx.body_start = (uint32_t)body_start;
    PyObject *result = NULL;
    TSTree *tree = NULL;
    PieceVec decls = {0}, groups = {0};
    CaptureVec captures;
    BORROW(captures, CAPTURE_SCRATCH);

    /* Line table as in _Chunker.__init__: starts has one entry past the end.
     * Sized for one line per 32 bytes, grown when a file has shorter lines. */
    {
        size_t capacity = ctx.len / 32 + 16;
        ctx.starts = malloc(sizeof(uint32_t) * (capacity + 1));
        ctx.ends = malloc(sizeof(uint32_t) * capacity);
        if (ctx.starts == NULL || ctx.ends == NULL) { PyErr_NoMemory(); goto out; }
        size_t line = 0;
        uint32_t start = 0;
        for (uint32_t base = 0;; base += 64) {
            uint64_t bits = 0;
            if (base < ctx.len) {
                size_t block = ctx.len - base < 64 ? ctx.len - base : 64;
                bits = newline_bits(ctx.src + base, block);
            }
            for (;;) {
                int at_end = base >= ctx.len && bits == 0;
                if (!bits && !at_end) break;
                uint32_t b = at_end ? ctx.len : base + (uint32_t)__builtin_ctzll(bits);
                if (line + 1 >= capacity) {
                    capacity *= 2;
                    uint32_t *starts = realloc(ctx.starts, sizeof(uint32_t) * (capacity + 1));
                    if (starts == NULL) { PyErr_NoMemory(); goto out; }
                    ctx.starts = starts;
                    uint32_t *ends = realloc(ctx.ends, sizeof(uint32_t) * capacity);
                    if (ends == NULL) { PyErr_NoMemory(); goto out; }
                    ctx.ends = ends;
                }
                ctx.starts[line] = start;
                ctx.ends[line] = (b > start && ctx.src[b - 1] == '\r') ? b - 1 : b;
                line++;
                if (at_end) break;
                start = b + 1;
                bits &= bits - 1;
            }
            if (base >= ctx.len) break;
        }
        ctx.line_count = (int)line;
        ctx.starts[ctx.line_count] = ctx.len + 1;
        if (ctx.ends[0] < ctx.body_start) ctx.ends[0] = ctx.body_start;
    }

    tree = ts_parser_parse_string(S.parser, NULL, (const char *)ctx.src, ctx.len);
    if (tree == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tree-sitter returned no tree");
        goto out;
    }
    TSNode root = ts_tree_root_node(tree);
    if (ts_node_has_error(root) || type_is(root, "ERROR")) {
        ctx.bail = "syntax errors";
        goto out;
    }
    Scope top;
    memset(&top, 0, sizeof top);
    top.parent = -1;
    if (PUSH(ctx.scopes, top) < 0) { nomem(&ctx); goto out; }
    NodeVec children = {0};
    if (children_of(&ctx, root, &children) < 0) { VFREE(children); goto out; }
    /* Pieces are large: size the vector once for the usual count. */
    if (children.len + 16 > ctx.pieces.cap) {
        Piece *items = realloc(ctx.pieces.items, (children.len + 16) * sizeof(Piece));
        if (items == NULL) { VFREE(children); nomem(&ctx); goto out; }
        ctx.pieces.items = items;
        ctx.pieces.cap = children.len + 16;
    }
    int rc = build(&ctx, children.items, children.len, 0);
    VFREE(children);
    if (rc < 0 || ctx.failed) goto out;
    if (normalise(&ctx) < 0 || ctx.failed || ctx.bail) goto out;
    decls.items = malloc((ctx.pieces.len + 1) * sizeof(Piece));
    groups.items = malloc((ctx.pieces.len + 1) * sizeof(Piece));
    if (decls.items == NULL || groups.items == NULL) { nomem(&ctx); goto out; }
    decls.cap = groups.cap = ctx.pieces.len + 1; /* both only shrink the piece count */
    if (attach(&ctx, &decls) < 0 || ctx.failed) goto out;
    if (group(&ctx, &decls, &groups) < 0 || ctx.failed) goto out;
    if (collect_captures(&ctx, tree, &captures) < 0) goto out;
    /* Nothing below reads the tree: free it while it is still in cache. */
    ts_tree_delete(tree);
    tree = NULL;
    result = build_chunks(&ctx, &groups, &captures);
out:
    if (ctx.bail != NULL && !PyErr_Occurred()) {
        Py_CLEAR(result);
        result = PyUnicode_FromString(ctx.bail);
    }
    if (tree != NULL) ts_tree_delete(tree);
    pieces_free(&decls);
    pieces_free(&groups);
    GIVE_BACK(captures, CAPTURE_SCRATCH);
    ctx_free(&ctx);
    if (result == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "native chunker failed");
    return result;
}

static PyObject *gd_chunk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source_file;
    Py_buffer buffer;
    Py_ssize_t body_start;
    if (S.parser == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "godot_rag._gdchunk.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Uy*n:chunk", &source_file, &buffer, &body_start)) return NULL;
    PyObject *result = chunk_source(source_file, buffer.buf, buffer.len, body_start);
    PyBuffer_Release(&buffer);
    return result;
}

/* Whether `s` is well-formed UTF-8 exactly as Python's strict decoder
 * accepts it (Unicode table 3-7: no overlongs, surrogates or code points
 * past U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (!(word & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n) return 0;
            unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
            if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xc0) != 0x80) return 0;
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n) return 0;
            unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
            if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xc0) != 0x80 || (s[i + 3] & 0xc0) != 0x80) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* parse(source_file, source_bytes, sha256) -> ChunkingResult | None.
 * The whole fast path of parse_gdscript for a file within the size limit:
 * None whenever Python must decide (NUL bytes, invalid UTF-8, a blank file,
 * or a file the chunker leaves to Python), so that every status and error
 * message comes from one place. */
static PyObject *gd_parse(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source_file, *sha;
    Py_buffer buffer;
    if (S.parser == NULL || S.result_cls == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "godot_rag._gdchunk.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Uy*U:parse", &source_file, &buffer, &sha)) return NULL;
    const unsigned char *src = buffer.buf;
    size_t len = (size_t)buffer.len;
    PyObject *chunks = NULL;
    if (memchr(src, 0, len) == NULL && valid_utf8(src, len)) {
        size_t body_start = len >= 3 && memcmp(src, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
        if (!range_blank(src, (uint32_t)body_start, (uint32_t)len))
            chunks = chunk_source(source_file, src, buffer.len, (Py_ssize_t)body_start);
    }
    PyBuffer_Release(&buffer);
    if (chunks == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (!PyTuple_Check(chunks)) {
        Py_DECREF(chunks);
        Py_RETURN_NONE;
    }
    PyObject *values[7] = {Py_NewRef(source_file), Py_NewRef(S.source_kind), Py_NewRef(sha), Py_NewRef(S.status_ok),
                           chunks, Py_NewRef(S.empty_tuple), Py_NewRef(S.producer_version)};
    return make_object(S.result_cls, S.result_offsets, values, 7);
}

/* The bare parse through this module's runtime, for the benchmark. */
static PyObject *gd_parse_only(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buffer;
    if (S.parser == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "godot_rag._gdchunk.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*:parse_only", &buffer)) return NULL;
    TSTree *tree = ts_parser_parse_string(S.parser, NULL, buffer.buf, (uint32_t)buffer.len);
    PyBuffer_Release(&buffer);
    if (tree == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tree-sitter returned no tree");
        return NULL;
    }
    int has_error = ts_node_has_error(ts_tree_root_node(tree));
    ts_tree_delete(tree);
    return PyBool_FromLong(has_error);
}

static const char *CHUNK_FIELDS[12] = {"chunk_id", "chunk_order", "chunk_kind", "node_kind", "name", "span",
                                       "code_text", "symbol_candidates", "api_call_candidates",
                                       "reference_candidates", "code_mask", "surrounding_context"};
static const char *SPAN_FIELDS[4] = {"start_line", "end_line", "start_byte", "end_byte"};
static const char *CAPTURE_TYPES[] = {"await_expression", "base_call", "get_node", "string_name",
                                      "comment", "node_path", "string"};

static int check_fields(PyObject *names, const char **expected, int count, const char *what) {
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != count) goto mismatch;
    for (int i = 0; i < count; i++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
        if (name == NULL) return -1;
        if (strcmp(name, expected[i]) != 0) goto mismatch;
    }
    return 0;
mismatch:
    PyErr_Format(PyExc_RuntimeError, "%s fields differ from what the native chunker sets: update native/gdchunk.c", what);
    return -1;
}

/* The instance offsets of a slots dataclass's fields, read from its member
 * descriptors (what object.__setattr__ writes through). */
static int slot_offsets(PyObject *cls, const char **names, int count, Py_ssize_t *offsets) {
    for (int i = 0; i < count; i++) {
        PyObject *descr = PyObject_GetAttrString(cls, names[i]);
        if (descr == NULL) return -1;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
            ok = member->type == T_OBJECT_EX && !(member->flags & READONLY);
            offsets[i] = member->offset;
        }
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_RuntimeError, "%s.%s is not a slot: the model must be a slots dataclass",
                         ((PyTypeObject *)cls)->tp_name, names[i]);
            return -1;
        }
    }
    return 0;
}

static const char *RESULT_FIELDS[7] = {"source_file", "source_kind", "source_sha256", "status", "chunks", "errors",
                                       "producer_version"};

/* configure(language, (Chunk, Span, ChunkingResult), (their field names),
 *           (source_kind, ok status, producer version), (7 word lists)) */
static PyObject *gd_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *chunk_cls, *span_cls, *result_cls, *chunk_names, *span_names, *result_names;
    PyObject *source_kind, *status_ok, *producer_version;
    PyObject *sets[7];
    if (!PyArg_ParseTuple(args, "O(OOO)(OOO)(UUU)(OOOOOOO):configure", &capsule, &chunk_cls, &span_cls, &result_cls,
                          &chunk_names, &span_names, &result_names, &source_kind, &status_ok, &producer_version,
                          &sets[0], &sets[1], &sets[2], &sets[3], &sets[4], &sets[5], &sets[6]))
        return NULL;
    const TSLanguage *language = PyCapsule_GetPointer(capsule, "tree_sitter.Language");
    if (language == NULL) return NULL;
    if (!PyType_Check(chunk_cls) || !PyType_Check(span_cls) || !PyType_Check(result_cls)) {
        PyErr_SetString(PyExc_TypeError, "model classes expected");
        return NULL;
    }
    Py_ssize_t chunk_offsets[12], span_offsets[4], result_offsets[7];
    if (check_fields(chunk_names, CHUNK_FIELDS, 12, "Chunk") < 0 || check_fields(span_names, SPAN_FIELDS, 4, "Span") < 0 ||
        check_fields(result_names, RESULT_FIELDS, 7, "ChunkingResult") < 0 ||
        slot_offsets(chunk_cls, CHUNK_FIELDS, 12, chunk_offsets) < 0 || slot_offsets(span_cls, SPAN_FIELDS, 4, span_offsets) < 0 ||
        slot_offsets(result_cls, RESULT_FIELDS, 7, result_offsets) < 0)
        return NULL;
    for (int i = 0; i < 7; i++)
        if (!PyFrozenSet_Check(sets[i])) {
            PyErr_SetString(PyExc_TypeError, "word lists must be frozensets");
            return NULL;
        }
    TSParser *parser = ts_parser_new();
    if (parser == NULL || !ts_parser_set_language(parser, language)) {
        if (parser) ts_parser_delete(parser);
        PyErr_SetString(PyExc_RuntimeError, "the GDScript grammar is incompatible with the vendored tree-sitter runtime");
        return NULL;
    }
    for (int f = 0; f < FIELD_COUNT; f++) {
        FIELD_IDS[f] = ts_language_field_id_for_name(language, FIELD_NAMES[f], (uint32_t)strlen(FIELD_NAMES[f]));
        if (FIELD_IDS[f] == 0) {
            ts_parser_delete(parser);
            PyErr_Format(PyExc_RuntimeError, "the GDScript grammar has no field %s", FIELD_NAMES[f]);
            return NULL;
        }
    }
    uint32_t count = ts_language_symbol_count(language);
    int8_t *table = malloc(count ? count : 1);
    if (table == NULL) {
        ts_parser_delete(parser);
        return PyErr_NoMemory();
    }
    for (uint32_t symbol = 0; symbol < count; symbol++) {
        table[symbol] = C_NONE;
        if (ts_language_symbol_type(language, (TSSymbol)symbol) != TSSymbolTypeRegular) continue;
        const char *name = ts_language_symbol_name(language, (TSSymbol)symbol);
        if (name == NULL) continue;
        if (strcmp(name, "region_start") == 0 || strcmp(name, "region_end") == 0) table[symbol] = C_MASK;
        for (int k = 0; k < 7; k++)
            if (strcmp(name, CAPTURE_TYPES[k]) == 0) table[symbol] = (int8_t)k;
    }
    WordSet *targets[7] = {&S.singletons, &S.caps_types, &S.stop_methods, &S.known_calls,
                           &S.reference_calls, &S.node_path_calls, &S.node_classes};
    for (int i = 0; i < 7; i++)
        if (wordset_from(targets[i], sets[i]) < 0) {
            ts_parser_delete(parser);
            free(table);
            return NULL;
        }
    if (S.parser) ts_parser_delete(S.parser);
    free(S.capture_of_symbol);
    S.parser = parser;
    S.capture_of_symbol = table;
    S.symbol_count = count;
    memcpy(S.chunk_offsets, chunk_offsets, sizeof chunk_offsets);
    memcpy(S.span_offsets, span_offsets, sizeof span_offsets);
    memcpy(S.result_offsets, result_offsets, sizeof result_offsets);
    Py_XSETREF(S.chunk_cls, Py_NewRef(chunk_cls));
    Py_XSETREF(S.span_cls, Py_NewRef(span_cls));
    Py_XSETREF(S.result_cls, Py_NewRef(result_cls));
    Py_XSETREF(S.source_kind, Py_NewRef(source_kind));
    Py_XSETREF(S.status_ok, Py_NewRef(status_ok));
    Py_XSETREF(S.producer_version, Py_NewRef(producer_version));
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"configure", gd_configure, METH_VARARGS,
     "configure(language, (Chunk, Span, ChunkingResult), (their field names), (source_kind, ok status, "
     "producer version), (singletons, caps_types, stop_methods, known_calls, reference_calls, node_path_calls, "
     "node_classes))"},
    {"chunk", gd_chunk, METH_VARARGS,
     "chunk(source_file, source_bytes, body_start) -> tuple[Chunk, ...] | str (why the file is left to Python)"},
    {"parse", gd_parse, METH_VARARGS,
     "parse(source_file, source_bytes, sha256) -> ChunkingResult | None (None: Python decides)"},
    {"parse_only", gd_parse_only, METH_VARARGS, "parse_only(source_bytes) -> bool (whether the tree has errors)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_gdchunk", "Native GDScript chunker.", -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__gdchunk(void) {
    PyObject *module = PyModule_Create(&MODULE);
    if (module == NULL) return NULL;
    for (int k = 0; k < K_COUNT; k++) {
        S.kind_str[k] = PyUnicode_InternFromString(KIND_NAMES[k]);
        if (S.kind_str[k] == NULL) return NULL;
    }
    ts_set_allocator(PyMem_Malloc, PyMem_Calloc, PyMem_Realloc, PyMem_Free);
    init_char_classes();
    S.empty_tuple = PyTuple_New(0);
    S.empty_str = PyUnicode_FromString("");
    if (S.empty_tuple == NULL || S.empty_str == NULL) return NULL;
    return module;
}
