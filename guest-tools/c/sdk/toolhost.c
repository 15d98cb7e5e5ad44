/*
 * toolhost.c - the hand-written canonical-ABI glue for the
 * `toolhost:tool/tool-provider@0.1.0` world (or, with TOOLHOST_WORLD_0_2
 * defined, the 0.2.0 one: wit/v0.2/tool.wit), plus the helpers declared in
 * toolhost.h.
 *
 * Canonical ABI summary for this world (wasm32: pointers and lengths are i32)
 * ---------------------------------------------------------------------------
 * Layouts (byte offset @, size, alignment):
 *   string              {ptr @0, len @4}                      size 8,  align 4
 *   option<string>      {disc u8 @0, ptr @4, len @8}          size 12, align 4
 *   list<T>             {ptr @0, len @4}                      size 8,  align 4
 *   tool-info           name @0, description @8, input-schema @16,
 *                       output-schema option<string> @24 (disc @24, ptr @28,
 *                       len @32), streaming u8 @36, idempotent u8 @37
 *                                                             size 40, align 4
 *   tool-error          code @0, message @8, details option<string> @16
 *                                                             size 28, align 4
 *   result<string, tool-error>   disc u8 @0, payload @4       size 32, align 4
 *   call-context        call-id @0, conversation-id @8, session-id @20,
 *                       agent-name @32                        size 44, align 4
 *   result<_, string>   disc u8 @0, payload string @4         size 12, align 4
 *
 * A function's results are returned directly only when they flatten to at
 * most one core value; otherwise
 *   - an export returns an i32 pointer to a return area the guest owns (here
 *     a static) and the host later calls the export's `cabi_post_*` function
 *     with that pointer so the guest can free what it returned;
 *   - an import takes one extra trailing i32 parameter: a pointer to a
 *     caller-provided return area that the host fills in.
 * Parameters flatten into at most 16 core values, e.g.
 *   progress(option<f32>, option<string>) -> (i32, f32, i32, i32, i32).
 * Every string or list the host passes into the guest (export parameters,
 * import results) is allocated in guest memory through the exported
 * `cabi_realloc` and is owned by the guest afterwards.
 *
 * Core names: exports are `<interface>#<func>` ("toolhost:tool/tool@0.1.0#call"),
 * post-return functions `cabi_post_<export name>`, imports come from core
 * module "toolhost:tool/host@0.1.0" with the WIT function name.
 *
 * World 0.2.0 changes (layouts checked by the _Static_asserts below):
 *   tool-info           + title option<string> @40, annotations (four
 *                       option<bool>, 2 bytes each) @52, icons list @60
 *                                                             size 68, align 4
 *   icon                src @0, mime-type option<string> @8, sizes list @20
 *                                                             size 28
 *   content             variant: disc u8 @0, payload @4 (the largest case,
 *                       resource-link, is 52 bytes)           size 56
 *   tool-output         value option<string> @0, content list @12   size 20
 *   result<tool-output, tool-error>  disc @0, payload @4      size 32
 *   sample(sampling-request) flattens past 16 values: the request is passed
 *   by pointer, then the return-area pointer.
 */
#include "toolhost.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Canonical ABI types                                                      */
/* ------------------------------------------------------------------------ */

_Static_assert(sizeof(void *) == 4 && sizeof(size_t) == 4,
               "toolhost SDK targets wasm32");

typedef struct abi_str {
    const char *ptr;
    size_t len;
} abi_str;

typedef struct abi_opt_str {
    uint8_t is_some;
    abi_str val;
} abi_opt_str;

#ifdef TOOLHOST_WORLD_0_2
typedef struct abi_opt_bool {
    uint8_t is_some;
    uint8_t val;
} abi_opt_bool;

typedef struct abi_str_list {
    abi_str *ptr;
    size_t len;
} abi_str_list;

typedef struct abi_icon {
    abi_str src;
    abi_opt_str mime_type;
    abi_str_list sizes;
} abi_icon;
#endif

typedef struct abi_tool_info {
    abi_str name;
    abi_str description;
    abi_str input_schema;
    abi_opt_str output_schema;
    uint8_t streaming;
    uint8_t idempotent;
#ifdef TOOLHOST_WORLD_0_2
    abi_opt_str title;
    abi_opt_bool read_only, destructive, idempotent_hint, open_world;
    struct { abi_icon *ptr; size_t len; } icons;
#endif
} abi_tool_info;

typedef struct abi_tool_error {
    abi_str code;
    abi_str message;
    abi_opt_str details;
} abi_tool_error;

#ifdef TOOLHOST_WORLD_0_2
typedef struct abi_bytes {
    const uint8_t *ptr;
    size_t len;
} abi_bytes;

typedef struct abi_media {
    abi_bytes data;
    abi_str mime_type;
} abi_media;

typedef struct abi_resource_link {
    abi_str uri, name;
    abi_opt_str title, description, mime_type;
} abi_resource_link;

typedef struct abi_embedded {
    abi_str uri;
    abi_opt_str mime_type;
    uint8_t is_blob; /* resource-body: text(string) | blob(list<u8>) */
    union {
        abi_str text;
        abi_bytes blob;
    } body;
} abi_embedded;

enum { ABI_TEXT = 0, ABI_IMAGE, ABI_AUDIO, ABI_LINK, ABI_RESOURCE };

typedef struct abi_content {
    uint8_t tag;
    union {
        abi_str text;
        abi_media media;
        abi_resource_link link;
        abi_embedded resource;
    } val;
} abi_content;

typedef struct abi_tool_output {
    abi_opt_str value;
    struct { abi_content *ptr; size_t len; } content;
} abi_tool_output;
#endif

typedef struct abi_call_result {
    uint8_t is_err;
    union {
#ifdef TOOLHOST_WORLD_0_2
        abi_tool_output ok;
#else
        abi_str ok;
#endif
        abi_tool_error err;
    } val;
} abi_call_result;

typedef struct abi_call_context {
    abi_str call_id;
    abi_opt_str conversation_id;
    abi_opt_str session_id;
    abi_opt_str agent_name;
} abi_call_context;

typedef struct abi_result_unit_str {
    uint8_t is_err;
    abi_str err;
} abi_result_unit_str;

typedef struct abi_tool_info_list {
    abi_tool_info *ptr;
    size_t len;
} abi_tool_info_list;

/* The C layouts above must be exactly the canonical ones. */
#define TH_LAYOUT(type, member, off) \
    _Static_assert(offsetof(type, member) == (off), #type "." #member)
TH_LAYOUT(abi_opt_str, val, 4);
_Static_assert(sizeof(abi_opt_str) == 12 && _Alignof(abi_opt_str) == 4, "option<string>");
TH_LAYOUT(abi_tool_info, description, 8);
TH_LAYOUT(abi_tool_info, input_schema, 16);
TH_LAYOUT(abi_tool_info, output_schema, 24);
TH_LAYOUT(abi_tool_info, output_schema.val.ptr, 28);
TH_LAYOUT(abi_tool_info, output_schema.val.len, 32);
TH_LAYOUT(abi_tool_info, streaming, 36);
TH_LAYOUT(abi_tool_info, idempotent, 37);
#ifdef TOOLHOST_WORLD_0_2
TH_LAYOUT(abi_tool_info, title, 40);
TH_LAYOUT(abi_tool_info, read_only, 52);
TH_LAYOUT(abi_tool_info, open_world, 58);
TH_LAYOUT(abi_tool_info, icons, 60);
_Static_assert(sizeof(abi_tool_info) == 68 && _Alignof(abi_tool_info) == 4, "tool-info");
TH_LAYOUT(abi_icon, mime_type, 8);
TH_LAYOUT(abi_icon, sizes, 20);
_Static_assert(sizeof(abi_icon) == 28, "icon");
TH_LAYOUT(abi_embedded, is_blob, 20);
TH_LAYOUT(abi_embedded, body, 24);
_Static_assert(sizeof(abi_resource_link) == 52, "resource-link");
TH_LAYOUT(abi_content, val, 4);
_Static_assert(sizeof(abi_content) == 56, "content");
TH_LAYOUT(abi_tool_output, content, 12);
_Static_assert(sizeof(abi_tool_output) == 20, "tool-output");
#else
_Static_assert(sizeof(abi_tool_info) == 40 && _Alignof(abi_tool_info) == 4, "tool-info");
#endif
TH_LAYOUT(abi_tool_error, message, 8);
TH_LAYOUT(abi_tool_error, details, 16);
_Static_assert(sizeof(abi_tool_error) == 28, "tool-error");
TH_LAYOUT(abi_call_result, val, 4);
_Static_assert(sizeof(abi_call_result) == 32, "result<string, tool-error>");
TH_LAYOUT(abi_call_context, conversation_id, 8);
TH_LAYOUT(abi_call_context, session_id, 20);
TH_LAYOUT(abi_call_context, agent_name, 32);
_Static_assert(sizeof(abi_call_context) == 44, "call-context");
TH_LAYOUT(abi_result_unit_str, err, 4);
_Static_assert(sizeof(abi_result_unit_str) == 12, "result<_, string>");

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/* Out of memory (or a size overflow) cannot be reported through the ABI. */
__attribute__((noreturn)) static void th_oom(void) { __builtin_trap(); }

static void *th_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) th_oom();
    return q;
}

/*
 * The allocator the host uses to place strings and lists in our memory.
 * Zero-sized blocks are never allocated: they get the dummy, aligned pointer
 * `align`, which must therefore never be freed. That is why the SDK frees a
 * host-provided string only when its length is non-zero.
 */
__attribute__((export_name("cabi_realloc")))
void *cabi_realloc(void *old_ptr, size_t old_size, size_t align, size_t new_size) {
    if (old_size == 0) old_ptr = NULL; /* a dummy from a zero-sized request */
    if (new_size == 0) {
        free(old_ptr);
        return (void *)align;
    }
    if (align > 16) th_oom(); /* dlmalloc aligns to 16; the ABI never asks more */
    return th_xrealloc(old_ptr, new_size);
}

/* Free a string the host allocated through cabi_realloc. */
static void th_free_host_str(const char *ptr, size_t len) {
    if (len > 0) free((void *)ptr);
}

/* ------------------------------------------------------------------------ */
/* Strings and buffers                                                      */
/* ------------------------------------------------------------------------ */

th_str th_cstr(const char *s) {
    th_str v = {s ? s : "", s ? strlen(s) : 0};
    return v;
}

th_str th_buf_view(const th_buf *b) {
    th_str v = {b->ptr ? b->ptr : "", b->len};
    return v;
}

void th_buf_reserve(th_buf *b, size_t extra) {
    if (extra > SIZE_MAX - b->len - 1) th_oom();
    size_t need = b->len + extra + 1; /* +1: the trailing NUL */
    if (need <= b->cap) return;
    size_t cap = b->cap < 16 ? 16 : b->cap;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    b->ptr = th_xrealloc(b->ptr, cap);
    b->cap = cap;
    b->ptr[b->len] = '\0';
}

void th_buf_append(th_buf *b, const void *data, size_t len) {
    th_buf_reserve(b, len);
    if (len) memcpy(b->ptr + b->len, data, len);
    b->len += len;
    b->ptr[b->len] = '\0';
}

void th_buf_puts(th_buf *b, const char *s) { th_buf_append(b, s, strlen(s)); }

void th_buf_putc(th_buf *b, char c) { th_buf_append(b, &c, 1); }

void th_buf_put_int(th_buf *b, int64_t v) {
    char tmp[24];
    size_t i = sizeof tmp;
    /* Work on the magnitude as unsigned so INT64_MIN is fine. */
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0) tmp[--i] = '-';
    th_buf_append(b, tmp + i, sizeof tmp - i);
}

void th_buf_json_string(th_buf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    th_buf_reserve(b, len + 2);
    th_buf_putc(b, '"');
    size_t run = 0; /* start of the pending run of bytes needing no escape */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        th_buf_append(b, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default: /* other control characters: \u00XX */
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            n = 6;
        }
        th_buf_append(b, esc, n);
    }
    th_buf_append(b, s + run, len - run);
    th_buf_putc(b, '"');
}

void th_buf_json_cstr_or_null(th_buf *b, const char *s) {
    if (s) th_buf_json_string(b, s, strlen(s));
    else th_buf_puts(b, "null");
}

void th_buf_clear(th_buf *b) {
    b->len = 0;
    if (b->ptr) b->ptr[0] = '\0';
}

void th_buf_free(th_buf *b) {
    if (b->cap) free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

/* Take ownership of a string the host placed in our memory. */
static void th_buf_adopt(th_buf *b, abi_str s) {
    th_buf_free(b);
    if (s.len == 0) return; /* the pointer may be a dummy: nothing to own */
    b->ptr = (char *)s.ptr;
    b->len = b->cap = s.len;
    th_buf_reserve(b, 0); /* room for the trailing NUL */
}

static abi_str th_abi_buf(const th_buf *b) {
    abi_str s = {b->ptr, b->len};
    return s;
}

static abi_str th_abi_cstr(const char *s) {
    abi_str v = {s ? s : "", s ? strlen(s) : 0};
    return v;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static void th_error_free(th_error *e) {
    th_buf_free(&e->code);
    th_buf_free(&e->message);
    th_buf_free(&e->details);
    e->has_details = false;
}

int th_fail(th_error *err, const char *code, const char *message,
            const char *details_json) {
    th_buf_clear(&err->code);
    th_buf_clear(&err->message);
    th_buf_clear(&err->details);
    th_buf_puts(&err->code, code ? code : "TOOL_ERROR");
    th_buf_puts(&err->message, message ? message : "");
    err->has_details = details_json != NULL;
    if (details_json) th_buf_puts(&err->details, details_json);
    return TH_ERR;
}

/* ------------------------------------------------------------------------ */
/* Exports: interface toolhost:tool/tool                                    */
/* ------------------------------------------------------------------------ */

#ifdef TOOLHOST_WORLD_0_2
#define TH_WORLD_VERSION "0.2.0"
#else
#define TH_WORLD_VERSION "0.1.0"
#endif
#define TH_TOOL_IFACE "toolhost:tool/tool@" TH_WORLD_VERSION

#ifdef TOOLHOST_WORLD_0_2
/* Blocks owned until a post-return function frees them all. */
typedef struct th_pool {
    void **ptr;
    size_t len, cap;
} th_pool;

static void *th_pool_alloc(th_pool *pool, size_t size) {
    if (pool->len == pool->cap) {
        size_t cap = pool->cap ? pool->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof(void *)) th_oom();
        pool->ptr = th_xrealloc(pool->ptr, cap * sizeof(void *));
        pool->cap = cap;
    }
    void *p = th_xrealloc(NULL, size);
    pool->ptr[pool->len++] = p;
    return p;
}

static void th_pool_free(th_pool *pool) {
    for (size_t i = 0; i < pool->len; i++) free(pool->ptr[i]);
    pool->len = 0;
}

static th_pool th_describe_pool;

static abi_opt_str th_abi_opt_cstr(const char *s) {
    abi_opt_str o = {s != NULL, {s ? s : NULL, s ? strlen(s) : 0}};
    return o;
}

static abi_opt_bool th_abi_hint(th_hint h) {
    abi_opt_bool o = {h != TH_HINT_UNSET, h == TH_HINT_TRUE};
    return o;
}

static void th_describe_v2(abi_tool_info *info, const th_tool *t) {
    info->title = th_abi_opt_cstr(t->title);
    info->read_only = th_abi_hint(t->annotations.read_only);
    info->destructive = th_abi_hint(t->annotations.destructive);
    info->idempotent_hint = th_abi_hint(t->annotations.idempotent);
    info->open_world = th_abi_hint(t->annotations.open_world);
    size_t n = t->icons ? t->icon_count : 0;
    if (n > SIZE_MAX / sizeof(abi_icon)) th_oom();
    abi_icon *icons = n ? th_pool_alloc(&th_describe_pool, n * sizeof *icons) : NULL;
    for (size_t i = 0; i < n; i++) {
        const th_icon *src = &t->icons[i];
        size_t sizes = 0;
        while (src->sizes && src->sizes[sizes]) sizes++;
        abi_str *list = sizes ? th_pool_alloc(&th_describe_pool, sizes * sizeof *list) : NULL;
        for (size_t j = 0; j < sizes; j++) list[j] = th_abi_cstr(src->sizes[j]);
        icons[i].src = th_abi_cstr(src->src);
        icons[i].mime_type = th_abi_opt_cstr(src->mime_type);
        icons[i].sizes.ptr = list;
        icons[i].sizes.len = sizes;
    }
    info->icons.ptr = icons;
    info->icons.len = n;
}
#endif

static abi_tool_info_list th_describe_ret;

/* describe: func() -> list<tool-info>   core: () -> i32 (return area) */
__attribute__((export_name(TH_TOOL_IFACE "#describe")))
abi_tool_info_list *th__export_describe(void) {
    size_t n = th__tool_count;
    if (n > SIZE_MAX / sizeof(abi_tool_info)) th_oom();
    abi_tool_info *list = n ? th_xrealloc(NULL, n * sizeof *list) : NULL;
    for (size_t i = 0; i < n; i++) {
        const th_tool *t = &th__tools[i];
        abi_tool_info *info = &list[i];
        /* The strings point into the static tool table; only the list
           itself is allocated. */
        info->name = th_abi_cstr(t->name);
        info->description = th_abi_cstr(t->description);
        info->input_schema = th_abi_cstr(t->input_schema ? t->input_schema : "{}");
        info->output_schema.is_some = t->output_schema != NULL;
        info->output_schema.val = t->output_schema ? th_abi_cstr(t->output_schema)
                                                   : (abi_str){NULL, 0};
        info->streaming = t->streaming;
        info->idempotent = t->idempotent;
#ifdef TOOLHOST_WORLD_0_2
        th_describe_v2(info, t);
#endif
    }
    th_describe_ret.ptr = list;
    th_describe_ret.len = n;
    return &th_describe_ret;
}

__attribute__((export_name("cabi_post_" TH_TOOL_IFACE "#describe")))
void th__post_describe(abi_tool_info_list *ret) {
#ifdef TOOLHOST_WORLD_0_2
    th_pool_free(&th_describe_pool);
#endif
    free(ret->ptr);
    ret->ptr = NULL;
    ret->len = 0;
}

/* What the current (or last) call returned; freed by the post-return. */
static abi_call_result th_call_ret;
static th_buf th_call_out;
static th_error th_call_err;
#ifdef TOOLHOST_WORLD_0_2
/* The current call's content items, and the copies they point into. */
static struct { abi_content *ptr; size_t len, cap; } th_call_content;
static th_pool th_call_pool;

static void th_call_content_free(void) {
    th_pool_free(&th_call_pool);
    th_call_content.len = 0;
}
#endif

static const th_tool *th_find_tool(const char *name, size_t len) {
    for (size_t i = 0; i < th__tool_count; i++) {
        const char *n = th__tools[i].name;
        if (n && strlen(n) == len && memcmp(n, name, len) == 0) return &th__tools[i];
    }
    return NULL;
}

/*
 * call: func(name: string, args: string) -> result<string, tool-error>
 * core: (name_ptr, name_len, args_ptr, args_len) -> i32 (return area)
 */
__attribute__((export_name(TH_TOOL_IFACE "#call")))
abi_call_result *th__export_call(const char *name_ptr, size_t name_len,
                                 const char *args_ptr, size_t args_len) {
    th_str args = {args_ptr, args_len};
    th_buf *out = &th_call_out;
    th_error *err = &th_call_err;
    th_buf_free(out);
    th_error_free(err);
#ifdef TOOLHOST_WORLD_0_2
    th_call_content_free();
#endif

    int rc;
    const th_tool *tool = th_find_tool(name_ptr, name_len);
    if (!tool || !tool->call) {
        th_fail(err, "UNKNOWN_TOOL", NULL, NULL);
        th_buf_puts(&err->message, "this component has no tool named ");
        th_buf_json_string(&err->message, name_ptr, name_len);
        rc = TH_ERR;
    } else if (!th_json_is_object(args)) {
        rc = th_fail(err, "INVALID_ARGS", "args must be a JSON object", NULL);
    } else {
        rc = tool->call(args, out, err);
    }
    /* The parameters were allocated by the host through cabi_realloc and
       are ours; handlers must not keep pointers into them. */
    th_free_host_str(name_ptr, name_len);
    th_free_host_str(args_ptr, args_len);

    abi_call_result *ret = &th_call_ret;
    if (rc == TH_OK) {
#ifdef TOOLHOST_WORLD_0_2
        /* Content items without a value: no structured content. */
        bool has_value = out->len > 0 || th_call_content.len == 0;
        if (out->len == 0 && has_value) th_buf_puts(out, "null");
        ret->is_err = 0;
        ret->val.ok.value.is_some = has_value;
        ret->val.ok.value.val = has_value ? th_abi_buf(out) : (abi_str){NULL, 0};
        ret->val.ok.content.ptr = th_call_content.ptr;
        ret->val.ok.content.len = th_call_content.len;
#else
        if (out->len == 0) th_buf_puts(out, "null"); /* always return JSON */
        ret->is_err = 0;
        ret->val.ok = th_abi_buf(out);
#endif
    } else {
#ifdef TOOLHOST_WORLD_0_2
        th_call_content_free();
#endif
        if (err->code.len == 0) th_buf_puts(&err->code, "TOOL_ERROR");
        ret->is_err = 1;
        ret->val.err.code = th_abi_buf(&err->code);
        ret->val.err.message = th_abi_buf(&err->message);
        ret->val.err.details.is_some = err->has_details;
        ret->val.err.details.val =
            err->has_details ? th_abi_buf(&err->details) : (abi_str){NULL, 0};
    }
    return ret;
}

__attribute__((export_name("cabi_post_" TH_TOOL_IFACE "#call")))
void th__post_call(abi_call_result *ret) {
    (void)ret; /* it points at th_call_ret, whose strings we own below */
    th_buf_free(&th_call_out);
    th_error_free(&th_call_err);
#ifdef TOOLHOST_WORLD_0_2
    th_call_content_free();
#endif
}

/* ------------------------------------------------------------------------ */
/* Imports: interface toolhost:tool/host                                    */
/* ------------------------------------------------------------------------ */

#define TH_IMPORT(name) \
    __attribute__((import_module("toolhost:tool/host@" TH_WORLD_VERSION), import_name(name)))

/* context: func() -> call-context            core: (retptr) */
TH_IMPORT("context") extern void th__import_context(abi_call_context *ret);
/* progress: func(pct: option<f32>, message: option<string>)
   core: (pct_is_some i32, pct f32, msg_is_some i32, msg_ptr, msg_len) */
TH_IMPORT("progress") extern void th__import_progress(int32_t has_pct, float pct,
                                                      int32_t has_msg,
                                                      const char *msg, size_t msg_len);
/* delta: func(data: string)                  core: (ptr, len) */
TH_IMPORT("delta") extern void th__import_delta(const char *ptr, size_t len);
/* log: func(level: log-level, message: string)  core: (level, ptr, len) */
TH_IMPORT("log") extern void th__import_log(int32_t level, const char *ptr, size_t len);
/* get-state: func(key: string) -> option<string>  core: (ptr, len, retptr) */
TH_IMPORT("get-state") extern void th__import_get_state(const char *key, size_t key_len,
                                                        abi_opt_str *ret);
/* set-state: func(key: string, value: string) -> result<_, string>
   core: (key_ptr, key_len, value_ptr, value_len, retptr) */
TH_IMPORT("set-state") extern void th__import_set_state(const char *key, size_t key_len,
                                                        const char *value, size_t value_len,
                                                        abi_result_unit_str *ret);
/* cancelled: func() -> bool                  core: () -> i32 */
TH_IMPORT("cancelled") extern int32_t th__import_cancelled(void);

static void th_adopt_opt(th_buf *b, bool *has, const abi_opt_str *o) {
    *has = o->is_some != 0;
    if (*has) th_buf_adopt(b, o->val);
    else th_buf_free(b);
}

void th_context(th_call_context *out) {
    abi_call_context c;
    memset(&c, 0, sizeof c);
    th__import_context(&c);
    memset(out, 0, sizeof *out);
    th_buf_adopt(&out->call_id, c.call_id);
    th_adopt_opt(&out->conversation_id, &out->has_conversation_id, &c.conversation_id);
    th_adopt_opt(&out->session_id, &out->has_session_id, &c.session_id);
    th_adopt_opt(&out->agent_name, &out->has_agent_name, &c.agent_name);
}

void th_context_free(th_call_context *ctx) {
    th_buf_free(&ctx->call_id);
    th_buf_free(&ctx->conversation_id);
    th_buf_free(&ctx->session_id);
    th_buf_free(&ctx->agent_name);
    ctx->has_conversation_id = ctx->has_session_id = ctx->has_agent_name = false;
}

void th_progress(float pct, const char *message) {
    bool has_pct = pct >= 0.0f; /* also false for NaN */
    th__import_progress(has_pct, has_pct ? pct : 0.0f, message != NULL, message,
                        message ? strlen(message) : 0);
}

void th_delta(const char *json, size_t len) { th__import_delta(json, len); }

void th_log(th_log_level level, const char *message) {
    if ((unsigned)level > TH_LOG_ERROR) level = TH_LOG_ERROR;
    th__import_log((int32_t)level, message ? message : "", message ? strlen(message) : 0);
}

bool th_get_state(const char *key, th_buf *out) {
    abi_opt_str r;
    memset(&r, 0, sizeof r);
    th_str k = th_cstr(key);
    th__import_get_state(k.ptr, k.len, &r);
    if (!r.is_some) {
        th_buf_free(out);
        return false;
    }
    th_buf_adopt(out, r.val);
    return true;
}

bool th_set_state(const char *key, const char *value, th_buf *error_out) {
    abi_result_unit_str r;
    memset(&r, 0, sizeof r);
    th_str k = th_cstr(key), v = th_cstr(value);
    th__import_set_state(k.ptr, k.len, v.ptr, v.len, &r);
    if (!r.is_err) return true;
    if (error_out) th_buf_adopt(error_out, r.err);
    else th_free_host_str(r.err.ptr, r.err.len);
    return false;
}

bool th_cancelled(void) { return th__import_cancelled() != 0; }

#ifdef TOOLHOST_WORLD_0_2
#include "toolhost_v0_2.inc"
#endif

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

/* Deeper nesting than this is rejected (JSON.parse copes with a few thousand). */
#define TH_JSON_MAX_DEPTH 1024

typedef struct th_cursor {
    const char *p;
    const char *end;
} th_cursor;

static void js_ws(th_cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int js_hex(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Skip a string literal starting at '"'; false when malformed. */
static bool js_string(th_cursor *c) {
    if (c->p >= c->end || *c->p != '"') return false;
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') return true;
        if (ch < 0x20) return false;
        if (ch != '\\') continue;
        if (c->p >= c->end) return false;
        char e = *c->p++;
        if (e == 'u') {
            if (c->end - c->p < 4) return false;
            for (int i = 0; i < 4; i++)
                if (js_hex(c->p[i]) < 0) return false;
            c->p += 4;
        } else if (!strchr("\"\\/bfnrt", e) || e == '\0') {
            return false;
        }
    }
    return false;
}

static bool js_digits(th_cursor *c) {
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    return c->p > start;
}

static bool js_number(th_cursor *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p < c->end && *c->p == '0') c->p++;
    else if (!js_digits(c)) return false;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (!js_digits(c)) return false;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (!js_digits(c)) return false;
    }
    return true;
}

static bool js_literal(th_cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

/* The type a value starting at the cursor would have (without checking it). */
static th_json_type js_peek_type(const th_cursor *c) {
    if (c->p >= c->end) return TH_JSON_NONE;
    switch (*c->p) {
    case '{': return TH_JSON_OBJECT;
    case '[': return TH_JSON_ARRAY;
    case '"': return TH_JSON_STRING;
    case 't': case 'f': return TH_JSON_BOOL;
    case 'n': return TH_JSON_NULL;
    default:
        return (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) ? TH_JSON_NUMBER
                                                                 : TH_JSON_NONE;
    }
}

/*
 * Skip `"name"` `:` of an object member, with the whitespace after; when
 * `name` is not NULL it receives the name's literal (with its quotes).
 */
static bool js_member_name(th_cursor *c, th_str *name) {
    const char *start = c->p;
    if (!js_string(c)) return false;
    if (name) {
        name->ptr = start;
        name->len = (size_t)(c->p - start);
    }
    js_ws(c);
    if (c->p >= c->end || *c->p != ':') return false;
    c->p++;
    js_ws(c);
    return true;
}

/*
 * Skip one value (no surrounding whitespace); its type, or NONE if invalid.
 * Iterative, with the open containers' closing brackets on a small stack, so
 * nesting costs no C stack beyond that array.
 */
static th_json_type js_value(th_cursor *c) {
    char open[TH_JSON_MAX_DEPTH]; /* '}' or ']' per open container */
    size_t depth = 0;
    th_json_type first = js_peek_type(c);
    for (;;) {
        /* Here a value must start. */
        bool ok = true;
        switch (js_peek_type(c)) {
        case TH_JSON_OBJECT:
        case TH_JSON_ARRAY: {
            char close = *c->p == '{' ? '}' : ']';
            c->p++;
            js_ws(c);
            if (c->p < c->end && *c->p == close) { /* empty: a complete value */
                c->p++;
                break;
            }
            if (depth == TH_JSON_MAX_DEPTH) return TH_JSON_NONE;
            open[depth++] = close;
            if (close == '}' && !js_member_name(c, NULL)) return TH_JSON_NONE;
            continue; /* on to the first element */
        }
        case TH_JSON_STRING: ok = js_string(c); break;
        case TH_JSON_NUMBER: ok = js_number(c); break;
        case TH_JSON_NULL: ok = js_literal(c, "null"); break;
        case TH_JSON_BOOL: ok = js_literal(c, *c->p == 't' ? "true" : "false"); break;
        default: ok = false;
        }
        if (!ok) return TH_JSON_NONE;
        /* A value ended: close containers, or step to the next element. */
        for (;;) {
            if (depth == 0) return first;
            js_ws(c);
            if (c->p >= c->end) return TH_JSON_NONE;
            char ch = *c->p++;
            if (ch == open[depth - 1]) {
                depth--;
                continue;
            }
            if (ch != ',') return TH_JSON_NONE;
            js_ws(c);
            if (open[depth - 1] == '}' && !js_member_name(c, NULL)) return TH_JSON_NONE;
            break;
        }
    }
}

/* The type of the single value making up `json`, or NONE if invalid. */
static th_json_type js_document(th_str json) {
    th_cursor c = {json.ptr, json.ptr + json.len};
    if (!json.ptr) return TH_JSON_NONE;
    js_ws(&c);
    th_json_type t = js_value(&c);
    js_ws(&c);
    return c.p == c.end ? t : TH_JSON_NONE;
}

bool th_json_valid(th_str json) { return js_document(json) != TH_JSON_NONE; }

bool th_json_is_object(th_str json) { return js_document(json) == TH_JSON_OBJECT; }

static void js_put_utf8(th_buf *out, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    th_buf_append(out, u, n);
}

static uint32_t js_hex4(const char *p) {
    return (uint32_t)(js_hex(p[0]) << 12 | js_hex(p[1]) << 8 | js_hex(p[2]) << 4 | js_hex(p[3]));
}

bool th_json_decode_string(th_str lit, th_buf *out) {
    th_cursor c = {lit.ptr, lit.ptr + lit.len};
    if (!lit.ptr || !js_string(&c) || c.p != c.end) return false; /* validates */
    const char *p = lit.ptr + 1, *end = lit.ptr + lit.len - 1; /* inside quotes */
    th_buf_reserve(out, (size_t)(end - p));
    while (p < end) {
        const char *run = p;
        while (p < end && *p != '\\') p++;
        th_buf_append(out, run, (size_t)(p - run)); /* unescaped bytes as they are */
        if (p >= end) break;
        char e = p[1];
        p += 2;
        switch (e) {
        case 'b': th_buf_putc(out, '\b'); break;
        case 'f': th_buf_putc(out, '\f'); break;
        case 'n': th_buf_putc(out, '\n'); break;
        case 'r': th_buf_putc(out, '\r'); break;
        case 't': th_buf_putc(out, '\t'); break;
        case 'u': {
            uint32_t cp = js_hex4(p);
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
                p[1] == 'u') {
                uint32_t lo = js_hex4(p + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) { /* a surrogate pair */
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* lone surrogate */
            js_put_utf8(out, cp);
            break;
        }
        default: th_buf_putc(out, e); /* " \ / */
        }
    }
    return true;
}

/* Whether the string literal `lit` (with quotes) decodes to `key`. */
static bool js_key_equals(th_str lit, const char *key, size_t key_len) {
    const char *inner = lit.ptr + 1;
    size_t inner_len = lit.len - 2;
    if (!memchr(inner, '\\', inner_len)) /* the common case: no escapes */
        return inner_len == key_len && memcmp(inner, key, key_len) == 0;
    th_buf tmp = TH_BUF_INIT;
    th_json_decode_string(lit, &tmp);
    bool eq = tmp.len == key_len && memcmp(tmp.ptr, key, key_len) == 0;
    th_buf_free(&tmp);
    return eq;
}

/*
 * Walk the members of the top-level object. For each member, when `key` is
 * not NULL, remember the last one whose name equals it; when `allowed` is not
 * NULL, fail on a name outside it. Returns false when `json` is not one valid
 * JSON object.
 */
static bool js_members(th_str json, const char *key, th_str *found, th_json_type *found_type,
                       const char *const *allowed) {
    th_cursor c = {json.ptr, json.ptr + json.len};
    size_t key_len = key ? strlen(key) : 0;
    if (!json.ptr) return false;
    js_ws(&c);
    if (c.p >= c.end || *c.p != '{') return false;
    c.p++;
    js_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) {
            th_str name;
            if (!js_member_name(&c, &name)) return false;
            const char *vstart = c.p;
            th_json_type t = js_value(&c);
            if (t == TH_JSON_NONE) return false;
            if (key && js_key_equals(name, key, key_len)) {
                found->ptr = vstart;
                found->len = (size_t)(c.p - vstart);
                *found_type = t;
            }
            if (allowed) {
                bool ok = false;
                for (const char *const *a = allowed; *a && !ok; a++)
                    ok = js_key_equals(name, *a, strlen(*a));
                if (!ok) return false;
            }
            js_ws(&c);
            if (c.p >= c.end) return false;
            char ch = *c.p++;
            if (ch == '}') break;
            if (ch != ',') return false;
            js_ws(&c);
        }
    }
    js_ws(&c);
    return c.p == c.end;
}

th_json_type th_json_get(th_str json, const char *key, th_str *value) {
    th_str found = {NULL, 0};
    th_json_type t = TH_JSON_NONE;
    if (!key || !js_members(json, key, &found, &t, NULL)) return TH_JSON_NONE;
    if (value) *value = found;
    return t;
}

/* Look up `key`, mapping the outcome onto a status for the typed getters. */
static th_json_status js_lookup(th_str json, const char *key, th_json_type want, th_str *v) {
    th_json_type t = TH_JSON_NONE;
    v->ptr = NULL;
    v->len = 0;
    if (!key || !js_members(json, key, v, &t, NULL)) return TH_JSON_INVALID;
    if (t == TH_JSON_NONE) return TH_JSON_MISSING;
    return t == want ? TH_JSON_OK : TH_JSON_WRONG_TYPE;
}

th_json_status th_json_get_string(th_str json, const char *key, th_buf *out) {
    th_str v;
    th_json_status s = js_lookup(json, key, TH_JSON_STRING, &v);
    if (s != TH_JSON_OK) return s;
    th_buf_clear(out);
    return th_json_decode_string(v, out) ? TH_JSON_OK : TH_JSON_INVALID;
}

th_json_status th_json_get_int(th_str json, const char *key, int64_t *out) {
    th_str v;
    th_json_status s = js_lookup(json, key, TH_JSON_NUMBER, &v);
    if (s != TH_JSON_OK) return s;
    size_t i = 0;
    bool neg = v.ptr[0] == '-';
    if (neg) i++;
    uint64_t m = 0;
    const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < v.len; i++) {
        char ch = v.ptr[i];
        if (ch < '0' || ch > '9') return TH_JSON_WRONG_TYPE; /* fraction/exponent */
        unsigned d = (unsigned)(ch - '0');
        if (m > (limit - d) / 10) return TH_JSON_WRONG_TYPE; /* out of range */
        m = m * 10 + d;
    }
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return TH_JSON_OK;
}

th_json_status th_json_get_bool(th_str json, const char *key, bool *out) {
    th_str v;
    th_json_status s = js_lookup(json, key, TH_JSON_BOOL, &v);
    if (s == TH_JSON_OK) *out = v.ptr[0] == 't';
    return s;
}

bool th_json_only_keys(th_str json, const char *const *allowed) {
    static const char *const none[] = {NULL};
    return js_members(json, NULL, NULL, NULL, allowed ? allowed : none);
}
